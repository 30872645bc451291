//! Measures the monitor's own CPU cost on this machine.
//!
//! ```text
//! cargo run --release -p peakhour-monitor --example monitor_cost [-- SECONDS]
//! ```
//!
//! First 200 back-to-back local samples (CPU µs per sample, thread CPU
//! clock), then a real 1 s monitor for SECONDS (default 10) writing CSV to
//! a sink, reported as % of one core. Prints figures; asserts nothing.

use std::time::Duration;

use peakhour_analysis::monitor::{Thresholds, TimeWindow, use_summary};
use peakhour_monitor::{LocalConfig, LocalSource, Monitor, MonitorConfig, cpu_timed};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10);
    let processes = std::fs::read_dir("/proc")?
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .count();

    let mut source = LocalSource::new(LocalConfig::default())?;
    source.sample_now()?;
    let mut costs: Vec<f64> = Vec::with_capacity(200);
    let mut columns = 0;
    for _ in 0..200 {
        let (sample, cpu) = cpu_timed(|| source.sample_now());
        columns = sample?.metrics().len() + 1;
        costs.push(cpu.as_secs_f64() * 1e6);
    }
    costs.sort_by(f64::total_cmp);
    let mean = costs.iter().sum::<f64>() / costs.len() as f64;
    println!("host: {processes} processes, {columns} CSV columns");
    println!(
        "local sample, back to back: mean {mean:.0} µs CPU, median {:.0} µs, max {:.0} µs",
        costs[costs.len() / 2],
        costs[costs.len() - 1]
    );
    println!(
        "  => at 1 s sampling: {:.3}% of one core",
        mean / 1e6 * 100.0
    );

    let config = MonitorConfig {
        interval: Duration::from_secs(1),
        duration: Some(Duration::from_secs(seconds)),
        ..MonitorConfig::default()
    };
    let monitor = Monitor::start(
        LocalSource::new(LocalConfig::default())?,
        Some(std::io::sink()),
        config,
    )?;
    let report = monitor.join().await?;
    println!(
        "monitor, {} s at 1 s (sampling + CSV): {} samples, mean {:.0} µs, max {:.0} µs CPU per sample, {:.3}% of one core",
        seconds,
        report.cost.samples,
        report.cost.mean_sample_us(),
        report.cost.max_sample_cpu.as_secs_f64() * 1e6,
        report.cost.pct_of_one_core()
    );
    let verdict = use_summary(&report.table, TimeWindow::ALL, &Thresholds::DEFAULT);
    println!("USE verdict over the run: {}", verdict.line);
    Ok(())
}
