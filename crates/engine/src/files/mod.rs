//! File clients: NetBench's test systems (seed 004) and dbench-style trace replay, against
//! a directory or an SMB share through `peakhour-files`.
//!
//! * A **disk-mix client** ([`FileWorkload::Mix`]) follows NetBench's model: a random
//!   start delay, its workspace made (not measured), the script's ramp-up iterations (run,
//!   not measured), measured iterations and ramp-down iterations, a think time before
//!   every piece of work, and at the end of the last mix its workspace deleted.
//! * A **replaying client** ([`FileWorkload::Replay`]) runs a dbench/NBENCH load file
//!   line by line, its paths rewritten for the client, its file numbers mapped to open
//!   handles, each answer compared with the status the trace expects.
//! * Every operation is timed from its **intended** start (after the think time, or the
//!   end of the previous operation: a client does one at a time) into one histogram per
//!   operation, named `file.<op>` for the disk mix (`file.read`, `file.open` ...) and
//!   `nbench.<line>` for a replay (`nbench.ReadX` ...); a wrong answer is counted by its
//!   NT status. The bytes read and written in measured operations are counted
//!   (`bytes_read`, `bytes_written`): NetBench's throughput.
//! * The measured window of a disk mix is the time every client was in its measured
//!   iterations (a mode of the run core's recorder, `core::recorder`); a replay's is the clock's, as a mail run's.
//! * Every wait is bounded: operations by the operation timeout, think times and start
//!   delays by `stop`, and after `stop` the run ends within [`crate::STOP_GRACE`].

pub(crate) mod events;
mod run;
mod setup;
pub(crate) mod target;

pub use crate::core::{BYTES_READ, BYTES_WRITTEN, UNMEASURED_OPERATIONS};
pub use crate::live::{FileLiveLine, FileProgress};
pub use crate::sessions::files::replay::LoadFile;
pub use events::{FileEvent, OpEvent, OpOutcome};
pub use run::{FileRunOutcome, FileRunResult, FileRunSettings, FileWorkload, run_files};
pub use setup::{
    FileProfileChoice, FileSetupError, NBENCH, RecordedValue, cache_policy, read_file_users,
};
pub use target::FileTarget;
