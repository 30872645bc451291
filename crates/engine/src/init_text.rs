//! What `peakhour init` tells a person: the announcement, the progress
//! bar's position, and the closing line. Words and numbers only; the binary
//! draws them.

use std::fmt;
use std::sync::atomic::Ordering;

use peakhour_workload::Plan;

use crate::init::{InitReport, Progress, Via};

impl fmt::Display for Via {
    /// `LMTP` or `IMAP APPEND`, as the announcement names the way in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Via::Lmtp => "LMTP",
            Via::ImapAppend => "IMAP APPEND",
            Via::Clone => "IMAP APPEND for the first user, cloned on disk for the others",
        })
    }
}

impl Via {
    /// The way `--via` names (`append` or `lmtp`); `None` for another name.
    pub fn from_flag(name: &str) -> Option<Via> {
        match name {
            "lmtp" => Some(Via::Lmtp),
            "append" => Some(Via::ImapAppend),
            "clone" => Some(Via::Clone),
            _ => None,
        }
    }
}

/// The messages every user of `plan` starts with, over all its folders.
pub fn messages_per_user(plan: &Plan) -> u64 {
    plan.folders().iter().map(|f| u64::from(f.messages)).sum()
}

/// The line that opens an init: how many mailboxes, of what, and how.
pub fn init_announcement(plan: &Plan, via: Via) -> String {
    format!(
        "initializing {} mailboxes for {} ({} folders, {} messages each) via {via}",
        plan.users(),
        plan.name(),
        plan.folders().len(),
        messages_per_user(plan),
    )
}

impl Progress {
    /// Messages done so far out of `users × per_user`: those added, and
    /// those the finished users had already (so the bar ends full on a
    /// re-run that adds nothing).
    pub fn messages_done(&self, per_user: u64) -> u64 {
        let added = self.added.load(Ordering::Relaxed);
        let to_add = self.to_add.load(Ordering::Relaxed);
        let finished = self.users_done.load(Ordering::Relaxed) * per_user;
        added + finished.saturating_sub(to_add.min(finished))
    }
}

impl fmt::Display for InitReport {
    /// `init done: ...` with the counts and the rate, then the calendars'
    /// line when calendars were written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "init done: {} users, {} messages wanted, {} already there, {} added ({:.1} MB) in {:.1} s = {:.0} messages/s",
            self.users,
            self.wanted,
            self.already_there,
            self.added,
            self.bytes as f64 / 1e6,
            self.elapsed.as_secs_f64(),
            self.messages_per_second()
        )?;
        if let Some(cloned) = &self.cloned {
            write!(f, "\n{cloned}")?;
        }
        if let Some(calendars) = &self.calendars {
            write!(f, "\n{calendars}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_bar_counts_messages_already_there_for_users_that_are_done() {
        let progress = Progress::default();
        // Two users of 10 messages done, 5 of them added, 15 already there.
        progress.users_done.store(2, Ordering::Relaxed);
        progress.to_add.store(5, Ordering::Relaxed);
        progress.added.store(5, Ordering::Relaxed);
        assert_eq!(progress.messages_done(10), 20);
        // A re-run that adds nothing ends full too.
        let rerun = Progress::default();
        rerun.users_done.store(3, Ordering::Relaxed);
        assert_eq!(rerun.messages_done(10), 30);
        // Before anyone is done, only what was added counts.
        let early = Progress::default();
        early.to_add.store(40, Ordering::Relaxed);
        early.added.store(7, Ordering::Relaxed);
        assert_eq!(early.messages_done(10), 7);
    }

    #[test]
    fn the_closing_line_gives_counts_size_time_and_rate() {
        let report = InitReport {
            users: 4,
            wanted: 200,
            already_there: 50,
            added: 150,
            bytes: 2_500_000,
            elapsed: Duration::from_secs(3),
            calendars: None,
            cloned: None,
        };
        assert_eq!(
            report.to_string(),
            "init done: 4 users, 200 messages wanted, 50 already there, 150 added (2.5 MB) in 3.0 s = 50 messages/s"
        );
    }

    #[test]
    fn via_names_read_as_the_flag_and_print_as_the_protocol() {
        assert_eq!(Via::from_flag("lmtp"), Some(Via::Lmtp));
        assert_eq!(Via::from_flag("append"), Some(Via::ImapAppend));
        assert_eq!(Via::from_flag("smtp"), None);
        assert_eq!(Via::ImapAppend.to_string(), "IMAP APPEND");
    }

    #[test]
    fn the_announcement_counts_every_folders_messages() {
        let profile = peakhour_workload::builtin("mmb-medium")
            .expect("built in")
            .profile()
            .expect("parses");
        let overrides = peakhour_workload::Overrides {
            users: Some(3),
            ..Default::default()
        };
        let plan = Plan::resolve(&profile, &overrides).expect("plan");
        let per_user = messages_per_user(&plan);
        assert!(per_user > 0);
        let text = init_announcement(&plan, Via::Lmtp);
        assert!(
            text.starts_with(&format!("initializing 3 mailboxes for {} (", plan.name())),
            "{text}"
        );
        assert!(
            text.ends_with(&format!("{per_user} messages each) via LMTP")),
            "{text}"
        );
    }
}
