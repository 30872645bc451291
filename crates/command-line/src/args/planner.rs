//! The planner's command lines: `peakhour tasks`, `peakhour plan` and
//! `peakhour matrix` (docs/planner.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use peakhour_analysis::plan::Price;

use super::load::{ProfileArg, TargetArgs};
use super::parse_duration;

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err("expected a positive number of tasks per second".to_owned()),
    }
}

fn parse_window(text: &str) -> Result<Duration, String> {
    parse_duration(text).and_then(|d| {
        if d.is_zero() {
            Err("must be more than 0".to_owned())
        } else {
            Ok(d)
        }
    })
}

fn parse_price(text: &str) -> Result<Price, String> {
    text.parse()
        .map_err(|e: peakhour_analysis::plan::PlanError| e.to_string())
}

fn parse_size(text: &str) -> Result<u64, String> {
    peakhour_lab::Limits::parse_memory(text)
}

/// `peakhour tasks`
#[derive(Debug, Args)]
pub struct TasksArgs {
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The server and its users.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Simulated workstations (users) running each task, as seed 001 ran 1 to 20. With
    /// several counts every task runs at each; tasks.json holds the largest, and
    /// tasks-Nw.json each count.
    #[arg(
        long,
        value_name = "N,N,...",
        value_delimiter = ',',
        default_value = "10",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub workstations: Vec<u32>,
    /// Tasks per second each workstation starts (a steady, evenly spaced rate).
    #[arg(long, value_name = "PER_S", default_value_t = 0.5, value_parser = parse_rate)]
    pub rate: f64,
    /// Which tasks to run (default: every action of the profile, then logon,
    /// idle_session, deliver and search_unindexed).
    #[arg(long, value_name = "NAME,NAME,...", value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// The measured steady window of each task.
    #[arg(long, value_name = "DURATION", default_value = "45s", value_parser = parse_window)]
    pub duration: Duration,
    /// Before each window: workstations log on and the rate settles.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub ramp_up: Duration,
    /// After each window: in-flight tasks finish and deliveries arrive.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub drain: Duration,
    /// The idle baseline measured first (and subtracted from every task).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub baseline: Duration,
    /// Sessions the idle_session task holds open at its largest step (memory is
    /// measured at 0, half and all of them).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub sessions: u32,
    /// Seed for init, schedules and message content.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Skip `init` (the mailboxes are already filled).
    #[arg(long)]
    pub no_init: bool,
    /// Output directory (default: runs/TIME-tasks-PROFILE).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `peakhour plan`
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The tasks.json written by `peakhour tasks`.
    #[arg(long, value_name = "FILE")]
    pub tasks: PathBuf,
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// User counts to size for, e.g. 1000,5000,10000.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', num_args = 1.., required = true)]
    pub users: Vec<u64>,
    /// Day compression of the rates (default: the profile's `speed`). A sweep run with
    /// --speed 60 is planned with --speed 60.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// The share of each resource the plan may use.
    #[arg(long, value_name = "FRACTION", default_value_t = peakhour_analysis::plan::DEFAULT_HEADROOM)]
    pub headroom: f64,
    /// Sessions each user holds open (memory and the idle_session task).
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub sessions_per_user: f64,
    /// The host's CPUs (default: this machine's, or a shaped lab's --host-lab limit).
    #[arg(long, value_name = "CORES")]
    pub host_cpus: Option<f64>,
    /// The host's memory, e.g. 1G (default: this machine's MemTotal, or the lab's limit).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub host_memory: Option<u64>,
    /// Storage requests per second the host's disks sustain (without it, disk I/O
    /// cannot run out).
    #[arg(long, value_name = "IOPS")]
    pub host_disk_iops: Option<f64>,
    /// Storage throughput the host's disks sustain, KiB/s.
    #[arg(long, value_name = "KIB_S")]
    pub host_disk_kib_s: Option<f64>,
    /// Network throughput the host's NIC sustains (in + out), KiB/s.
    #[arg(long, value_name = "KIB_S")]
    pub host_net_kib_s: Option<f64>,
    /// Take the host's CPUs and memory from this shaped lab's limits.
    #[arg(long, value_name = "DIR")]
    pub host_lab: Option<PathBuf>,
    /// QoS: the weighted p95 limit in ms (default: the profile's).
    #[arg(long, value_name = "MS")]
    pub qos_p95_ms: Option<f64>,
    /// A sweep directory (or its capacity.json) measured on the same host: its QoS
    /// capacity becomes max_users_at_qos, with the model beside it.
    #[arg(long, value_name = "DIR|FILE")]
    pub sweep: Option<PathBuf>,
    /// A `peakhour run --window peak-hour` directory from the lab the tasks were measured
    /// on (repeat it: one at half and one at all of the sessions): memory per session is then
    /// what those working sessions held, carried to the end of the hour, not idle sessions'.
    #[arg(long, value_name = "DIR")]
    pub working_run: Vec<PathBuf>,
    /// A price for seed 004's price/performance, e.g. 2659 or 2659USD.
    #[arg(long, value_name = "AMOUNT[CURRENCY]", value_parser = parse_price)]
    pub price: Option<Price>,
    /// Print plan.json on stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also write plan.json, plan.csv and plan.html into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `peakhour matrix`
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// CPU caps of the grid, e.g. 0.5,1,2.
    #[arg(long, value_name = "CORES,...", value_delimiter = ',', num_args = 1.., required = true)]
    pub cpus: Vec<f64>,
    /// Memory caps of the grid, e.g. 256M,1G.
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', num_args = 1.., required = true, value_parser = parse_size)]
    pub memory: Vec<u64>,
    /// Simulated users in every cell.
    #[arg(long, value_name = "N")]
    pub users: u32,
    /// Day compression of every cell's run.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// The measured steady phase of each cell.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Users log on staggered over this long before measuring starts.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub ramp_up: Duration,
    /// Time after the steady phase for deliveries to arrive.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub drain: Duration,
    /// One seed for every cell's init and run.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Connections one Dovecot imap process serves in every cell's lab.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub imap_client_limit: u32,
    /// Where the results go (default: runs/TIME-matrix-PROFILE); each cell's lab is made
    /// in DIR/labs and removed after its run.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}
