//! A violation's evidence beyond its values (issue 27 item 5): the raw log
//! of the session around it. Every IMAP session keeps its last lines
//! (peakhour-state-check's `RawLog`, about 3 KiB); a session with a
//! violation hands them to the run, which keeps them for at most
//! [`SESSION_LOGS_KEPT`] sessions, each at most [`SESSION_LOG_BYTES`], for
//! `state-violations/<client>.log`. Sessions without a violation leave
//! nothing behind.

use std::collections::{BTreeMap, BTreeSet};

use peakhour_analysis::SESSION_LOGS_KEPT;

/// Text kept of one session's raw log at most, over all its violations.
pub(crate) const SESSION_LOG_BYTES: usize = 64 * 1024;

/// The raw logs the run keeps, and the sessions asked for theirs.
#[derive(Debug, Default)]
pub(super) struct SessionLogs {
    logs: BTreeMap<String, String>,
    /// Sessions whose log is wanted, with the lines to mark it with (a
    /// checkpoint's violations, which the session's own log has not seen).
    wanted: BTreeMap<String, Vec<String>>,
    /// Sessions told of a violation but not kept (past the bound).
    refused: BTreeSet<String>,
}

impl SessionLogs {
    /// `client`'s log is wanted, marked with `mark` if given.
    pub(super) fn want(&mut self, client: &str, mark: Option<String>) {
        let room = self.logs.contains_key(client)
            || self.logs.len() + self.wanted.len() < SESSION_LOGS_KEPT;
        if !room {
            self.refused.insert(client.to_owned());
            return;
        }
        self.wanted
            .entry(client.to_owned())
            .or_default()
            .extend(mark);
    }

    /// Whether `client`'s log is wanted (then it is no longer), with the
    /// lines to mark it with.
    pub(super) fn take_wanted(&mut self, client: &str) -> Option<Vec<String>> {
        self.wanted.remove(client)
    }

    /// Keeps `text`, the last lines of `client`, after what it kept before.
    pub(super) fn keep(&mut self, client: &str, text: &str) {
        let log = self.logs.entry(client.to_owned()).or_default();
        let separator = if log.is_empty() { "" } else { "...\n" };
        let room = SESSION_LOG_BYTES.saturating_sub(log.len() + separator.len());
        if room == 0 {
            return;
        }
        log.push_str(separator);
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        log.push_str(&text[..end]);
    }

    /// The logs kept, by client.
    pub(super) fn logs(&self) -> BTreeMap<String, String> {
        self.logs.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_item_5_only_so_many_sessions_logs_are_kept() {
        let mut logs = SessionLogs::default();
        for n in 0..SESSION_LOGS_KEPT + 5 {
            let client = format!("user{n}#1");
            logs.want(&client, None);
            if let Some(marks) = logs.take_wanted(&client) {
                assert!(marks.is_empty());
                logs.keep(&client, "C: A1 NOOP\n");
            }
        }
        assert_eq!(logs.logs().len(), SESSION_LOGS_KEPT);
        // A session already kept may add to its log, up to its bound.
        logs.want("user0#1", Some("!! checkpoint_uid".into()));
        assert_eq!(logs.take_wanted("user0#1").unwrap(), ["!! checkpoint_uid"]);
        logs.keep("user0#1", &"x".repeat(2 * SESSION_LOG_BYTES));
        assert!(logs.logs()["user0#1"].len() <= SESSION_LOG_BYTES);
    }
}
