//! What `peakhour tasks`, `plan`, `matrix` and `run` share from the lab:
//! its cgroup for the monitor, its caps as capacities and in
//! `summary.json`, and the planner's output directories. What a monitor
//! table says about the server is `peakhour_monitor::server`'s.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use peakhour_lab::{CgroupStatus, CgroupVersion, LabStatus};
use peakhour_monitor::server::host_capacity;
use peakhour_monitor::{CgroupFiles, CgroupLayout};

/// The files of a lab's cgroup the monitor reads (`lab status`'s
/// `limits.cgroup`).
pub(crate) fn cgroup_files(status: &CgroupStatus) -> CgroupFiles {
    CgroupFiles {
        layout: match status.version {
            CgroupVersion::V1 => CgroupLayout::V1,
            CgroupVersion::V2 => CgroupLayout::V2,
        },
        cpu_usage: status.cpu_usage_file.clone().into(),
        memory_usage: status.memory_usage_file.clone().into(),
        cpu_stat: status.cpu_stat_file.clone().into(),
    }
}

/// The CPUs and memory the lab's servers have: the lab's caps where set,
/// else the host's.
pub(crate) fn lab_capacity(lab: Option<&LabStatus>) -> (f64, Option<u64>) {
    let (cores, memory) = host_capacity();
    let limits = lab.map(|l| &l.limits);
    (
        limits.and_then(|l| l.cpus).unwrap_or(cores),
        limits
            .and_then(|l| l.memory_bytes)
            .or((memory > 0).then_some(memory)),
    )
}

/// `0.5 CPUs × 1024 MiB`-style label of a shape.
pub(crate) fn shape_label(cpus: Option<f64>, memory: Option<u64>) -> String {
    let cpus = cpus.map_or_else(|| "all CPUs".to_owned(), |c| format!("{c} CPUs"));
    let memory = memory.map_or_else(
        || "all memory".to_owned(),
        |m| format!("{} MiB", m / (1024 * 1024)),
    );
    format!("{cpus} × {memory}")
}

/// A shaped lab's caps for `summary.json` (`None` for a lab without caps or
/// another target).
pub(crate) fn summary_limits(lab: Option<&LabStatus>) -> Option<peakhour_analysis::ServerLimits> {
    let l = &lab?.limits;
    (l.cpus.is_some() || l.memory_bytes.is_some()).then_some(peakhour_analysis::ServerLimits {
        cpus: l.cpus,
        memory_bytes: l.memory_bytes,
    })
}

/// `--out`, or `runs/DATE-KIND-PROFILE` (named as a sweep's directory is);
/// refused when it already holds `marker`.
pub(crate) fn output_dir(
    out: Option<&Path>,
    kind: &str,
    profile: &str,
    marker: &str,
) -> anyhow::Result<PathBuf> {
    let dir = out.map_or_else(
        || {
            let name = peakhour_rundir::dir_name(
                std::time::SystemTime::now(),
                peakhour_rundir::DirKind::Sweep { profile },
            );
            PathBuf::from(peakhour_rundir::RUNS_DIR).join(name.replacen(
                "-sweep-",
                &format!("-{kind}-"),
                1,
            ))
        },
        Path::to_path_buf,
    );
    if dir.join(marker).exists() {
        bail!(
            "{} already holds {marker}; choose another --out",
            dir.display()
        );
    }
    Ok(dir)
}

/// Writes `bytes` to `path`, naming the file when it fails.
pub(crate) fn write(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// The one-minute load average, noted beside a measurement on a shared
/// machine (`NaN` when unknown).
pub(crate) fn load_average() -> f64 {
    peakhour_monitor::server::load_average().unwrap_or(f64::NAN)
}
