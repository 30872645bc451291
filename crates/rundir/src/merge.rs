//! `peakhour merge`: the run directories of a distributed run's shards
//! made into one run directory, as if one process had run the whole
//! population (see `peakhour_analysis::merge_shards` for the arithmetic).

use std::path::{Path, PathBuf};

use peakhour_analysis::{Summary, merge_shards};

use crate::{RunDir, RunDirError, RunFile};

/// What [`merge_runs`] did.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// The merged run's summary, as written.
    pub summary: Summary,
    /// Shard directories rebuilt from their journal first (killed shards).
    pub recovered: Vec<PathBuf>,
    /// The shard whose server monitor data the merged run took, if any had.
    pub monitor_from: Option<PathBuf>,
    /// What the merge found worth saying (missing, late or interrupted
    /// shards; copies nobody sent), one sentence each.
    pub warnings: Vec<String>,
}

/// The files of the server monitor, taken from one shard, never summed:
/// every shard watched the same server.
const MONITOR_FILES: [RunFile; 3] = [RunFile::Monitor, RunFile::MonitorSummary, RunFile::Host];

/// Merges the shards in `shards` into a new run directory `out`: a killed
/// shard is first rebuilt from its journal (as `peakhour report` does);
/// the records are added ([`merge_shards`]); `config.toml` and the server
/// monitor's files (`monitor.csv`, `monitor-summary.txt`, `host.json`) come
/// from the lowest shard that has them; then the results and the report are
/// written as a run writes them.
pub fn merge_runs(shards: &[PathBuf], out: &Path) -> Result<MergedRun, RunDirError> {
    let out = RunDir::create(out)?;
    if out.holds_run() {
        return Err(RunDirError::OutputHoldsRun(out.path().to_owned()));
    }
    let mut recovered = Vec::new();
    let mut records = Vec::with_capacity(shards.len());
    for path in shards {
        let dir = RunDir::new(path);
        if dir.recover()?.is_some() {
            recovered.push(path.clone());
        }
        records.push((dir.read_record()?, dir));
    }
    // The lowest shard first: its config and monitor are the ones kept.
    records.sort_by_key(|(r, _)| r.meta.shards.first().map_or(u32::MAX, |m| m.index));
    let dirs: Vec<RunDir> = records.iter().map(|(_, d)| d.clone()).collect();
    let records: Vec<_> = records.into_iter().map(|(r, _)| r).collect();
    let merged = merge_shards(&records)?;

    if let Some(config) = dirs
        .iter()
        .find_map(|d| d.read_optional(RunFile::Config).transpose())
    {
        let text = format!(
            "# Merged by `peakhour merge` from {} shards; the shards' own settings follow.\n{}",
            dirs.len(),
            config?
        );
        out.write(RunFile::Config, text.as_bytes())?;
    }
    let monitor_from = dirs.iter().find(|d| d.has(RunFile::Monitor));
    if let Some(source) = monitor_from {
        for file in MONITOR_FILES {
            if let Some(text) = source.read_optional(file)? {
                out.write(file, text.as_bytes())?;
            }
        }
    }
    let summary = Summary::compute(&merged.record)
        .map_err(|e| out.parse_error(RunFile::Record, ".", e.to_string()))?;
    out.write_results(&merged.record, &summary)?;
    out.write_report()?;
    Ok(MergedRun {
        summary,
        recovered,
        monitor_from: monitor_from.map(|d| d.path().to_owned()),
        warnings: merged.warnings,
    })
}
