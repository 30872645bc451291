//! The session tasks measured: each run with the server monitor sampling
//! beside it (`monitor.csv` in the task's directory), and what the monitor
//! saw read into the planner's terms by `peakhour_analysis::monitor::server`. The idle
//! baseline every task's cost is measured against is measured here too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use peakhour_analysis::monitor::server::{
    measure_window, memory_fit, seconds_window, server_session_memory_bytes, task_run, window_mean,
};
use peakhour_analysis::plan::{IdleBaseline, LatencyMeasurement, MemoryFit, TaskRun, TaskUnit};
use peakhour_lab::LabStatus;
use peakhour_monitor::{LocalConfig, LocalSource, Monitor, MonitorConfig, MonitorError};
use tokio::time::Instant;

use peakhour_engine::session_tasks::{
    IdleSteps, Schedule, SessionTask, TaskPopulation, hold_idle_sessions, run_pool,
};

/// Why a task could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The task's directory or its `monitor.csv` cannot be created.
    #[error("cannot create {}", path.display())]
    Create {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The monitor failed.
    #[error(transparent)]
    Monitor(#[from] MonitorError),
}

/// What a measurement gave, and what went wrong on the way (one line each,
/// for the person watching).
#[derive(Debug, Default)]
pub struct Measured {
    /// The task's run, `None` when nothing could be measured.
    pub run: Option<TaskRun>,
    /// The memory model (idle sessions only).
    pub memory: Option<MemoryFit>,
    /// Errors counted during the task.
    pub notes: Vec<String>,
}

/// Measures session tasks against one population, the monitor watching the
/// lab's servers (or this host's mail servers).
pub struct TaskMeter<'a> {
    /// Who signs in.
    pub population: &'a TaskPopulation,
    /// The lab, whose servers the monitor watches.
    pub lab: Option<&'a LabStatus>,
    /// Before the measured window.
    pub ramp_up: Duration,
    /// The measured window.
    pub duration: Duration,
    /// After it.
    pub drain: Duration,
    /// Tasks per second per workstation.
    pub rate: f64,
    /// Idle sessions wanted at most.
    pub sessions: u32,
    /// The monitor's interval.
    pub interval: Duration,
}

impl TaskMeter<'_> {
    /// A monitor on this runtime writing `dir/monitor.csv`, its time counted
    /// from `origin`.
    fn start_monitor(&self, dir: &Path, origin: Instant) -> Result<Monitor, MeasureError> {
        let create = |path: &Path| {
            let path = path.to_owned();
            move |source| MeasureError::Create { path, source }
        };
        std::fs::create_dir_all(dir).map_err(create(dir))?;
        let config = match self.lab {
            Some(lab) => LocalConfig {
                groups: lab.monitor_groups(),
                cgroup: lab.cgroup_files(),
                mail: lab.mail_probes(),
                ..LocalConfig::default()
            },
            None => LocalConfig::default(),
        };
        // The tasks' own bytes: the server's network cost, whoever else
        // shares the machine's interfaces.
        let config = LocalConfig {
            client_bytes: Some(peakhour_lab::client_wire_bytes),
            ..config
        };
        let source = LocalSource::new(config)?;
        let path = dir.join("monitor.csv");
        let csv = std::fs::File::create(&path).map_err(create(&path))?;
        let config = MonitorConfig {
            interval: self.interval,
            origin: Some(origin),
            ..MonitorConfig::default()
        };
        Ok(Monitor::start(source, Some(csv), config)?)
    }

    /// The idle server over `length`, and its mean session memory
    /// (`server_session_memory_bytes`: what the memory model's line starts from).
    pub async fn idle_baseline(
        &self,
        dir: &Path,
        length: Duration,
    ) -> Result<(IdleBaseline, Option<f64>), MeasureError> {
        let monitor = self.start_monitor(dir, Instant::now())?;
        tokio::time::sleep(length + self.interval / 2).await;
        let table = monitor.finish().await?.table;
        let window = seconds_window(0.0, length.as_secs_f64(), self.interval);
        let memory = window_mean(&table, &server_session_memory_bytes(&table), window);
        Ok((measure_window(&table, window), memory))
    }

    /// A session task from a pool of `ws` workstations, with the monitor beside it.
    pub async fn pool(
        &self,
        kind: SessionTask,
        ws: u32,
        dir: &Path,
    ) -> Result<Measured, MeasureError> {
        let load_start = Instant::now() + self.interval;
        let monitor = self.start_monitor(dir, load_start)?;
        let schedule = Schedule {
            load_start,
            steady_start: load_start + self.ramp_up,
            steady_end: load_start + self.ramp_up + self.duration,
            drain: self.drain,
        };
        let result = run_pool(kind, self.population, ws, self.rate, schedule).await;
        let table = monitor.finish().await?.table;
        let mut notes = Vec::new();
        if result.errors > 0 {
            notes.push(format!(
                "{}: {} of {} failed (last: {})",
                kind.name(),
                result.errors,
                result.errors + result.completed,
                result.last_error.as_deref().unwrap_or("?")
            ));
        }
        let steady = self.ramp_up.as_secs_f64();
        let end = steady + self.duration.as_secs_f64();
        let window = seconds_window(steady, end, self.interval);
        let latency = LatencyMeasurement::from_histogram(&result.latency);
        let completed = result.completed as f64;
        let run = task_run(kind.name(), ws, completed, latency, &table, window);
        Ok(Measured {
            run: Some(run),
            memory: None,
            notes,
        })
    }

    /// Idle sessions: half of the sessions held 5 s, then all of them for
    /// the window; memory at 0 (the baseline), half and all gives the fit.
    pub async fn idle_sessions(
        &self,
        dir: &Path,
        baseline_memory: Option<f64>,
    ) -> Result<Measured, MeasureError> {
        let users = self.population.addresses.len() as u32;
        // Dovecot allows 10 connections per user and address by default.
        let wanted = self.sessions.min(users.saturating_mul(9)).max(2) as usize;
        let origin = Instant::now();
        let monitor = self.start_monitor(dir, origin)?;
        let steps = IdleSteps {
            half: Duration::from_secs(5),
            ramp_up: self.ramp_up,
            steady: self.duration,
            tail: self.interval,
        };
        let hold = hold_idle_sessions(self.population, wanted, steps).await;
        let table = monitor.finish().await?.table;
        let mut measured = Measured::default();
        if hold.errors > 0 {
            let last = hold.last_error.unwrap_or_default();
            let note = format!("idle_session: {} not opened (last: {last})", hold.errors);
            measured.notes.push(note);
        }
        if hold.full == 0 {
            return Ok(measured);
        }
        let window = |(from, to): (Instant, Instant)| {
            let s = |at: Instant| (at - origin).as_secs_f64();
            seconds_window(s(from), s(to), self.interval)
        };
        let held = [
            (hold.half, window(hold.half_held)),
            (hold.full, window(hold.steady)),
        ];
        measured.memory = memory_fit(&table, baseline_memory, &held)
            .inspect_err(|e| measured.notes.push(format!("no memory model: {e}")))
            .ok();
        let full = hold.full as u32;
        let mut run = task_run("idle_session", full, 0.0, None, &table, held[1].1);
        run.unit = TaskUnit::SessionHour;
        run.tasks_completed = hold.full as f64 * run.measured.window_s / 3600.0;
        run.memory_per_session_bytes = measured.memory.as_ref().map(|f| f.per_session_bytes);
        measured.run = Some(run);
        Ok(measured)
    }
}
