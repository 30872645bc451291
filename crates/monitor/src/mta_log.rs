//! The MTA's own delivery times, from Postfix's log: each final delivery
//! logs `status=sent` with `delay=` (seconds from Postfix's receipt of the
//! message to the end of its hand-over, e.g. to LMTP). Beside peakhour's
//! end-to-end latency (which also holds the submission and the IMAP
//! server's notice to the recipient's client) it shows what the MTA took.
//!
//! A run reads only what was appended during it: [`LogMark::here`] notes the
//! log's length before the load, [`LogMark::delays_since`] reads from there.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::MonitorError;

/// Most bytes read from the log after the mark: a day's run at a few hundred
/// messages per second logs far less; past this the rest is left unread.
const MAX_READ_BYTES: u64 = 256 * 1024 * 1024;

/// A place in a log file, to read what was written after it.
#[derive(Debug, Clone)]
pub struct LogMark {
    path: PathBuf,
    offset: u64,
}

impl LogMark {
    /// The log's current end (0 when it does not exist yet).
    pub fn here(path: &Path) -> Self {
        let offset = std::fs::metadata(path).map_or(0, |m| m.len());
        Self {
            path: path.to_owned(),
            offset,
        }
    }

    /// The log read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `delay=` of every `status=sent` line written since the mark, in
    /// milliseconds. A log that shrank (rotated) is read from its start.
    pub fn delays_since(&self) -> Result<Vec<f64>, MonitorError> {
        let read = |e| MonitorError::read(&self.path, e);
        let mut file = std::fs::File::open(&self.path).map_err(read)?;
        let len = file.metadata().map_err(read)?.len();
        let from = if len < self.offset { 0 } else { self.offset };
        file.seek(SeekFrom::Start(from)).map_err(read)?;
        let mut bytes = Vec::new();
        file.take(MAX_READ_BYTES)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        Ok(postfix_delivery_delays(&String::from_utf8_lossy(&bytes)))
    }
}

/// The `delay=` of each `status=sent` line of Postfix log text, in ms.
pub fn postfix_delivery_delays(log: &str) -> Vec<f64> {
    log.lines()
        .filter(|line| line.contains(" status=sent "))
        .filter_map(|line| {
            let rest = &line[line.find(" delay=")? + " delay=".len()..];
            let seconds: f64 = rest.split(',').next()?.trim().parse().ok()?;
            (seconds.is_finite() && seconds >= 0.0).then_some(seconds * 1000.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const LOG: &str = "\
Nov 23 02:20:47 mx peakhour-lab/postfix/lmtp[2327]: B612998C1E4: to=<user3@bench.test>, relay=127.0.0.1[127.0.0.1]:31024, delay=0.02, delays=0.01/0/0/0.01, dsn=2.0.0, status=sent (250 2.0.0 <user3@bench.test> Saved)
Nov 23 02:20:47 mx peakhour-lab/postfix/qmgr[2320]: B612998C1E4: removed
Nov 23 02:20:49 mx postfix/smtp[1]: AB23: to=<a@b.test>, relay=none, delay=31, delays=0/0/30/0, dsn=4.4.1, status=deferred (connect refused)
Nov 23 02:20:52 mx peakhour-lab/postfix/lmtp[2327]: 5139098C637: to=<user2@bench.test>, relay=127.0.0.1[127.0.0.1]:31024, delay=1.5, delays=0/0/0/1.5, dsn=2.0.0, status=sent (250 2.0.0 Saved)
";

    #[test]
    fn issue_12_only_sent_lines_count_in_milliseconds() {
        assert_eq!(postfix_delivery_delays(LOG), [20.0, 1500.0]);
    }

    #[test]
    fn issue_12_a_mark_reads_only_what_came_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("postfix.log");
        let (before, after) = LOG.split_at(LOG.find("Nov 23 02:20:49").unwrap());
        std::fs::write(&path, before).unwrap();
        let mark = LogMark::here(&path);
        std::fs::write(&path, LOG).unwrap();
        assert_eq!(mark.delays_since().unwrap(), [1500.0]);
        assert!(after.contains("1.5"));
        // Rotated (shorter than the mark): read from the start.
        std::fs::write(&path, &LOG[..100]).unwrap();
        assert!(mark.delays_since().unwrap().is_empty());
    }
}
