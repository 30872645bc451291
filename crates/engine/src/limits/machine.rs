//! This machine's numbers as [`decide`](super::decide) takes them: the
//! descriptor limit (raised to the hard one), the ports per source address
//! and the memory available, read from `getrlimit` and `/proc`.

use std::path::Path;

use super::LimitsError;

/// The environment variable that pretends the ephemeral port range holds
/// this many ports: to try the source spreading (and test it) without
/// opening 28,000 connections.
pub const PORTS_PER_SOURCE_ENV: &str = "PEAKHOUR_PORTS_PER_SOURCE";

/// This machine's limits, as [`decide`](super::decide) takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// `RLIMIT_NOFILE` soft limit as found (before raising it to the hard one).
    pub descriptors_soft: u64,
    /// `RLIMIT_NOFILE` hard limit, to which the soft one was raised: what
    /// the process may hold at most (the soft limit if raising failed).
    pub descriptors_hard: u64,
    /// Ports in `ip_local_port_range`: local ports per source address and
    /// destination.
    pub ports_per_source: u64,
    /// `MemAvailable` in bytes.
    pub memory_available: u64,
}

impl Machine {
    /// Reads this machine's limits, and raises the process's soft
    /// descriptor limit to its hard one first (the connections need them;
    /// the hard limit is what no unprivileged process can pass).
    /// `PEAKHOUR_PORTS_PER_SOURCE` replaces the port range's size.
    pub fn read() -> Result<Machine, LimitsError> {
        use nix::sys::resource::{Resource as R, getrlimit, setrlimit};
        let (soft, hard) = getrlimit(R::RLIMIT_NOFILE).map_err(LimitsError::Rlimit)?;
        if soft < hard {
            let _ = setrlimit(R::RLIMIT_NOFILE, hard, hard);
        }
        // Failing to raise leaves the soft limit, which is then all there is.
        let (usable, _) = getrlimit(R::RLIMIT_NOFILE).map_err(LimitsError::Rlimit)?;
        let range = Path::new("/proc/sys/net/ipv4/ip_local_port_range");
        let ports = match std::env::var(PORTS_PER_SOURCE_ENV).ok() {
            Some(value) => value.trim().parse::<u64>().map_err(|_| LimitsError::Proc {
                path: format!("${PORTS_PER_SOURCE_ENV}"),
                why: format!("{value:?} is not a number of ports"),
            })?,
            None => port_range_size(&read_proc(range)?).ok_or_else(|| LimitsError::Proc {
                path: range.display().to_string(),
                why: "expected two port numbers".into(),
            })?,
        };
        let meminfo = Path::new("/proc/meminfo");
        let available = mem_available(&read_proc(meminfo)?).ok_or_else(|| LimitsError::Proc {
            path: meminfo.display().to_string(),
            why: "no MemAvailable line".into(),
        })?;
        Ok(Machine {
            descriptors_soft: soft,
            descriptors_hard: usable,
            ports_per_source: ports,
            memory_available: available,
        })
    }
}

fn read_proc(path: &Path) -> Result<String, LimitsError> {
    std::fs::read_to_string(path).map_err(|e| LimitsError::Proc {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// The number of ports in `ip_local_port_range`'s text ("32768\t60999").
pub fn port_range_size(text: &str) -> Option<u64> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let (low, high) = (fields.next()?.ok()?, fields.next()?.ok()?);
    (high >= low).then(|| high - low + 1)
}

/// `MemAvailable` in bytes from `/proc/meminfo`'s text.
pub fn mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_files_parse() {
        assert_eq!(port_range_size("32768\t60999\n"), Some(28_232));
        assert_eq!(port_range_size("60999 32768"), None);
        let meminfo = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(meminfo), Some(20_000_000 * 1024));
    }
}
