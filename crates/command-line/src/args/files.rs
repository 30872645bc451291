//! The flags of file-server runs (`--profile netbench-disk-mix`, `--profile nbench`):
//! where the files go, and the NetBench parameters a test may shorten. Shared by `run`
//! and `sweep` (which passes them to every step).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse_duration;

fn parse_size(text: &str) -> Result<u64, String> {
    peakhour_workload::ByteSize::parse(text).map(|s| s.0)
}

/// File-server targets and overrides (docs/files.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "File servers (file profiles: netbench-disk-mix, nbench)")]
pub struct FileArgs {
    /// Put the workspaces under this directory, on any mounted file system (local, NFS,
    /// CIFS). Instead of --target.
    #[arg(long, value_name = "PATH", conflicts_with = "smb")]
    pub dir: Option<PathBuf>,
    /// An SMB 2/3 share (its help text: `help::smb_url_help`, which keeps `{n}` from
    /// becoming a line break).
    #[arg(long, value_name = "URL", help = super::help::smb_url_help())]
    pub smb: Option<String>,
    /// With --dir: how the client's page cache is kept out of the figures: `auto` (bypass
    /// it on network file systems, keep it on local ones), `bypass` or `keep`.
    #[arg(long, value_name = "auto|bypass|keep", default_value = "auto", value_parser = ["auto", "bypass", "keep"])]
    pub cache: String,
    /// The dbench/NBENCH load file `--profile nbench` replays, e.g.
    /// /usr/share/dbench/client.txt (Debian's dbench).
    #[arg(long, value_name = "FILE")]
    pub loadfile: Option<PathBuf>,
    /// Disk mix: the wait before each piece of work (the profile's: 2 s, seed 004).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub think_time: Option<Duration>,
    /// Disk mix: the largest random delay before a client starts (the profile's: 5 s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub start_delay: Option<Duration>,
    /// Disk mix: each client's workspace, e.g. 20MB (the profile's) or 1MB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub workspace: Option<u64>,
    /// Disk mix: iterations run before measuring (the profile's: 1).
    #[arg(long, value_name = "N")]
    pub ramp_up_iterations: Option<u32>,
    /// Disk mix: iterations measured (the profile's: 3).
    #[arg(long, value_name = "N")]
    pub measured_iterations: Option<u32>,
    /// Disk mix: iterations run after measuring (the profile's: 1).
    #[arg(long, value_name = "N")]
    pub ramp_down_iterations: Option<u32>,
    /// Disk mix: pieces of work in one iteration (the profile's: 30).
    #[arg(long, value_name = "N")]
    pub work_per_iteration: Option<u32>,
    /// Leave the workspaces on the server at the end (seed 004's "Save Workspace"; the
    /// last mix of a suite deletes them).
    #[arg(long)]
    pub keep_workspace: bool,
}
