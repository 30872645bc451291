//! The built-in file profiles, compiled in from `crates/workload/profiles/`.

use crate::error::{PlanError, ProfileError};
use crate::files::profile::FileProfile;

/// A file profile that ships with peakhour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileBuiltin {
    /// Name used on the command line (`--profile netbench-disk-mix`).
    pub name: &'static str,
    /// One line for `peakhour profiles list`.
    pub description: &'static str,
    /// The TOML source, with its citations as comments.
    pub source: &'static str,
}

impl FileBuiltin {
    /// Parses the built-in profile.
    pub fn profile(&self) -> Result<FileProfile, ProfileError> {
        FileProfile::parse(&format!("builtin:{}.toml", self.name), self.source)
    }
}

const FILE_BUILTINS: &[FileBuiltin] = &[
    FileBuiltin {
        name: "netbench-disk-mix",
        description: "NetBench 5.01 disk mix as Mindcraft ran it: 20 MB workspace, 1+3+1 iterations, 5 s start delay, 2 s think time (seed 004)",
        // One script for both disk mixes: the parameters, then the shared script.
        source: concat!(
            include_str!("../../profiles/netbench-disk-mix.toml"),
            include_str!("../../profiles/netbench-disk-mix-script.toml")
        ),
    },
    FileBuiltin {
        name: "netbench-disk-mix-short",
        description: "netbench-disk-mix cut short for a first try: 4 MB workspace, 1+1+1 iterations of 10 pieces of work, 1 s start delay, 2 s think time (seed 004's script)",
        source: concat!(
            include_str!("../../profiles/netbench-disk-mix-short.toml"),
            include_str!("../../profiles/netbench-disk-mix-script.toml")
        ),
    },
];

/// Every built-in file profile.
pub fn file_builtins() -> &'static [FileBuiltin] {
    FILE_BUILTINS
}

/// The built-in file profile called `name`.
pub fn file_builtin(name: &str) -> Result<&'static FileBuiltin, PlanError> {
    FILE_BUILTINS
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| PlanError::UnknownBuiltin(name.to_owned()))
}
