//! File-server workloads: NetBench's disk mix (seed 004) and dbench/NBENCH trace replay.
//!
//! - A [`FileProfile`] is a NetBench test suite's per-client parameters in TOML: the
//!   workspace, the ramp-up, measured and ramp-down iterations, the start delay, the think
//!   time, and the disk-mix script as weighted operations with sizes. One is built in,
//!   `netbench-disk-mix` ([`file_builtins`]).
//! - A [`FilePlan`] is a profile resolved with the command line; its
//!   [`FilePlan::script`] is one client's deterministic stream of [`Work`]: pieces of work,
//!   each a think time and concrete [`FileOp`]s with paths, handles, offsets and lengths.
//! - [`parse_loadfile`] reads a dbench load file (`client.txt`) into [`LoadLine`]s, each
//!   with the [`NtStatus`] the trace expects and paths rewritten per client.
//!
//! Nothing here touches a file: the `peakhour-files` crate performs the operations.

mod builtin;
mod loadfile;
mod op;
mod plan;
mod profile;
mod status;

pub use builtin::{FileBuiltin, file_builtin, file_builtins};
pub use loadfile::{
    Fnum, LoadFileError, LoadLine, LoadOp, LoadPath, MAX_LINE, parse_line, parse_loadfile,
};
pub use op::{FileOp, Handle};
pub use plan::{ClientScript, FileOverrides, FilePlan, Phase, ScriptStep, Work};
pub use profile::{
    Cleanup, ClientPacing, FileProfile, Iterations, MAX_IO_SIZE, ScriptEntry, ScriptOp, Workspace,
};
pub use status::NtStatus;
