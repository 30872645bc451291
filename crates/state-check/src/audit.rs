//! The audit after a run, as Stalwart's stress tests end theirs: every
//! message in exactly one mailbox, the one the sessions last moved it to,
//! and nothing left behind after the clean-up.
//!
//! Input is what a JMAP `Email/get` with the `mailboxIds` property answered
//! (its arguments: `list` and `notFound`), for every id of the account (an
//! `Email/query` without a filter, every page) and every id a session
//! expects; and each session's [`JmapExpectations`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::jmap::JmapExpectations;
use crate::violation::{CheckCounts, CheckKind, Violation};

/// What an audit found, and how many checks it made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditOutcome {
    /// Every violation, in the order of the message ids.
    pub violations: Vec<Violation>,
    /// Checks made, by kind.
    pub checks: CheckCounts,
}

/// The mailboxes each listed message is in (`mailboxIds` set to true).
fn listed(found: &Value) -> BTreeMap<String, Vec<String>> {
    let mut messages = BTreeMap::new();
    for email in found
        .get("list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = email.get("id").and_then(Value::as_str) else {
            continue;
        };
        let mailboxes = email
            .get("mailboxIds")
            .and_then(Value::as_object)
            .map(|ids| {
                ids.iter()
                    .filter(|(_, on)| on.as_bool() == Some(true))
                    .map(|(id, _)| id.clone())
                    .collect()
            })
            .unwrap_or_default();
        messages.insert(id.to_owned(), mailboxes);
    }
    messages
}

fn violation(kind: CheckKind, client: &str, id: &str, expected: String, seen: String) -> Violation {
    Violation {
        kind,
        client: client.to_owned(),
        mailbox: format!("Email {id}"),
        seq: None,
        uid: None,
        expected,
        seen,
    }
}

fn where_seen(mailboxes: &[String]) -> String {
    match mailboxes {
        [] => "in no mailbox".to_owned(),
        [one] => format!("in mailbox {one}"),
        many => format!("in {} mailboxes: {}", many.len(), many.join(", ")),
    }
}

/// Audits the account `account` after a run: `sessions` are the
/// expectations of every session that used it (client id, expectations);
/// `found` the arguments of the `Email/get` answer described above.
///
/// A message more than one session moved or destroyed is not checked:
/// without a clock the audit cannot tell which session's change came last,
/// and two patches that each moved it leave it in both targets.
pub fn audit(account: &str, sessions: &[(&str, &JmapExpectations)], found: &Value) -> AuditOutcome {
    let messages = listed(found);
    let mut outcome = AuditOutcome::default();
    // id -> the sessions that placed or destroyed it.
    let mut placed: BTreeMap<&str, Vec<(&str, Option<&str>)>> = BTreeMap::new();
    for (client, expected) in sessions {
        for (id, mailbox) in &expected.locations {
            placed
                .entry(id)
                .or_default()
                .push((client, Some(mailbox.as_str())));
        }
        for id in &expected.destroyed {
            placed.entry(id).or_default().push((client, None));
        }
    }
    for (id, mailboxes) in &messages {
        // Two sessions that each moved the message with a patch
        // (`mailboxIds/from: null, mailboxIds/to: true`) leave it in both
        // targets, as RFC 8621 section 4.6 says a patch does: not a bug.
        if placed.get(id.as_str()).is_some_and(|by| by.len() > 1) {
            continue;
        }
        // In several mailboxes before a session placed it: a move patch
        // leaves it in the others (`JmapExpectations::in_several`).
        if sessions.iter().any(|(_, e)| e.in_several.contains(id)) {
            continue;
        }
        outcome.checks.count(CheckKind::AuditMailboxCount);
        if mailboxes.len() != 1 {
            outcome.violations.push(violation(
                CheckKind::AuditMailboxCount,
                account,
                id,
                "in exactly one mailbox".to_owned(),
                where_seen(mailboxes),
            ));
        }
    }
    for (id, by) in placed {
        let [(client, wanted)] = by.as_slice() else {
            continue;
        };
        match (wanted, messages.get(id)) {
            (Some(mailbox), Some(mailboxes)) => {
                outcome.checks.count(CheckKind::AuditMissing);
                outcome.checks.count(CheckKind::AuditWrongMailbox);
                if !mailboxes.iter().any(|m| m == mailbox) {
                    outcome.violations.push(violation(
                        CheckKind::AuditWrongMailbox,
                        client,
                        id,
                        format!("in mailbox {mailbox} (where the session last put it)"),
                        where_seen(mailboxes),
                    ));
                }
            }
            (Some(mailbox), None) => {
                outcome.checks.count(CheckKind::AuditMissing);
                outcome.violations.push(violation(
                    CheckKind::AuditMissing,
                    client,
                    id,
                    format!("in mailbox {mailbox} (never destroyed)"),
                    "not found".to_owned(),
                ));
            }
            (None, Some(mailboxes)) => {
                outcome.checks.count(CheckKind::AuditLeftBehind);
                outcome.violations.push(violation(
                    CheckKind::AuditLeftBehind,
                    client,
                    id,
                    "gone (the session destroyed it)".to_owned(),
                    where_seen(mailboxes),
                ));
            }
            (None, None) => outcome.checks.count(CheckKind::AuditLeftBehind),
        }
    }
    outcome
}

/// After the clean-up: every message `found` still lists (an `Email/get`
/// of every id an unfiltered `Email/query` returns) is left behind.
pub fn audit_cleanup(account: &str, found: &Value) -> AuditOutcome {
    let mut outcome = AuditOutcome::default();
    outcome.checks.count(CheckKind::AuditLeftBehind);
    for (id, mailboxes) in listed(found) {
        outcome.violations.push(violation(
            CheckKind::AuditLeftBehind,
            account,
            &id,
            "nothing left after the clean-up".to_owned(),
            where_seen(&mailboxes),
        ));
    }
    outcome
}
