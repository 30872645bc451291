//! `capacity-state.json`: what a search has measured, saved after every
//! step, so that the same command resumes without repeating a finished step.

use std::path::{Path, PathBuf};

use peakhour_analysis::capacity::answer::AnswerStep;
use serde::{Deserialize, Serialize};

use crate::CapacityError;

/// The state file's name in the output directory.
pub const STATE_FILE: &str = "capacity-state.json";

/// What a search must keep to resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchState {
    /// The settings the steps were measured with: a resumed search must
    /// use the same, or its steps would not compare.
    pub settings: StateSettings,
    /// The users whose mailboxes are initialized.
    pub initialized_users: u32,
    /// Seconds spent so far (steps and init), over every session.
    pub elapsed_s: f64,
    /// Every finished step and window, in order.
    pub steps: Vec<AnswerStep>,
}

/// The settings a resumed search must share with the first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateSettings {
    /// The profile as given.
    pub profile: String,
    /// `lab` or `explicit`.
    pub target: String,
    /// The windows of each step.
    pub windows: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// `--duration`, seconds.
    pub duration_s: Option<f64>,
    /// `--ramp-up`, seconds.
    pub ramp_up_s: f64,
    /// `--qos-p95-ms`.
    pub qos_p95_ms: Option<f64>,
}

impl SearchState {
    /// The state in `dir`, when a search left one there.
    pub fn load(dir: &Path) -> Result<Option<Self>, CapacityError> {
        let path = dir.join(STATE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| CapacityError::State(path, e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CapacityError::Io(path, e)),
        }
    }

    /// Writes the state into `dir` whole (a temporary file renamed), so
    /// that a kill leaves the previous state or the new one, never half.
    pub fn save(&self, dir: &Path) -> Result<(), CapacityError> {
        let path = dir.join(STATE_FILE);
        let tmp: PathBuf = dir.join(format!("{STATE_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| CapacityError::State(path.clone(), e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| CapacityError::Io(tmp.clone(), e))?;
        std::fs::rename(&tmp, &path).map_err(|e| CapacityError::Io(path, e))
    }
}
