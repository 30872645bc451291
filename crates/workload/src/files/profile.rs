//! The file profile: one NetBench test system's workspace and disk-mix script, in TOML.
//!
//! It follows the mail profiles' conventions (`docs/profiles.md`): durations and sizes as
//! strings, unknown fields refused, and every error naming the file, line, column and
//! field. Seed 004's "NetBench Test Suite Configuration Parameters" give the defaults.

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::ProfileError;
use crate::profile::{toml_error, unplaced};
use crate::units::{ByteSize, HumanDuration};

/// The largest read or write one script entry may ask for. NetBench's and the trace's
/// largest are 64 KB; 1 MB leaves room without letting a typo allocate gigabytes.
pub const MAX_IO_SIZE: u64 = 1024 * 1024;

/// What one script entry does. The concrete operation (which file, which offset) is
/// decided by the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptOp {
    /// Open an existing workspace file (closing the one open before).
    Open,
    /// Create a new scratch file (closing the one open before).
    Create,
    /// Read `size` bytes at the file position.
    Read,
    /// Write `size` bytes at the file position.
    Write,
    /// Move the file position to a random offset.
    Seek,
    /// Close the open file.
    Close,
    /// Delete a scratch file.
    Delete,
    /// Rename a scratch file.
    Rename,
    /// List the workspace directory.
    List,
    /// Read a workspace file's attributes by path.
    GetAttributes,
    /// Set the open file's last-write time.
    SetAttributes,
    /// Lock `size` bytes at the file position, then unlock them.
    Lock,
    /// Flush the open file.
    Flush,
    /// Query the file system's size and free space.
    FsInfo,
}

impl ScriptOp {
    /// The name used in profiles (`get_attributes`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ScriptOp::Open => "open",
            ScriptOp::Create => "create",
            ScriptOp::Read => "read",
            ScriptOp::Write => "write",
            ScriptOp::Seek => "seek",
            ScriptOp::Close => "close",
            ScriptOp::Delete => "delete",
            ScriptOp::Rename => "rename",
            ScriptOp::List => "list",
            ScriptOp::GetAttributes => "get_attributes",
            ScriptOp::SetAttributes => "set_attributes",
            ScriptOp::Lock => "lock",
            ScriptOp::Flush => "flush",
            ScriptOp::FsInfo => "fs_info",
        }
    }

    /// Whether the entry needs a `size` (reads, writes and locks) or must not have one.
    pub fn takes_size(self) -> bool {
        matches!(self, ScriptOp::Read | ScriptOp::Write | ScriptOp::Lock)
    }
}

/// When the workspaces are deleted (seed 004, "Save Workspace").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cleanup {
    /// Keep them between mixes; the last mix of a sweep (or a single run) deletes them.
    /// Seed 004: "The last mix has this parameter set to No to clean up after the test
    /// is over."
    #[default]
    LastMix,
    /// Delete them after every mix.
    EveryMix,
    /// Never delete them.
    Never,
}

fn default_start_delay() -> Spanned<HumanDuration> {
    unplaced(HumanDuration(Duration::from_secs(5)))
}
fn default_think_time() -> Spanned<HumanDuration> {
    unplaced(HumanDuration(Duration::from_secs(2)))
}
fn default_one() -> Spanned<i64> {
    unplaced(1)
}
fn default_measured() -> Spanned<i64> {
    unplaced(3)
}
fn default_workspace_size() -> Spanned<ByteSize> {
    unplaced(ByteSize(20 * 1024 * 1024))
}
fn default_files() -> Spanned<i64> {
    unplaced(20)
}
fn default_scratch() -> Spanned<i64> {
    unplaced(8)
}
fn default_directory() -> Spanned<String> {
    unplaced("clients/client{n}".to_owned())
}

/// A whole file profile, as written in TOML.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProfile {
    /// Short name, e.g. `netbench-disk-mix`.
    pub name: String,
    /// One line saying what the profile models.
    pub description: String,
    /// Test systems (clients) in the mix; `--users` overrides it.
    #[serde(default = "default_one")]
    pub clients: Spanned<i64>,
    /// How each client paces itself.
    #[serde(default)]
    pub client: ClientPacing,
    /// Iterations of the script: ramp-up, measured, ramp-down.
    #[serde(default)]
    pub iterations: Iterations,
    /// Each client's own files.
    #[serde(default)]
    pub workspace: Workspace,
    /// The disk-mix script: weighted operations.
    pub script: Spanned<Vec<ScriptEntry>>,
}

/// How a client paces itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientPacing {
    /// Each client starts after a random delay of at most this (seed 004: "Delay").
    #[serde(default = "default_start_delay")]
    pub start_delay: Spanned<HumanDuration>,
    /// The wait before each piece of work (seed 004: "Think Time").
    #[serde(default = "default_think_time")]
    pub think_time: Spanned<HumanDuration>,
    /// Script operations drawn for one piece of work.
    #[serde(default = "default_one")]
    pub operations_per_work: Spanned<i64>,
    /// Pieces of work in one iteration of the script.
    #[serde(default = "default_one")]
    pub work_per_iteration: Spanned<i64>,
}

impl Default for ClientPacing {
    fn default() -> Self {
        ClientPacing {
            start_delay: default_start_delay(),
            think_time: default_think_time(),
            operations_per_work: default_one(),
            work_per_iteration: default_one(),
        }
    }
}

/// Iterations of the script (seed 004: "Ramp Up", "Length", "Ramp Down").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Iterations {
    /// Run first and not measured.
    #[serde(default = "default_one")]
    pub ramp_up: Spanned<i64>,
    /// Measured.
    #[serde(default = "default_measured")]
    pub measured: Spanned<i64>,
    /// Run last and not measured.
    #[serde(default = "default_one")]
    pub ramp_down: Spanned<i64>,
}

impl Default for Iterations {
    fn default() -> Self {
        Iterations {
            ramp_up: default_one(),
            measured: default_measured(),
            ramp_down: default_one(),
        }
    }
}

/// A client's workspace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    /// Total size of the client's data files (seed 004: "Workspace", 20 MB).
    #[serde(default = "default_workspace_size")]
    pub size: Spanned<ByteSize>,
    /// Number of data files the size is split into, equally.
    #[serde(default = "default_files")]
    pub files: Spanned<i64>,
    /// The client's directory under the target's root; `{n}` is the client number (from 1).
    #[serde(default = "default_directory")]
    pub directory: Spanned<String>,
    /// At most this many scratch files (made by `create`) exist at once per client.
    #[serde(default = "default_scratch")]
    pub scratch_files: Spanned<i64>,
    /// When the workspaces are deleted.
    #[serde(default)]
    pub cleanup: Cleanup,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace {
            size: default_workspace_size(),
            files: default_files(),
            directory: default_directory(),
            scratch_files: default_scratch(),
            cleanup: Cleanup::default(),
        }
    }
}

/// One weighted operation of the disk-mix script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// The operation.
    pub op: ScriptOp,
    /// Relative weight when an operation is drawn.
    pub weight: Spanned<i64>,
    /// Bytes read or written, or locked; only for `read`, `write` and `lock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Spanned<ByteSize>>,
}

impl FileProfile {
    /// Parses and validates a file profile. `file` is used only in error messages.
    pub fn parse(file: &str, source: &str) -> Result<FileProfile, ProfileError> {
        let de = toml::Deserializer::parse(source)
            .map_err(|e| toml_error(file, source, &e, String::new()))?;
        let profile: FileProfile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            toml_error(file, source, e.inner(), path)
        })?;
        profile.validate(file, source)?;
        Ok(profile)
    }

    /// The least time one client's run of the profile takes: its longest start delay
    /// and the think time before every piece of work of every iteration. Operations,
    /// making the workspace and cleaning up come on top, so a run takes longer.
    pub fn least_length(&self) -> std::time::Duration {
        let iterations = [
            &self.iterations.ramp_up,
            &self.iterations.measured,
            &self.iterations.ramp_down,
        ]
        .iter()
        .map(|n| u32::try_from(*n.get_ref()).unwrap_or(0))
        .fold(0u32, u32::saturating_add);
        let works = iterations
            .saturating_mul(u32::try_from(*self.client.work_per_iteration.get_ref()).unwrap_or(0));
        let thinking = self.client.think_time.get_ref().0.checked_mul(works);
        self.client
            .start_delay
            .get_ref()
            .0
            .saturating_add(thinking.unwrap_or(std::time::Duration::MAX))
    }

    /// Writes the profile as TOML (without comments); [`FileProfile::parse`] reads it back.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }

    fn validate(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        at_least(&self.clients, 1, "clients", file, src)?;
        at_least(
            &self.client.operations_per_work,
            1,
            "client.operations_per_work",
            file,
            src,
        )?;
        at_least(
            &self.client.work_per_iteration,
            1,
            "client.work_per_iteration",
            file,
            src,
        )?;
        at_least(&self.iterations.ramp_up, 0, "iterations.ramp_up", file, src)?;
        at_least(
            &self.iterations.measured,
            1,
            "iterations.measured",
            file,
            src,
        )?;
        at_least(
            &self.iterations.ramp_down,
            0,
            "iterations.ramp_down",
            file,
            src,
        )?;
        let files = at_least(&self.workspace.files, 1, "workspace.files", file, src)?;
        at_least(
            &self.workspace.scratch_files,
            1,
            "workspace.scratch_files",
            file,
            src,
        )?;
        let size = self.workspace.size.get_ref().0;
        if size < files as u64 {
            return Err(err(
                self.workspace.size.span(),
                "workspace.size",
                format!("{size} bytes cannot be split into {files} files of at least one byte"),
            ));
        }
        self.validate_directory(file, src)?;
        self.validate_script(file, src)
    }

    fn validate_directory(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let dir = self.workspace.directory.get_ref();
        let bad = if !dir.contains("{n}") {
            Some(format!(
                "`{dir}` must contain `{{n}}` so clients do not share a workspace"
            ))
        } else if dir.starts_with('/') || dir.contains('\\') {
            Some(format!(
                "`{dir}` must be relative to the target's root, with `/` between names"
            ))
        } else if dir
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            Some(format!(
                "`{dir}` must not contain empty, `.` or `..` components"
            ))
        } else {
            None
        };
        match bad {
            Some(message) => Err(ProfileError::at(
                file,
                src,
                Some(self.workspace.directory.span()),
                "workspace.directory",
                message,
            )),
            None => Ok(()),
        }
    }

    fn validate_script(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let script = self.script.get_ref();
        if script.is_empty() {
            return Err(ProfileError::at(
                file,
                src,
                Some(self.script.span()),
                "script",
                "needs at least one entry",
            ));
        }
        let mut total = 0;
        for (i, entry) in script.iter().enumerate() {
            total += at_least(&entry.weight, 0, &format!("script[{i}].weight"), file, src)?;
            let field = format!("script[{i}].size");
            match (&entry.size, entry.op.takes_size()) {
                (None, true) => {
                    return Err(ProfileError::at(
                        file,
                        src,
                        Some(entry.weight.span()),
                        field,
                        format!("missing: `{}` needs a size", entry.op.name()),
                    ));
                }
                (Some(size), false) => {
                    return Err(ProfileError::at(
                        file,
                        src,
                        Some(size.span()),
                        field,
                        format!("`{}` takes no size", entry.op.name()),
                    ));
                }
                (Some(size), true) => {
                    let bytes = size.get_ref().0;
                    if bytes == 0 || bytes > MAX_IO_SIZE {
                        return Err(ProfileError::at(
                            file,
                            src,
                            Some(size.span()),
                            field,
                            format!("must be between 1 byte and 1MB (got {bytes} bytes)"),
                        ));
                    }
                }
                (None, false) => {}
            }
        }
        if total == 0 {
            return Err(ProfileError::at(
                file,
                src,
                Some(self.script.span()),
                "script",
                "the weights sum to zero",
            ));
        }
        Ok(())
    }
}

fn at_least(
    v: &Spanned<i64>,
    min: i64,
    field: &str,
    file: &str,
    src: &str,
) -> Result<i64, ProfileError> {
    let x = *v.get_ref();
    if x < min || x > i64::from(u32::MAX) {
        return Err(ProfileError::at(
            file,
            src,
            Some(v.span()),
            field,
            format!(
                "must be a whole number from {min} to {} (got {x})",
                u32::MAX
            ),
        ));
    }
    Ok(x)
}
