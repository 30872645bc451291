//! What a run learnt about the server itself, beside the timings: what it
//! offers (IMAP capabilities after login, SMTP EHLO keywords ...), one
//! example of each kind of error with the server's own words, and the MTA's
//! own delivery times where they could be read.
//!
//! The record keeps these in [`ServerRecord`]; the summary turns the
//! examples into [`ErrorGroup`]s (counted over the whole run, every phase)
//! and says when logon failures look like a limit on connections per client
//! address ([`ConnectionLimit`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{Phase, RunRecord};
use crate::redact::Redactor;

/// Longest example text kept: enough for a command, an object, a login and
/// a server's reply line.
pub const ERROR_EXAMPLE_MAX_CHARS: usize = 400;

/// What the run learnt about the server (in `record.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// What the server offers, by protocol: `imap` (capabilities after
    /// login), `smtp` (EHLO keywords, after STARTTLS when it was used),
    /// `pop3` (CAPA), `caldav` (the DAV classes of OPTIONS). Upper-cased
    /// as the server sent them; empty when nothing was asked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// The first error of each action and kind, as the user would read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_examples: Vec<ErrorExample>,
    /// The MTA's own delivery times over the run, where they could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mta_delivery: Option<MtaDelivery>,
}

/// One error as it happened: which command, on what, as whom, and what the
/// server said, each once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorExample {
    /// The action (`read`, `send`), or `logon`, `session`, `reconcile`.
    pub action: String,
    /// The error kind, as counted (`imap:no`, `smtp:reply:550`).
    pub kind: String,
    /// What happened, e.g. `LOGIN as alice: LOGIN refused: NO [AUTHENTICATIONFAILED] Login failed.`
    pub example: String,
}

impl ErrorExample {
    /// An example, the run's passwords taken out by `redactor` (a server
    /// may quote the command it refused, issue 26), then cut to
    /// [`ERROR_EXAMPLE_MAX_CHARS`] and freed of control characters (it goes
    /// into CSV cells and terminal lines). Redacting first means no cut can
    /// leave half a password behind.
    pub fn new(
        action: impl Into<String>,
        kind: impl Into<String>,
        example: &str,
        redactor: &Redactor,
    ) -> Self {
        let example = redactor
            .redact(example)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(ERROR_EXAMPLE_MAX_CHARS)
            .collect::<String>()
            .trim()
            .to_owned();
        Self {
            action: action.into(),
            kind: kind.into(),
            example,
        }
    }
}

/// The MTA's own delivery times, from its log: from the MTA's receipt of
/// the message to the final hand-over (Postfix's `delay=`), without the
/// recipient's client noticing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtaDelivery {
    /// Where the figures come from, e.g. `Postfix log (delay=), /lab/postfix/postfix.log`.
    pub source: String,
    /// Deliveries logged during the run.
    pub deliveries: u64,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile (nearest rank), ms.
    pub p95_ms: Option<f64>,
    /// Longest, ms.
    pub max_ms: Option<f64>,
}

impl MtaDelivery {
    /// The figures of `delays_ms` (one per delivery), nearest-rank.
    pub fn of(source: impl Into<String>, delays_ms: &[f64]) -> Self {
        let mut sorted: Vec<f64> = delays_ms
            .iter()
            .copied()
            .filter(|d| d.is_finite())
            .collect();
        sorted.sort_by(f64::total_cmp);
        let rank = |q: f64| -> Option<f64> {
            let n = sorted.len();
            (n > 0).then(|| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
        };
        Self {
            source: source.into(),
            deliveries: sorted.len() as u64,
            p50_ms: rank(0.50),
            p95_ms: rank(0.95),
            max_ms: sorted.last().copied(),
        }
    }
}

/// Errors of one action and kind over the whole run, with an example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// The action, or `logon`, `session`, `reconcile`.
    pub action: String,
    /// The error kind.
    pub kind: String,
    /// How many, every phase.
    pub count: u64,
    /// The first one as it happened; `None` when the error carried no
    /// more than its kind (a timeout).
    pub example: Option<String>,
}

/// Logon failures that look like a limit on connections per client
/// address: users failed to log on (or lost their sessions) while the
/// number logged on stayed below the users asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionLimit {
    /// Users asked for.
    pub users: u32,
    /// The most users logged on at once, any phase.
    pub max_logged_on: u32,
    /// Logon and session errors (and actions of users never logged on).
    pub logon_errors: u64,
    /// For people: what it looks like and what to do.
    pub note: String,
}

/// Errors grouped by action and kind over every phase, each with its
/// example, most frequent first.
pub fn error_groups(record: &RunRecord) -> Vec<ErrorGroup> {
    let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for interval in &record.intervals {
        for (action, a) in &interval.actions {
            for (kind, n) in a.errors.iter().filter(|(_, n)| **n > 0) {
                *counts.entry((action.clone(), kind.clone())).or_default() += n;
            }
        }
    }
    let mut groups: Vec<ErrorGroup> = counts
        .into_iter()
        .map(|((action, kind), count)| {
            let example = example_for(record, &action, &kind);
            ErrorGroup {
                action,
                kind,
                count,
                example,
            }
        })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    groups
}

/// The recorded example of `action` and `kind`.
pub fn example_for(record: &RunRecord, action: &str, kind: &str) -> Option<String> {
    record
        .server
        .error_examples
        .iter()
        .find(|e| e.action == action && e.kind == kind)
        .map(|e| e.example.clone())
}

/// Error kinds of a user that could not log on or lost its session.
const LOGON_KINDS: &[&str] = &[
    "imap:closed",
    "imap:transport",
    "not-logged-on",
    "no-session",
];

/// A [`ConnectionLimit`] when logon-type errors happened and the number of
/// users logged on never reached the users asked for.
pub fn connection_limit(record: &RunRecord) -> Option<ConnectionLimit> {
    let users = record.meta.users;
    let max_logged_on = record
        .intervals
        .iter()
        .filter(|i| i.phase != Phase::Drain)
        .map(|i| i.users_logged_on)
        .max()
        .unwrap_or(0);
    let logon_errors: u64 = record
        .intervals
        .iter()
        .flat_map(|i| &i.actions)
        .flat_map(|(action, a)| {
            a.errors.iter().filter(move |(kind, _)| {
                action == "logon"
                    || action == "session"
                    || LOGON_KINDS.iter().any(|k| kind.starts_with(k))
            })
        })
        .map(|(_, n)| n)
        .sum();
    if logon_errors == 0 || max_logged_on >= users || max_logged_on == 0 {
        return pop3_connection_limit(record, users, max_logged_on);
    }
    let note = format!(
        "at most {max_logged_on} of {users} users were logged on at once, and {logon_errors} \
         logons or sessions failed: this looks like a limit of about {max_logged_on} connections \
         per client address (every simulated user connects from the same one; Dovecot's \
         mail_max_userip_connections, Courier's MAXPERIP, Cyrus's maxlogins_per_host). Raise it \
         for the test or run at most {max_logged_on} users (docs/servers.md, \"Connection limits\")"
    );
    Some(ConnectionLimit {
        users,
        max_logged_on,
        logon_errors,
        note,
    })
}

/// The POP3 form of [`connection_limit`]: POP3 users hold no session, so
/// the sign is connections the server closed before answering (a server at
/// its per-address limit may close them without a word, issue 26).
fn pop3_connection_limit(
    record: &RunRecord,
    users: u32,
    max_logged_on: u32,
) -> Option<ConnectionLimit> {
    let closed: u64 = record
        .intervals
        .iter()
        .flat_map(|i| i.actions.values())
        .filter_map(|a| a.errors.get("pop3:closed"))
        .sum();
    if closed == 0 {
        return None;
    }
    let note = format!(
        "the POP3 server closed {closed} connections without an answer: this looks like a limit of \
         connections per client address (every simulated user connects from the same one; \
         Dovecot's mail_max_userip_connections or its pop3 services' process_limit, Courier's \
         MAXPERIP, 4 by default). Raise it for the test or run fewer users at once \
         (docs/servers.md, \"Connection limits\")"
    );
    Some(ConnectionLimit {
        users,
        max_logged_on,
        logon_errors: closed,
        note,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn mta_delivery_is_nearest_rank() {
        let d = MtaDelivery::of("log", &[30.0, 10.0, 20.0, f64::NAN]);
        assert_eq!(d.deliveries, 3);
        assert_eq!(d.p50_ms, Some(20.0));
        assert_eq!(d.p95_ms, Some(30.0));
        assert_eq!(d.max_ms, Some(30.0));
        assert_eq!(MtaDelivery::of("log", &[]).p95_ms, None);
    }

    #[test]
    fn examples_lose_control_characters_and_length() {
        let e = ErrorExample::new(
            "read",
            "imap:no",
            &format!("a\r\nb{}", "x".repeat(500)),
            &Redactor::default(),
        );
        assert!(e.example.starts_with("a  b"));
        assert_eq!(e.example.chars().count(), ERROR_EXAMPLE_MAX_CHARS);
    }
}
