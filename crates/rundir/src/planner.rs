//! The planner's use of run directories: a new directory for `tasks` or
//! `matrix`, and what a `peakhour run` child measured read back as one
//! task of `peakhour tasks` or one cell of `peakhour matrix`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use peakhour_analysis::monitor::MetricTable;
use peakhour_analysis::monitor::server::{
    matrix_cell_metrics, matrix_cell_spread, steady_window, task_run,
};
use peakhour_analysis::plan::latency_spread;
use peakhour_analysis::plan::{LatencyMeasurement, MatrixCell, TaskRun};

use crate::names::{DirKind, RUNS_DIR, dir_name};
use crate::{RunDir, RunDirError};

/// `out`, or `runs/DATE-COMMAND-PROFILE` (`command` is `tasks` or
/// `matrix`); refused when it already holds `marker`, the file the command
/// writes last.
pub fn planner_dir(
    out: Option<&Path>,
    started: SystemTime,
    command: &str,
    profile: &str,
    marker: &str,
) -> Result<PathBuf, RunDirError> {
    let dir = out.map_or_else(
        || {
            let kind = DirKind::Planner { command, profile };
            PathBuf::from(RUNS_DIR).join(dir_name(started, kind))
        },
        Path::to_path_buf,
    );
    if dir.join(marker).exists() {
        return Err(RunDirError::Holds {
            dir,
            marker: marker.to_owned(),
        });
    }
    Ok(dir)
}

/// One action measured alone by a `peakhour run` child, as a task of
/// `peakhour tasks`.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionTask {
    /// The task's run, `None` when the run recorded no such action.
    pub run: Option<TaskRun>,
    /// What a person should know: the action missing, or some of it failed.
    pub notes: Vec<String>,
}

impl RunDir {
    /// The action `name` of this run, run by `workstations` users with the
    /// monitor sampling every `interval`: its count and latency from
    /// `summary.json`, what the server did from `monitor.csv` over the
    /// steady phase.
    pub fn action_task(
        &self,
        name: &str,
        workstations: u32,
        interval: Duration,
    ) -> Result<ActionTask, RunDirError> {
        let summary = self.read_summary()?;
        let table = self.monitor_of_run()?;
        let Some(action) = summary.actions.get(name) else {
            return Ok(ActionTask {
                run: None,
                notes: vec![format!("{name}: the run recorded no {name} action")],
            });
        };
        let mut notes = Vec::new();
        if action.errors > 0 {
            notes.push(format!(
                "{name}: {} of {} failed ({:?})",
                action.errors,
                action.errors + action.count,
                action.errors_by_kind
            ));
        }
        let latency = action
            .p50_ms
            .zip(action.p95_ms)
            .map(|(p50, p95)| LatencyMeasurement {
                p50_ms: p50,
                p95_ms: p95,
                samples: action.count,
            });
        let window = steady_window(&summary, interval);
        let count = action.count as f64;
        let run = task_run(name, workstations, count, latency, &table, window);
        Ok(ActionTask {
            run: Some(run),
            notes,
        })
    }

    /// This run as the matrix cell of a lab shaped to `cpus` and
    /// `memory_bytes`, the monitor having sampled every `interval`.
    pub fn matrix_cell(
        &self,
        cpus: f64,
        memory_bytes: u64,
        interval: Duration,
    ) -> Result<MatrixCell, RunDirError> {
        let summary = self.read_summary()?;
        let table = self.monitor_of_run()?;
        let mut spread = matrix_cell_spread(&summary, &table, interval, cpus);
        // The p95s' spread needs the intervals; a run without its record
        // still gives a cell, judged by the threshold alone.
        if let Ok(record) = self.read_record()
            && let Ok(latency) = latency_spread(&record, &summary.score.weights)
        {
            spread.extend(latency);
        }
        Ok(MatrixCell {
            cpus,
            memory_bytes,
            metrics: matrix_cell_metrics(&summary, &table, interval, cpus),
            bottleneck: summary.bottleneck.as_ref().map(|b| b.resource.clone()),
            run_dir: Some(self.path().display().to_string()),
            spread,
        })
    }

    /// `monitor.csv`, which a run measured for the planner must have.
    fn monitor_of_run(&self) -> Result<MetricTable, RunDirError> {
        self.read_monitor()?
            .ok_or_else(|| RunDirError::NoMonitor(self.path().to_path_buf()))
    }
}
