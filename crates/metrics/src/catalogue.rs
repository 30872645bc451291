//! Every metric family the exporter serves, in the order it serves them: the
//! contract `docs/live-metrics.md` documents and the Grafana dashboard reads.
//! A test holds the exposition, the page and the dashboard to this list.

/// The OpenMetrics type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up; its sample is `NAME_total`.
    Counter,
    /// A value that goes up and down; its sample is `NAME`.
    Gauge,
    /// Cumulative buckets: `NAME_bucket{le}`, `NAME_count`, `NAME_sum`.
    Histogram,
    /// Labels that describe the target; its sample is `NAME_info`, always 1.
    Info,
    /// One of several states; one `NAME{NAME="state"}` sample per state, 1
    /// for the current one.
    StateSet,
}

impl Kind {
    /// The type's name in a `# TYPE` line of OpenMetrics.
    pub fn openmetrics_name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Info => "info",
            Kind::StateSet => "stateset",
        }
    }

    /// The sample names a family of this kind named `family` serves.
    pub fn sample_names(self, family: &str) -> Vec<String> {
        match self {
            Kind::Counter => vec![format!("{family}_total")],
            Kind::Gauge | Kind::StateSet => vec![family.to_owned()],
            Kind::Histogram => ["_bucket", "_count", "_sum"]
                .iter()
                .map(|suffix| format!("{family}{suffix}"))
                .collect(),
            Kind::Info => vec![format!("{family}_info")],
        }
    }
}

/// One metric family: name, type, unit (the name's last word when it has
/// one), the labels of its samples, and its help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The family's name, without `_total` or `_info`.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its unit (`seconds`, `ratio`), which the name ends with.
    pub unit: Option<&'static str>,
    /// The labels of its samples (a histogram's buckets add `le`).
    pub labels: &'static [&'static str],
    /// One sentence for `# HELP`.
    pub help: &'static str,
}

const fn family(
    name: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
    labels: &'static [&'static str],
    help: &'static str,
) -> Family {
    Family {
        name,
        kind,
        unit,
        labels,
        help,
    }
}

use Kind::{Counter, Gauge, Histogram, Info, StateSet};

const SECONDS: Option<&str> = Some("seconds");

/// The states of [`PHASE`], in order.
pub const PHASE_STATES: &[&str] = &[
    "waiting",
    "logon",
    "steady",
    "drain",
    "reconcile",
    "finished",
];

/// The run's identity.
pub const RUN: Family = family(
    "peakhour_run",
    Info,
    None,
    &["run_id", "profile", "seed", "shard", "version"],
    "The run being measured; shard is I/N (from 1) of a distributed run, 1/1 for one process.",
);
/// Where the run is.
pub const PHASE: Family = family(
    "peakhour_phase",
    StateSet,
    None,
    &["peakhour_phase"],
    "The run's phase: waiting (a shard before its --start-at), logon (ramp-up), steady (measured), drain, reconcile (searching for unseen deliveries), finished (results final).",
);
/// Time since the run started.
pub const ELAPSED: Family = family(
    "peakhour_run_elapsed_seconds",
    Gauge,
    SECONDS,
    &[],
    "Time since the run started, as of the last self-check (once a second).",
);
/// The plan's user count.
pub const USERS: Family = family(
    "peakhour_users",
    Gauge,
    None,
    &[],
    "Simulated users in the run.",
);
/// Users logged on now.
pub const USERS_LOGGED_ON: Family = family(
    "peakhour_users_logged_on",
    Gauge,
    None,
    &[],
    "Simulated users logged on now.",
);
/// Actions that ended.
pub const ACTIONS: Family = family(
    "peakhour_actions",
    Counter,
    None,
    &["action", "phase", "outcome"],
    "User actions that ended, by outcome (ok or error); skipped actions are not counted.",
);
/// Errors by kind.
pub const ERRORS: Family = family(
    "peakhour_errors",
    Counter,
    None,
    &["action", "phase", "kind"],
    "Errors by kind: of actions, and outside any action under action logon, session, reconcile or user (a panic).",
);
/// Actions with nothing to act on.
pub const SKIPPED: Family = family(
    "peakhour_actions_skipped",
    Counter,
    None,
    &["action", "phase", "reason"],
    "Actions that had nothing to act on (e.g. a read with an empty Inbox); not timed.",
);
/// Actions that started late.
pub const LATE_STARTS: Family = family(
    "peakhour_late_starts",
    Counter,
    None,
    &["action", "phase"],
    "Actions that started later than the late-start threshold after their intended start.",
);
/// Latency of successful actions.
pub const ACTION_LATENCY: Family = family(
    "peakhour_action_latency_seconds",
    Histogram,
    SECONDS,
    &["action"],
    "Latency of successful actions, timed from their intended start (coordinated omission counted), over the whole run.",
);
/// Protocol commands.
pub const COMMANDS: Family = family(
    "peakhour_commands",
    Counter,
    None,
    &["command"],
    "Protocol commands that got their final reply, e.g. imap.SELECT or smtp.DATA.",
);
/// Messages accepted for submission.
pub const MESSAGES_SUBMITTED: Family = phase_counter(
    "peakhour_messages_submitted",
    "Messages accepted for submission.",
);
/// Recipients of accepted submissions.
pub const RECIPIENTS_SUBMITTED: Family = phase_counter(
    "peakhour_recipients_submitted",
    "Recipients of accepted submissions.",
);
/// Recipients refused at submission.
pub const RECIPIENTS_REFUSED: Family = phase_counter(
    "peakhour_recipients_refused",
    "Recipients the server refused at submission.",
);
/// Recipients that saw their copy.
pub const RECIPIENTS_DELIVERED: Family = phase_counter(
    "peakhour_recipients_delivered",
    "Recipients that noticed their copy of a tracked message (IDLE, a check, or the reconciliation's search).",
);
/// Message bodies opened.
pub const MESSAGE_OPENS: Family = phase_counter("peakhour_message_opens", "Message bodies opened.");
/// Folders opened.
pub const FOLDER_OPENS: Family = phase_counter("peakhour_folder_opens", "Folders opened (SELECT).");
/// Connections re-established.
pub const RECONNECTS: Family = phase_counter(
    "peakhour_reconnects",
    "Dropped connections that were re-established.",
);
/// Calendar events created.
pub const EVENTS_CREATED: Family = phase_counter(
    "peakhour_calendar_events_created",
    "Calendar events created over CalDAV.",
);
/// Calendar events changed.
pub const EVENTS_CHANGED: Family = phase_counter(
    "peakhour_calendar_events_changed",
    "Calendar events changed over CalDAV.",
);
/// Messages downloaded over POP3.
pub const MESSAGES_DOWNLOADED: Family = phase_counter(
    "peakhour_messages_downloaded",
    "Messages downloaded over POP3 (RETR).",
);
/// Delivery latency.
pub const DELIVERY_LATENCY: Family = family(
    "peakhour_delivery_latency_seconds",
    Histogram,
    SECONDS,
    &[],
    "Time from a message's submission until a recipient noticed it.",
);
/// The process's CPU time.
pub const GENERATOR_CPU: Family = family(
    "peakhour_generator_cpu_seconds",
    Counter,
    SECONDS,
    &[],
    "CPU time (user and system) the peakhour process has used, read at each scrape.",
);
/// The generator's CPU over the last second.
pub const GENERATOR_CPU_RATIO: Family = family(
    "peakhour_generator_cpu_ratio",
    Gauge,
    Some("ratio"),
    &[],
    "CPU the peakhour process used over the last second, in cores (1 is one core fully busy).",
);
/// Scheduling lag.
pub const SCHEDULING_LAG: Family = family(
    "peakhour_scheduling_lag_seconds",
    Histogram,
    SECONDS,
    &[],
    "How long a woken task of the run waited before it ran, probed every 10 ms.",
);
/// The worst scheduling lag of the last second.
pub const SCHEDULING_LAG_MAX: Family = family(
    "peakhour_scheduling_lag_max_seconds",
    Gauge,
    SECONDS,
    &[],
    "The worst scheduling lag of the last second.",
);
/// Mailboxes the reconciliation searches.
pub const RECONCILE_MAILBOXES: Family = family(
    "peakhour_reconcile_mailboxes",
    Gauge,
    None,
    &[],
    "Mailboxes with unseen deliveries that the reconciliation after the drain searches (0 before it starts).",
);
/// Mailboxes the reconciliation has searched.
pub const RECONCILE_SEARCHED: Family = family(
    "peakhour_reconcile_mailboxes_searched",
    Gauge,
    None,
    &[],
    "Of those, mailboxes searched so far in the current round.",
);

const fn phase_counter(name: &'static str, help: &'static str) -> Family {
    family(name, Counter, None, &["phase"], help)
}

/// Every family, in the order of the exposition.
pub const FAMILIES: &[Family] = &[
    RUN,
    PHASE,
    ELAPSED,
    USERS,
    USERS_LOGGED_ON,
    ACTIONS,
    ERRORS,
    SKIPPED,
    LATE_STARTS,
    ACTION_LATENCY,
    COMMANDS,
    MESSAGES_SUBMITTED,
    RECIPIENTS_SUBMITTED,
    RECIPIENTS_REFUSED,
    RECIPIENTS_DELIVERED,
    MESSAGE_OPENS,
    FOLDER_OPENS,
    RECONNECTS,
    EVENTS_CREATED,
    EVENTS_CHANGED,
    MESSAGES_DOWNLOADED,
    DELIVERY_LATENCY,
    GENERATOR_CPU,
    GENERATOR_CPU_RATIO,
    SCHEDULING_LAG,
    SCHEDULING_LAG_MAX,
    RECONCILE_MAILBOXES,
    RECONCILE_SEARCHED,
];

/// Every sample name the exporter can serve (what a PromQL query may name).
pub fn sample_names() -> Vec<String> {
    FAMILIES
        .iter()
        .flat_map(|f| f.kind.sample_names(f.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_unique_and_end_with_their_unit() {
        let mut seen = std::collections::BTreeSet::new();
        for f in FAMILIES {
            assert!(f.name.starts_with("peakhour_"), "{}", f.name);
            assert!(seen.insert(f.name), "{} twice", f.name);
            if let Some(unit) = f.unit {
                assert!(f.name.ends_with(&format!("_{unit}")), "{}", f.name);
            }
            // A counter's family name must not end in _total: the sample adds it.
            assert!(!f.name.ends_with("_total"), "{}", f.name);
        }
        let samples = sample_names();
        let unique: std::collections::BTreeSet<_> = samples.iter().collect();
        assert_eq!(unique.len(), samples.len(), "sample names collide");
    }
}
