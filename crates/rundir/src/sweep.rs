//! A sweep's directory: one run directory per step (`step-Nu`), read back
//! as the analysis's [`SweepStep`]; `capacity.csv` rewritten after every
//! step, and `capacity.json` and `capacity.html` once the curve is
//! analysed, and read back by the planner ([`read_qos_capacity`]). The
//! files' contents are `peakhour_report::capacity`'s.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use peakhour_analysis::capacity::sweep::{SweepAnalysis, SweepOutcome, SweepStep};
use peakhour_analysis::plan::{PricePerformance, SweepCapacity};
use peakhour_report::ReportError;
use peakhour_report::capacity::{
    CapacityJson, SweepPlan, capacity_json, sweep_html, sweep_json, write_capacity_csv,
};

use crate::atomic::write_atomic;
use crate::names::{DirKind, default_dir};
use crate::{RunDir, RunDirError, RunFile};

/// The directory of one sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepDir {
    path: PathBuf,
}

impl SweepDir {
    /// The sweep directory at `path` (nothing is read yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The directory of a new sweep of `profile` over `steps` users: `out`,
    /// or `runs/DATE-sweep-PROFILE`; refused when it already holds a sweep
    /// (`capacity.csv`, or the results of one of these steps).
    pub fn choose(
        out: Option<&Path>,
        started: SystemTime,
        profile: &str,
        steps: &[u32],
    ) -> Result<Self, RunDirError> {
        let path = out.map_or_else(
            || default_dir(started, DirKind::Sweep { profile }),
            Path::to_path_buf,
        );
        let dir = Self::new(path);
        let taken = |&users: &u32| dir.step(users).has(RunFile::Summary);
        if dir.csv_path().exists() || steps.iter().any(taken) {
            return Err(RunDirError::Holds {
                dir: dir.path,
                marker: "a sweep".to_owned(),
            });
        }
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A step's name, and its directory's: `step-50u`.
    pub fn step_name(users: u32) -> String {
        format!("step-{users}u")
    }

    /// The run directory of the step at `users` users.
    pub fn step(&self, users: u32) -> RunDir {
        RunDir::new(self.path.join(Self::step_name(users)))
    }

    /// The step at `users` users as the sweep's analysis takes it; `None`
    /// when the step wrote no `summary.json` (it ended without results).
    pub fn read_step(&self, users: u32) -> Result<Option<SweepStep>, RunDirError> {
        let step = self.step(users);
        if !step.has(RunFile::Summary) {
            return Ok(None);
        }
        let summary = step.read_summary()?;
        let name = Self::step_name(users);
        Ok(Some(SweepStep::from_summary(users, &name, &summary)))
    }

    /// `capacity.csv`.
    pub fn csv_path(&self) -> PathBuf {
        self.path.join("capacity.csv")
    }

    /// Writes `capacity.csv`: one row per step so far.
    pub fn write_csv(&self, steps: &[SweepStep]) -> Result<(), RunDirError> {
        let path = self.csv_path();
        let mut csv = Vec::new();
        write_capacity_csv(steps, &mut csv).map_err(render(&path))?;
        write_atomic(&path, &csv).map_err(RunDirError::io(path))
    }

    /// Writes `capacity.json` (with the price-performance when given) and
    /// `capacity.html`, for a sweep asked for as `plan` that ran `outcome`
    /// and was analysed as `sweep`.
    pub fn write_analysis(
        &self,
        plan: &SweepPlan<'_>,
        sweep: &SweepAnalysis,
        outcome: &SweepOutcome,
        price: Option<PricePerformance>,
    ) -> Result<(), RunDirError> {
        let mut json = sweep_json(plan, sweep, outcome);
        json.sweep.price_performance = price;
        let path = self.path.join("capacity.json");
        let text = capacity_json(&json).map_err(render(&path))?;
        write_atomic(&path, text.as_bytes()).map_err(RunDirError::io(path))?;
        let path = self.path.join("capacity.html");
        let html = sweep_html(plan, sweep, outcome);
        write_atomic(&path, html.as_bytes()).map_err(RunDirError::io(path))
    }
}

/// A sweep's QoS capacity, for the planner: read from its `capacity.json`,
/// `path` naming the file or the sweep directory that holds it.
pub fn read_qos_capacity(path: &Path) -> Result<SweepCapacity, RunDirError> {
    let file = if path.is_dir() {
        path.join("capacity.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(RunDirError::io(&file))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let doc: CapacityJson =
        serde_path_to_error::deserialize(de).map_err(|e| RunDirError::Parse {
            path: file.clone(),
            field: e.path().to_string(),
            message: e.into_inner().to_string(),
        })?;
    SweepCapacity::from_analysis(&doc.analysis, &file.display().to_string())
        .ok_or(RunDirError::NoQosCapacity(file))
}

fn render(path: &Path) -> impl FnOnce(ReportError) -> RunDirError {
    let path = path.to_path_buf();
    move |source| RunDirError::Render { path, source }
}
