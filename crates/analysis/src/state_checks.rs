//! State checks as a run's results (issue 27): how many checks of each kind
//! the run made, the violations it found with their evidence, and what its
//! checkpoints cost. The engine fills a [`StateChecks`] from its sessions'
//! models; it travels in the run's record into the summary, where any
//! violation fails the verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most violations a record keeps with their evidence
/// (`state-violations.csv`); the counts go on past it.
pub const VIOLATIONS_KEPT: usize = 1000;
/// The violations the summary quotes (`state_checks.examples`).
pub const EXAMPLES_IN_SUMMARY: usize = 10;

/// A run's state checks: on, their interval, the counts and the evidence.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StateChecks {
    /// The checks ran (`run --check-state`).
    pub enabled: bool,
    /// Seconds between two checkpoints.
    pub interval_s: f64,
    /// Checks made, all kinds.
    pub checks: u64,
    /// Violations found, all kinds.
    pub violations: u64,
    /// Per check kind (`uid_order`, `checkpoint_flags` ...): checks and
    /// violations. Every kind the checker knows is listed, so a kind never
    /// checked shows as 0 checks.
    pub by_kind: BTreeMap<String, KindCount>,
    /// Checkpoints held (one per mailbox group compared).
    pub checkpoints: u64,
    /// Checkpoints a group gave up on because a session did not come to it
    /// in time (it was inside a long action, or reconnecting).
    #[serde(default)]
    pub checkpoints_missed: u64,
    /// The sessions' waits at checkpoints, summed, in seconds. The schedule
    /// of a waiting user stands still meanwhile, so none of it is counted
    /// in any latency.
    pub checkpoint_pause_s: f64,
    /// Sessions whose model stopped (the stream broke the IMAP limits): they
    /// were not checked from there on.
    pub sessions_lost_track: u64,
    /// Data responses the checker could not decode (skipped, not checked).
    #[serde(default)]
    pub undecodable: u64,
    /// The first violations, at most [`VIOLATIONS_KEPT`] in a record and
    /// [`EXAMPLES_IN_SUMMARY`] in a summary.
    #[serde(default)]
    pub examples: Vec<StateViolation>,
    /// The raw logs of the sessions that had a violation (their last
    /// `C:`/`S:` lines around it, bounded, credentials and literals left
    /// out), by client: written as `state-violations/<client>.log`, never in
    /// a summary.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub session_logs: BTreeMap<String, String>,
}

/// The most raw logs of sessions with a violation a record keeps.
pub const SESSION_LOGS_KEPT: usize = 20;

/// Checks and violations of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCount {
    /// Checks made.
    pub checks: u64,
    /// Violations found.
    pub violations: u64,
}

/// One violation with its evidence: which session was told what.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StateViolation {
    /// The check's kind (`uid_changed`).
    pub check: String,
    /// The session (`user3#1`: user 3's first session).
    pub client: String,
    /// The mailbox.
    pub mailbox: String,
    /// The message's sequence number in that session, when one applies.
    pub seq: Option<u32>,
    /// The message's UID, when known.
    pub uid: Option<u32>,
    /// What an earlier answer, or another session, implies.
    pub expected: String,
    /// What the server said instead.
    pub seen: String,
    /// When it was found, seconds since the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
}

/// The file name of `client`'s raw log in a run directory, under
/// `state-violations/`: the client id with anything but letters, digits,
/// `@`, `.` and `-` made `_` (`user3@bench.test#1` gives
/// `user3@bench.test_1.log`).
pub fn session_log_file(client: &str) -> String {
    let name: String = client
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '@' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.log", name.trim_start_matches('.'))
}

impl std::fmt::Display for StateViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let number = |n: Option<u32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        write!(
            f,
            "{}: client {}, mailbox {:?}, seq {}, UID {}: expected {}, seen {}",
            self.check,
            self.client,
            self.mailbox,
            number(self.seq),
            number(self.uid),
            self.expected,
            self.seen
        )
    }
}

impl StateChecks {
    /// The shards' state checks added up (`peakhour merge`): counts and
    /// pauses summed, violations kept in shard order up to
    /// [`VIOLATIONS_KEPT`]; `None` when no shard had them on.
    pub fn merge<'a>(shards: impl Iterator<Item = &'a Option<StateChecks>>) -> Option<StateChecks> {
        let mut merged: Option<StateChecks> = None;
        for shard in shards.flatten() {
            let Some(all) = merged.as_mut() else {
                merged = Some(shard.clone());
                continue;
            };
            all.checks += shard.checks;
            all.violations += shard.violations;
            for (kind, count) in &shard.by_kind {
                let sum = all.by_kind.entry(kind.clone()).or_default();
                sum.checks += count.checks;
                sum.violations += count.violations;
            }
            all.checkpoints += shard.checkpoints;
            all.checkpoints_missed += shard.checkpoints_missed;
            all.checkpoint_pause_s += shard.checkpoint_pause_s;
            all.sessions_lost_track += shard.sessions_lost_track;
            all.undecodable += shard.undecodable;
            let room = VIOLATIONS_KEPT.saturating_sub(all.examples.len());
            all.examples
                .extend(shard.examples.iter().take(room).cloned());
            for (client, log) in &shard.session_logs {
                if all.session_logs.len() < SESSION_LOGS_KEPT {
                    all.session_logs.insert(client.clone(), log.clone());
                }
            }
        }
        merged
    }

    /// The copy a summary carries: the counts, the first
    /// [`EXAMPLES_IN_SUMMARY`] violations and the first of every other kind
    /// found (so that each kind is shown with its evidence), no raw logs.
    pub fn for_summary(&self) -> StateChecks {
        let mut copy = self.clone();
        copy.session_logs.clear();
        copy.examples.truncate(EXAMPLES_IN_SUMMARY);
        for (_, _, first) in self.violated_kinds() {
            if let Some(first) = first
                && !copy.examples.iter().any(|e| e.check == first.check)
            {
                copy.examples.push(first.clone());
            }
        }
        copy
    }

    /// Every kind with a violation: its name, its counts and its first
    /// violation kept (`None` past the kept ones), in name order.
    pub fn violated_kinds(&self) -> Vec<(&str, KindCount, Option<&StateViolation>)> {
        self.by_kind
            .iter()
            .filter(|(_, count)| count.violations > 0)
            .map(|(kind, count)| {
                let first = self.examples.iter().find(|e| &e.check == kind);
                (kind.as_str(), *count, first)
            })
            .collect()
    }

    /// One line for the terminal and the report: `state checks: 12,345
    /// checks, no violation; 4 checkpoints (0.8 s paused)` or the count of
    /// violations and the first one.
    pub fn line(&self) -> String {
        if !self.enabled {
            return "state checks: off".to_owned();
        }
        let checkpoints = format!(
            "{} checkpoint{} ({:.1} s paused{})",
            self.checkpoints,
            if self.checkpoints == 1 { "" } else { "s" },
            self.checkpoint_pause_s,
            if self.checkpoints_missed > 0 {
                format!(", {} missed", self.checkpoints_missed)
            } else {
                String::new()
            }
        );
        match self.examples.first() {
            None if self.violations == 0 => {
                format!(
                    "state checks: {} checks, no violation; {checkpoints}",
                    self.checks
                )
            }
            first => format!(
                "state checks: {} checks, {} VIOLATION{}; {checkpoints}; first: {}",
                self.checks,
                self.violations,
                if self.violations == 1 { "" } else { "S" },
                first.map_or_else(|| "(not kept)".to_owned(), ToString::to_string)
            ),
        }
    }

    /// Why the verdict fails, when a violation was found: the count and the
    /// first one named.
    pub fn failure(&self) -> Option<String> {
        (self.violations > 0).then(|| {
            let first = self
                .examples
                .first()
                .map_or_else(String::new, |v| format!("; first: {v}"));
            format!(
                "{} state-check violation{} (the server contradicted what it told a session; \
                 see state-violations.csv){first}",
                self.violations,
                if self.violations == 1 { "" } else { "s" }
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_item_2_shards_state_checks_add_up_in_a_merge() {
        let shard = |checks, violations| {
            let mut s = StateChecks {
                enabled: true,
                checks,
                violations,
                checkpoints: 1,
                ..StateChecks::default()
            };
            s.by_kind
                .insert("uid_order".into(), KindCount { checks, violations });
            s.examples
                .extend((0..violations).map(|_| StateViolation::default()));
            Some(s)
        };
        let shards = [shard(10, 0), None, shard(5, 2)];
        let merged = StateChecks::merge(shards.iter()).expect("two shards had them");
        assert_eq!((merged.checks, merged.violations), (15, 2));
        assert_eq!(merged.by_kind["uid_order"].checks, 15);
        assert_eq!((merged.checkpoints, merged.examples.len()), (2, 2));
        assert!(StateChecks::merge([None, None].iter()).is_none());
    }

    #[test]
    fn a_violation_is_named_in_the_line_and_the_failure() {
        let mut checks = StateChecks {
            enabled: true,
            checks: 40,
            checkpoints: 2,
            checkpoint_pause_s: 0.25,
            ..StateChecks::default()
        };
        assert_eq!(
            checks.line(),
            "state checks: 40 checks, no violation; 2 checkpoints (0.2 s paused)"
        );
        assert_eq!(checks.failure(), None);
        checks.violations = 1;
        checks.examples.push(StateViolation {
            check: "uid_changed".into(),
            client: "user1#1".into(),
            mailbox: "INBOX".into(),
            seq: Some(1),
            uid: Some(9),
            expected: "UID 1".into(),
            seen: "UID 9".into(),
            at_s: Some(3.5),
        });
        let failure = checks.failure().expect("a violation fails");
        assert!(
            failure.contains(
                "uid_changed: client user1#1, mailbox \"INBOX\", seq 1, UID 9: expected UID 1, seen UID 9"
            ),
            "{failure}"
        );
        assert!(checks.line().contains("1 VIOLATION;"), "{}", checks.line());
    }
}
