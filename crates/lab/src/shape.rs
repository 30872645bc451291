//! A lab's shape (its CPU and memory caps) as the planner and the summary
//! see it: the capacity its servers have, a label for a shape, the caps in
//! `summary.json`, the shapes of a matrix, and a lab started on free ports.

use peakhour_analysis::ServerLimits;

use crate::config::{LabConfig, Limits, Ports};
use crate::error::LabError;
use crate::lifecycle::{Lab, UpReport};
use crate::state::{LabStatus, LimitsStatus};

/// How many other sets of free ports a lab tries when a port it was given
/// is taken before it binds it.
const PORT_RETRIES: usize = 3;

/// `0.5 CPUs × 1024 MiB`-style label of a shape (`all CPUs`, `all memory`
/// for no cap).
pub fn shape_label(cpus: Option<f64>, memory: Option<u64>) -> String {
    let cpus = cpus.map_or_else(|| "all CPUs".to_owned(), |c| format!("{c} CPUs"));
    let memory = memory.map_or_else(
        || "all memory".to_owned(),
        |m| format!("{} MiB", m / (1024 * 1024)),
    );
    format!("{cpus} × {memory}")
}

/// The CPUs and memory `lab`'s servers have: its caps where set, else this
/// host's (`peakhour_monitor::server::host_capacity`; memory `None` when
/// unknown).
pub fn server_capacity(lab: Option<&LabStatus>) -> (f64, Option<u64>) {
    let host = peakhour_monitor::server::host_capacity();
    match lab {
        Some(lab) => lab.limits.capacity(host),
        None => (host.0, (host.1 > 0).then_some(host.1)),
    }
}

impl LimitsStatus {
    /// The caps, each falling back to the host's `(cores, memory bytes)`
    /// (memory 0 for unknown).
    pub fn capacity(&self, (cores, memory): (f64, u64)) -> (f64, Option<u64>) {
        (
            self.cpus.unwrap_or(cores),
            self.memory_bytes.or((memory > 0).then_some(memory)),
        )
    }

    /// The caps for `summary.json`; `None` for a lab without caps.
    pub fn server_limits(&self) -> Option<ServerLimits> {
        (self.cpus.is_some() || self.memory_bytes.is_some()).then_some(ServerLimits {
            cpus: self.cpus,
            memory_bytes: self.memory_bytes,
        })
    }

    /// The shape's label ([`shape_label`]).
    pub fn label(&self) -> String {
        shape_label(self.cpus, self.memory_bytes)
    }
}

impl Limits {
    /// Every (CPUs, memory) pair of the two lists, checked as `lab up`
    /// checks `--cpus` and `--memory`, in order and without repeats.
    pub fn shapes(cpus: &[f64], memory: &[u64]) -> Result<Vec<(f64, u64)>, String> {
        let mut out = Vec::new();
        for &c in cpus {
            for &m in memory {
                Limits::shape(c, m)?;
                if !out.contains(&(c, m)) {
                    out.push((c, m));
                }
            }
        }
        Ok(out)
    }

    /// The caps of one shape.
    pub fn shape(cpus: f64, memory: u64) -> Result<Limits, String> {
        Limits::default()
            .with_cpus(cpus)
            .and_then(|l| l.with_memory(memory))
            .map_err(|e| format!("--cpus {cpus} --memory {memory}: {e}"))
    }
}

impl Lab {
    /// Starts a lab as `config` says, on free loopback ports (its own are
    /// replaced): a free port can be taken by another process before the lab
    /// binds it, and then other free ports are tried, up to 3 times.
    pub fn up_on_free_ports(config: &LabConfig) -> Result<UpReport, LabError> {
        let mut attempts = 0;
        loop {
            let ports = Ports::free().ok_or_else(|| {
                LabError::BadConfig("no free loopback ports for the lab".to_owned())
            })?;
            let config = LabConfig {
                ports,
                ..config.clone()
            };
            match Lab::up(&config) {
                Err(LabError::PortInUse { .. }) if attempts < PORT_RETRIES => attempts += 1,
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1024 * 1024 * 1024;

    fn caps(cpus: Option<f64>, memory_bytes: Option<u64>) -> LimitsStatus {
        LimitsStatus {
            cpus,
            memory_bytes,
            cgroup: None,
        }
    }

    #[test]
    fn a_shape_reads_as_cpus_by_mebibytes() {
        assert_eq!(shape_label(Some(0.5), Some(GIB)), "0.5 CPUs × 1024 MiB");
        assert_eq!(shape_label(None, None), "all CPUs × all memory");
        assert_eq!(caps(Some(2.0), None).label(), "2 CPUs × all memory");
    }

    #[test]
    fn a_cap_replaces_the_hosts_figure_and_only_that_one() {
        let host = (8.0, 16 * GIB);
        assert_eq!(caps(Some(1.5), None).capacity(host), (1.5, Some(16 * GIB)));
        assert_eq!(caps(None, Some(GIB)).capacity(host), (8.0, Some(GIB)));
        assert_eq!(caps(None, None).capacity((4.0, 0)), (4.0, None));
    }

    #[test]
    fn only_a_capped_lab_puts_limits_in_the_summary() {
        assert_eq!(caps(None, None).server_limits(), None);
        let limits = caps(Some(0.5), None).server_limits().expect("capped");
        assert_eq!(limits.cpus, Some(0.5));
        assert_eq!(limits.memory_bytes, None);
    }

    #[test]
    fn the_shapes_of_a_matrix_are_every_pair_once_and_each_checked() {
        let shapes = Limits::shapes(&[0.5, 1.0, 0.5], &[GIB, 2 * GIB]).expect("valid");
        assert_eq!(
            shapes,
            [(0.5, GIB), (0.5, 2 * GIB), (1.0, GIB), (1.0, 2 * GIB)]
        );
        let error = Limits::shapes(&[1.0], &[1024]).expect_err("1 KiB is too little");
        assert!(error.starts_with("--cpus 1 --memory 1024: "), "{error}");
    }
}
