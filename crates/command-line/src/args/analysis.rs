//! `peakhour monitor` and `peakhour analyze ...`: arguments of the commands
//! that read a server or a table rather than load a server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::parse_duration;

/// `peakhour monitor`
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("length").required(true).args(["duration", "until_signal"])))]
pub struct MonitorArgs {
    /// Time between samples.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub interval: std::time::Duration,
    /// Stop after this long (SIGINT or SIGTERM stop it earlier; everything is still written).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Run until SIGINT (Ctrl-C) or SIGTERM, then write the summary.
    #[arg(long)]
    pub until_signal: bool,
    /// Output directory for monitor.csv and monitor-summary.txt (default: runs/TIME-monitor).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Scrape a Prometheus node_exporter instead of the local /proc, e.g.
    /// http://127.0.0.1:9100/metrics (system metrics only: no process groups or queues).
    #[arg(long, value_name = "URL")]
    pub node_exporter: Option<String>,
    /// Postfix queue directory to count (default: the lab's, if --lab-dir holds a lab).
    #[arg(long, value_name = "DIR")]
    pub postfix_queue: Option<PathBuf>,
    /// Dovecot's listening ports, to count its client connections (default: the lab's).
    #[arg(long, value_name = "PORT", value_delimiter = ',')]
    pub dovecot_port: Vec<u16>,
    /// The lab directory whose queue and ports are the defaults.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub lab_dir: PathBuf,
    /// Another process group (repeatable; columns group_NAME_*): NAME=REGEX over the
    /// command name, e.g. 'nginx=^nginx', or `NAME=KIND:PATTERN[,KIND:PATTERN]` with KIND
    /// name, exe, user or parent, e.g. 'cyrus=exe:^/usr/lib/cyrus/,user:cyrus'.
    #[arg(long, value_name = "NAME=SPEC")]
    pub group: Vec<String>,
    /// The shortest window of the high average (highest sustained mean).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub high_average_window: std::time::Duration,
}

/// `peakhour analyze ...`
#[derive(Debug, Subcommand)]
pub enum AnalyzeCommand {
    /// Peak, shape, QoS capacity, USL fit and knee of a load/throughput table.
    ///
    /// Example: peakhour analyze capacity tests/fixtures/netbench-nt-1cpu.csv
    /// --load-column clients --throughput-column bytes_per_sec --json
    Capacity(AnalyzeCapacityArgs),
}

/// `peakhour analyze capacity`
#[derive(Debug, Args)]
pub struct AnalyzeCapacityArgs {
    /// A CSV (or tab-separated) file with a header row; `#` lines are comments.
    #[arg(value_name = "FILE.csv")]
    pub file: PathBuf,
    /// The column holding the load (users, clients, processes).
    #[arg(long, value_name = "NAME")]
    pub load_column: String,
    /// The column holding the throughput.
    #[arg(long, value_name = "NAME")]
    pub throughput_column: String,
    /// A column holding the p95 response time in ms, for the QoS capacity.
    #[arg(long, value_name = "NAME")]
    pub p95_column: Option<String>,
    /// QoS: the p95 limit in ms.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub qos_p95_ms: f64,
    /// Kneedle's sensitivity S (larger is more conservative).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub knee_sensitivity: f64,
    /// Print JSON (peak, shape, qos, usl, knee, warnings) instead of text.
    #[arg(long)]
    pub json: bool,
}
