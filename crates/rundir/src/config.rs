//! `config.toml`: the resolved configuration of a run, with every setting
//! and no credential, as a typed struct written and read by the `toml`
//! crate.
//!
//! The `[run]`, `[target]` and `[monitor]` sections are typed; the resolved
//! plan (`Plan::to_toml`: seed, users, rates, the profile ...) is kept as a
//! TOML table at the top level, in the plan's own order.

use peakhour_workload::{HumanDuration, Plan};
use serde::{Deserialize, Serialize};

use crate::RunDirError;

/// The first line of every `config.toml`.
pub(crate) fn header() -> String {
    format!(
        "# peakhour {} run configuration (no credentials are stored)\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// A run's configuration, as `config.toml` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// `[run]`: the phases and timing.
    pub run: RunSection,
    /// `[target]`: where the load went.
    pub target: TargetSection,
    /// `[monitor]`: the server monitor's settings.
    pub monitor: MonitorSection,
    /// The resolved plan's keys and tables (`seed`, `users`, `[rates.*]`,
    /// `[profile]` ...), as [`Plan::to_toml`] writes them.
    #[serde(flatten)]
    pub plan: toml::Table,
}

/// `[run]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunSection {
    /// The logon phase.
    pub ramp_up: HumanDuration,
    /// The measured steady phase.
    pub duration: HumanDuration,
    /// The longest drain.
    pub drain: HumanDuration,
    /// The recorder's interval.
    pub interval: HumanDuration,
    /// The longest an action may take.
    pub action_timeout: HumanDuration,
}

/// `[target]`: the endpoints as recorded, e.g. `127.0.0.1:10143` or
/// `127.0.0.1:10143 (STARTTLS)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSection {
    /// The IMAP endpoint.
    pub imap: String,
    /// The SMTP submission endpoint.
    pub smtp: String,
    /// What weakened the run's security (certificates not verified,
    /// passwords in plain text off the machine), one sentence each; absent
    /// when nothing did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_shortcuts: Vec<String>,
}

/// `[monitor]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MonitorSection {
    /// The sampling interval.
    pub interval: HumanDuration,
    /// The shortest window of a high average.
    pub high_average_window: HumanDuration,
    /// How long the idle server was sampled before the load.
    pub baseline: HumanDuration,
}

impl MonitorSection {
    /// The settings as the report's monitor configuration lists them.
    pub fn entries(&self) -> Vec<(String, String)> {
        [
            ("configured interval", self.interval),
            ("configured high average window", self.high_average_window),
            ("configured baseline", self.baseline),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect()
    }
}

impl RunConfig {
    /// The configuration of a run of `plan`.
    pub fn new(
        run: RunSection,
        target: TargetSection,
        monitor: MonitorSection,
        plan: &Plan,
    ) -> Result<Self, RunDirError> {
        Ok(Self {
            run,
            target,
            monitor,
            plan: toml::from_str(&plan.to_toml()?)?,
        })
    }

    /// The file's text: a comment line, the plan's top-level keys (TOML puts
    /// keys before tables), then `[run]`, `[target]`, `[monitor]` and the
    /// plan's tables.
    pub fn to_toml(&self) -> Result<String, RunDirError> {
        Ok(header() + &toml::to_string(self)?)
    }
}
