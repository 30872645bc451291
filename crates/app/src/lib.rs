//! # peakhour-app
//!
//! peakhour's application layer: the one crate that uses the lab, the
//! monitor and the engine together, so that the engine below it knows
//! neither (it takes resolved endpoints, a plan and a population, and a
//! callback where a measurement goes around it). The command line
//! (`peakhour-command-line`) parses and checks; this layer resolves what it
//! names, once; the binary prints and picks the exit code.
//!
//! * [`request`]: a command line resolved once: [`MailRequest`] (the
//!   profile, the target and the lab, the plan, the population) and
//!   [`RunRequest`] (that, the phases, the monitor's settings, the target
//!   fitted to this machine's limits, where the results go);
//!   [`files::FileRequest`] for a file run, [`TasksRequest`] for `tasks`.
//! * [`setup`]: the steps a request is resolved by: a profile's name into
//!   a [`Profile`](peakhour_workload::Profile), a
//!   [`TargetSpec`](peakhour_command_line::TargetSpec) into endpoints and
//!   credentials (`--target lab` reads the lab's status), the plan with its
//!   overrides, and the test population, all checked before any connection.
//! * [`files`]: a file run's target (a directory, an SMB share, the lab's
//!   Samba) and workload.
//! * [`init_clone`]: `peakhour init`, cloning one filled mailbox on the lab's
//!   disk ([`init_clone::init`] hands the engine's init that way of filling);
//!   [`init_text`] words its announcement and closing line.
//! * [`tasks`]: `peakhour tasks` resolved ([`TasksRequest`]);
//!   [`task_meter`]: the planner's session tasks measured with the monitor
//!   beside each ([`TaskMeter`]).
//! * [`children`]: the `peakhour init` and `peakhour run` children of a
//!   sweep, `tasks`, `matrix` or `capacity`, built from typed requests
//!   ([`StepRequest`], [`InitRequest`]).
//! * [`monitor_source`]: the monitor's local source beside a load, from
//!   what the lab says to watch and `--group`.
//! * [`StatusLine`]: the live line on stderr the engine's live lines draw on.
//! * [`is_usage_cause`]: which errors are bad usage (exit code 2).
#![deny(missing_docs)]

pub mod children;
pub mod files;
pub mod init_clone;
pub mod init_text;
pub mod monitor_source;
pub mod request;
pub mod setup;
mod status_line;
pub mod task_meter;
pub mod tasks;

pub use children::{ChildTarget, InitRequest, StepPhases, StepRequest, peakhour_command};
pub use init_text::{InitDone, init_announcement, messages_per_user};
pub use request::{MailRequest, RequestError, RunRequest};
pub use status_line::StatusLine;
pub use task_meter::{MeasureError, Measured, TaskMeter};
pub use tasks::{TasksError, TasksRequest};

/// Whether `cause` (one link of an error's chain) is bad usage, which exits
/// with code 2: the command line's reasons
/// ([`peakhour_command_line::config::is_usage_cause`]), and the target's
/// when it is resolved here (a users file that does not read as one, a test
/// population refused, a file target that cannot be used).
pub fn is_usage_cause(cause: &(dyn std::error::Error + 'static)) -> bool {
    peakhour_command_line::config::is_usage_cause(cause)
        || (cause.downcast_ref::<setup::SetupError>()).is_some_and(setup::SetupError::is_usage)
        || (cause.downcast_ref::<files::FileTargetError>())
            .is_some_and(files::FileTargetError::is_usage)
        || (cause.downcast_ref::<RequestError>()).is_some_and(RequestError::is_usage)
}
