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

impl MergedRun {
    /// What a person should read about the merge, one line each: the shards
    /// rebuilt from their journal, the warnings, and where the server
    /// monitor's data came from.
    pub fn notes(&self) -> Vec<String> {
        notes(
            &self.recovered,
            &self.warnings,
            self.monitor_from.as_deref(),
        )
    }
}

fn notes(recovered: &[PathBuf], warnings: &[String], monitor_from: Option<&Path>) -> Vec<String> {
    let rebuilt = recovered.iter().map(|path| {
        format!(
            "{}: rebuilt from its journal first (the shard was killed)",
            path.display()
        )
    });
    let warnings = warnings.iter().map(|w| format!("warning: {w}"));
    let monitor = match monitor_from {
        Some(dir) => format!("server monitor data from {}", dir.display()),
        None => "no shard had server monitor data".to_owned(),
    };
    rebuilt.chain(warnings).chain([monitor]).collect()
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
    // Before anything is read, recovered or written (issue 26, item 5).
    RunDir::check_unused(out)?;
    let out = RunDir::create(out)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_name_rebuilt_shards_then_warnings_then_the_monitors_source() {
        let recovered = [PathBuf::from("s1")];
        let warnings = ["shard 2 started late".to_owned()];
        assert_eq!(
            notes(&recovered, &warnings, Some(Path::new("s0"))),
            [
                "s1: rebuilt from its journal first (the shard was killed)",
                "warning: shard 2 started late",
                "server monitor data from s0",
            ]
        );
        assert_eq!(notes(&[], &[], None), ["no shard had server monitor data"]);
    }
}
