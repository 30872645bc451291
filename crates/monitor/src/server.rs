//! What the planner reads from this machine itself, from `/proc`: its
//! cores and memory, and its load. What a monitor table says about the
//! server is pure and lives in `peakhour_analysis::monitor::server`.

/// This machine's cores and memory, from `/proc`.
pub fn host_capacity() -> (f64, u64) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024);
    (cores, memory)
}

/// The one-minute load average now, to note beside a measurement made on a
/// shared machine.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
