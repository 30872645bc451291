//! What `peakhour tasks` and `matrix` share: a file written with its name in
//! the error, and the load average noted beside each measurement. The lab's
//! capacity and shape are `peakhour_lab`'s, the directories `peakhour_rundir`'s.

use std::path::Path;

use anyhow::Context as _;

/// Writes `bytes` to `path`, naming the file when it fails.
pub(crate) fn write(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The one-minute load average, noted beside a measurement on a shared
/// machine (`NaN` when unknown).
pub(crate) fn load_average() -> f64 {
    peakhour_monitor::server::load_average().unwrap_or(f64::NAN)
}

/// `--out`, or a new directory for `command` under `runs/`; refused when it
/// already holds `marker`.
pub(crate) fn output_dir(
    out: Option<&Path>,
    command: &str,
    profile: &str,
    marker: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let now = std::time::SystemTime::now();
    Ok(peakhour_rundir::planner_dir(
        out, now, command, profile, marker,
    )?)
}
