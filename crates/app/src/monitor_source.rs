//! The monitor's local source beside a load: what the lab says to watch
//! (its servers' process groups, cgroups, queue and ports, through
//! `peakhour_lab::local_config`), with the `--group NAME=...` groups added.
//! The lab and the monitor meet here, not in the binary.

pub use peakhour_lab::Watching;
use peakhour_lab::{LabStatus, local_config};
use peakhour_monitor::{GroupSpec, LocalSource, MailProbes, MonitorError};

/// Why the local source could not start.
#[derive(Debug, thiserror::Error)]
pub enum MonitorSourceError {
    /// A `--group` that does not parse.
    #[error("--group {spec:?}")]
    Group {
        /// The group as given.
        spec: String,
        /// Why.
        #[source]
        source: MonitorError,
    },
    /// The source itself.
    #[error("cannot start the local monitor source")]
    Start(#[source] MonitorError),
}

/// The local source the lab (if any) describes for `watching`, with its
/// mail probes and the `groups` (`--group`) added.
pub fn local_source(
    groups: &[String],
    lab: Option<&LabStatus>,
    mail: MailProbes,
    watching: Watching,
) -> Result<LocalSource, MonitorSourceError> {
    let extra = groups
        .iter()
        .map(|spec| {
            GroupSpec::parse(spec).map_err(|source| MonitorSourceError::Group {
                spec: spec.clone(),
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    let config = local_config(lab, watching, mail, extra);
    LocalSource::new(config).map_err(MonitorSourceError::Start)
}
