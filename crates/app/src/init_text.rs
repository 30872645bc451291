//! What `peakhour init` tells a person: the announcement and the closing
//! line ([`InitDone`]). Words and numbers only; the binary draws them. The
//! engine's [`InitReport`] holds the counts, this words them.

use std::fmt;

use peakhour_engine::init::{CloneSummary, InitReport, Via};
use peakhour_workload::Plan;

/// `LMTP` or `IMAP APPEND`, as the announcement names the way in.
pub fn via_name(via: Via) -> &'static str {
    match via {
        Via::Lmtp => "LMTP",
        Via::ImapAppend => "IMAP APPEND",
        Via::Clone => "IMAP APPEND for the first user, cloned on disk for the others",
    }
}

/// The messages every user of `plan` starts with, over all its folders.
pub fn messages_per_user(plan: &Plan) -> u64 {
    plan.folders().iter().map(|f| u64::from(f.messages)).sum()
}

/// The line that opens an init: how many mailboxes, of what, and how.
pub fn init_announcement(plan: &Plan, via: Via) -> String {
    format!(
        "initializing {} mailboxes for {} ({} folders, {} messages each) via {}",
        plan.users(),
        plan.name(),
        plan.folders().len(),
        messages_per_user(plan),
        via_name(via),
    )
}

/// The closing line of an init: `init done: ...` with the counts and the
/// rate, then the clone's line and the calendars' line when there were any.
#[derive(Debug, Clone, Copy)]
pub struct InitDone<'a>(pub &'a InitReport);

impl fmt::Display for InitDone<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self.0;
        write!(
            f,
            "init done: {} users, {} messages wanted, {} already there, {} added ({:.1} MB) in {:.1} s = {:.0} messages/s",
            report.users,
            report.wanted,
            report.already_there,
            report.added,
            report.bytes as f64 / 1e6,
            report.elapsed.as_secs_f64(),
            report.messages_per_second()
        )?;
        if let Some(cloned) = &report.cloned {
            write!(f, "\n{}", CloneDone(cloned))?;
        }
        if let Some(calendars) = &report.calendars {
            write!(f, "\n{calendars}")?;
        }
        Ok(())
    }
}

/// What the clone on disk did, on one line.
struct CloneDone<'a>(&'a CloneSummary);

impl fmt::Display for CloneDone<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summary = self.0;
        if summary.source.is_empty() {
            f.write_str("nothing to clone on disk (every user holds mail)")?;
        } else {
            write!(
                f,
                "cloned {}'s mailbox on disk: {} users ({} files, {:.1} MB) in {:.1} s = {:.0} users/s",
                summary.source,
                summary.cloned,
                summary.files,
                summary.bytes as f64 / 1e6,
                summary.seconds,
                summary.users_per_second(),
            )?;
        }
        write!(
            f,
            "; {} already cloned, {} checked over IMAP, {} half-done clones redone",
            summary.already_cloned, summary.completed_over_imap, summary.redone,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_bar_counts_messages_already_there_for_users_that_are_done() {
        use peakhour_engine::init::Progress;
        use std::sync::atomic::Ordering;
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
            InitDone(&report).to_string(),
            "init done: 4 users, 200 messages wanted, 50 already there, 150 added (2.5 MB) in 3.0 s = 50 messages/s"
        );
    }

    #[test]
    fn via_names_read_as_the_flag_and_print_as_the_protocol() {
        assert_eq!(Via::from_flag("lmtp"), Some(Via::Lmtp));
        assert_eq!(Via::from_flag("append"), Some(Via::ImapAppend));
        assert_eq!(Via::from_flag("smtp"), None);
        assert_eq!(via_name(Via::ImapAppend), "IMAP APPEND");
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
