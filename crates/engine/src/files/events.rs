//! What file clients report while they run: one channel send per operation, as the mail
//! users do (`crate::Event`), so a client never waits on the recorder.

use tokio::time::Instant;

/// How one operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpOutcome {
    /// It got the answer it should: `NT_STATUS_OK` in the disk mix, the load file's
    /// expected status in a replay.
    Ok,
    /// Another answer, or no answer. The kind is stable and short: the NT status
    /// (`NT_STATUS_OBJECT_NAME_NOT_FOUND`), in a replay with what was expected
    /// (`NT_STATUS_OK (expected NT_STATUS_OBJECT_NAME_NOT_FOUND)`), or `timeout`,
    /// `smb` (the connection failed), `io`, `not_open` (a handle whose open had failed).
    Error(String),
}

/// One file operation, timed from its intended start.
#[derive(Debug, Clone)]
pub struct OpEvent {
    /// The client (from 1).
    pub client: u32,
    /// The histogram it goes in (`file.read`, `nbench.ReadX`).
    pub action: &'static str,
    /// Whether NetBench would measure it: false in ramp-up and ramp-down iterations.
    pub measured: bool,
    /// When the client's schedule wanted it to start: the end of the think time for the
    /// first operation of a piece of work, the end of the previous operation for the rest
    /// (a client does one operation at a time), the line's time in a timed load file.
    pub intended: Instant,
    /// When it started.
    pub started: Instant,
    /// When its answer was in.
    pub finished: Instant,
    /// Whether it got the answer it should.
    pub outcome: OpOutcome,
    /// File data read from the server.
    pub bytes_read: u64,
    /// File data written to the server.
    pub bytes_written: u64,
}

/// Something a file client reports.
#[derive(Debug, Clone)]
pub enum FileEvent {
    /// One operation.
    Op(OpEvent),
    /// The client began its measured iterations.
    Measuring {
        /// The client.
        client: u32,
        /// When.
        at: Instant,
    },
    /// The client left its measured iterations (into ramp-down, or its end).
    DoneMeasuring {
        /// The client.
        client: u32,
        /// When.
        at: Instant,
    },
    /// The client could not go on (no connection, a dropped connection, an operation
    /// without an answer); the others carry on.
    Failed {
        /// The client.
        client: u32,
        /// Why, for people (no password in it).
        error: String,
        /// When.
        at: Instant,
    },
    /// Client-side work not timed as an operation: workspace set-up and cleanup (counted
    /// as `setup_operations`, `cleanup_operations` and their failures).
    Untimed {
        /// The counter.
        counter: &'static str,
    },
    /// The client's task ended (sent by the run core, for the live line's
    /// count of clients still running).
    Ended {
        /// The client.
        client: u32,
    },
    /// The client's cleanup left something behind: the path and the refusal.
    Leftover {
        /// What could not be removed.
        path: String,
        /// The status.
        status: String,
    },
}
