//! The bounds of the run options. Each is far past any sensible run and
//! keeps memory and arithmetic bounded; docs/reliability.md lists them.

use std::time::Duration;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Simulated users, as many as the lab can create.
pub const MAX_USERS: u32 = 1_000_000;
/// The measured steady phase: from a second to a month (the engine's
/// longest phase).
pub const MIN_DURATION: Duration = Duration::from_secs(1);
/// The longest steady phase.
pub const MAX_DURATION: Duration = peakhour_engine::MAX_PHASE;
/// The ramp-up and the drain: at most a day each.
pub const MAX_RAMP_UP: Duration = Duration::from_secs(DAY);
/// The longest drain.
pub const MAX_DRAIN: Duration = Duration::from_secs(DAY);
/// A measurement interval: from a second to an hour...
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest measurement interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(HOUR);
/// ... and no more than this many of them in a run: each holds a histogram
/// per action and per command until the run ends.
pub const MAX_INTERVALS: u64 = 100_000;
/// An action's timeout, which is also every IMAP and SMTP command's deadline.
pub const MIN_ACTION_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest action timeout.
pub const MAX_ACTION_TIMEOUT: Duration = Duration::from_secs(HOUR);
/// The simulated day and the day compression.
pub const MAX_DAY: Duration = Duration::from_secs(31 * DAY);
/// The largest day compression (`--speed`).
pub const MAX_SPEED: f64 = 100_000.0;
/// A p95 limit, in ms: an hour.
pub const MAX_QOS_P95_MS: f64 = 3_600_000.0;
/// The monitor's high-average window and its idle baseline.
pub const MAX_HIGH_AVERAGE_WINDOW: Duration = Duration::from_secs(DAY);
/// The longest idle baseline of the monitor.
pub const MAX_MONITOR_BASELINE: Duration = Duration::from_secs(HOUR);
/// `init --parallel`: mailboxes filled at once, each with a connection.
pub const MAX_INIT_PARALLEL: usize = 1_024;
/// `init`: every IMAP and LMTP command must complete within this (a
/// MULTIAPPEND batch of up to 4 MB is one command).
pub const INIT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting (TCP, TLS, greeting, STARTTLS) to any server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The server monitor samples every second during a run (and a task or a
/// cell of the planner, which are runs).
pub const MONITOR_INTERVAL: Duration = Duration::from_secs(1);
