//! `config.toml`: the resolved configuration of a run, with every setting
//! and no credential, as a typed struct written and read by the `toml`
//! crate.
//!
//! The `[run]`, `[target]` and `[monitor]` sections are typed; the resolved
//! plan (`Plan::to_toml`: seed, users, rates, the profile ...) is kept as a
//! TOML table at the top level, in the plan's own order.

use peakhour_engine::Target;
use peakhour_engine::files::{FileTarget, FileWorkload, RecordedValue};
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
    /// `--check-state`: the time between two state-check checkpoints;
    /// absent when the checks were off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_state: Option<HumanDuration>,
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
    /// The lab's directory when the target is a lab (`--lab-dir`); absent
    /// for an explicit target, whose software is known only from its
    /// greetings and capabilities, never from this host's packages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<String>,
    /// The local addresses the users connected from, round-robin by user,
    /// when one address had too few ephemeral ports for the run
    /// (`peakhour_engine::limits`); absent when the kernel chose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addresses: Vec<String>,
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

    /// The configuration of a mail run of `plan` against `target`, with the
    /// security shortcuts it took; the domains allowed outside the reserved
    /// test names are on record too (`[population] allowed_domains`).
    pub fn mail(
        run: RunSection,
        monitor: MonitorSection,
        plan: &Plan,
        target: &Target,
        security_shortcuts: Vec<String>,
        allowed_domains: &[String],
    ) -> Result<Self, RunDirError> {
        let target = TargetSection {
            imap: target.imap.to_string(),
            smtp: target.smtp.to_string(),
            security_shortcuts,
            // The caller says which lab, if any: it knows the lab's directory.
            lab: None,
            source_addresses: (target.options.source_addresses.iter())
                .map(ToString::to_string)
                .collect(),
        };
        let mut config = Self::new(run, target, monitor, plan)?;
        if !allowed_domains.is_empty() {
            let domains = allowed_domains.iter().cloned().map(toml::Value::String);
            let mut population = toml::Table::new();
            population.insert(
                "allowed_domains".into(),
                toml::Value::Array(domains.collect()),
            );
            config
                .plan
                .insert("population".into(), toml::Value::Table(population));
        }
        Ok(config)
    }

    /// The configuration of a file run: the phases, and the workload and
    /// target in `[files]` (no password). A file run has no mail endpoints.
    pub fn files(
        run: RunSection,
        monitor: MonitorSection,
        workload: &FileWorkload,
        target: &FileTarget,
        cleanup: bool,
    ) -> Self {
        let files: toml::Table = workload
            .recorded_settings(target, cleanup)
            .into_iter()
            .map(|(key, value)| {
                let value = match value {
                    RecordedValue::Text(t) => toml::Value::String(t),
                    RecordedValue::Number(n) => {
                        toml::Value::Integer(n.try_into().unwrap_or(i64::MAX))
                    }
                    RecordedValue::Flag(b) => toml::Value::Boolean(b),
                };
                (key.to_owned(), value)
            })
            .collect();
        let mut plan = toml::Table::new();
        plan.insert("profile".into(), workload.name().into());
        plan.insert("users".into(), i64::from(workload.clients()).into());
        let seed = i64::try_from(workload.seed()).unwrap_or(i64::MAX);
        plan.insert("seed".into(), seed.into());
        plan.insert("files".into(), toml::Value::Table(files));
        let target = TargetSection {
            imap: String::new(),
            smtp: String::new(),
            security_shortcuts: Vec::new(),
            lab: None,
            source_addresses: Vec::new(),
        };
        Self {
            run,
            target,
            monitor,
            plan,
        }
    }

    /// The file's text: a comment line, the plan's top-level keys (TOML puts
    /// keys before tables), then `[run]`, `[target]`, `[monitor]` and the
    /// plan's tables.
    pub fn to_toml(&self) -> Result<String, RunDirError> {
        Ok(header() + &toml::to_string(self)?)
    }
}
