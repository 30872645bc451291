//! The command line, as clap sees it: the raw (low-level) arguments. Each
//! value is parsed into its type here; bounds and cross-checks come after,
//! in [`crate::config`] for `run` and `init` (the high-level, checked
//! settings) and in the binary's commands for the rest, so that every error
//! message can name the flag at fault.
//!
//! The commands' arguments live in submodules by kind: `lab` (the lab),
//! `load` (init, run, sweep and what they share), `capacity`, `files` (file-server
//! runs), `planner` (tasks, plan, matrix), `distributed` (shards, merge,
//! k8s) and `analysis` (monitor, analyze); `help` holds the long help texts.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod analysis;
mod capacity;
mod distributed;
mod files;
mod help;
mod lab;
mod load;
mod planner;

pub use analysis::{AnalyzeCapacityArgs, AnalyzeCommand, MonitorArgs};
pub use capacity::CapacityArgs;
pub use distributed::{K8sCommand, K8sJobArgs, MergeArgs, ShardArgs};
pub use files::FileArgs;
use help::{
    ABOUT, ANALYZE_EXAMPLES, COMPARE_EXAMPLES, COMPLETIONS_EXAMPLES, INIT_EXAMPLES, MAN_EXAMPLES,
    MONITOR_EXAMPLES, QUICK_START, REPORT_EXAMPLES, RUN_EXAMPLES, SWEEP_EXAMPLES,
};
pub use lab::{LabCheckArgs, LabCommand, LabDirArg, LabDownArgs, LabStatusArgs, LabUpArgs};
pub use load::{InitArgs, MetricsArgs, ProfileArg, RunArgs, RunShape, SweepArgs, TargetArgs};
pub use planner::{MatrixArgs, PlanArgs, TasksArgs};

/// A duration as written on the command line (`90s`, `1h30m`); one too long
/// to represent is an error (exit code 2), not a panic.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    peakhour_workload::HumanDuration::parse(text).map(|d| d.0)
}

/// peakhour measures how many users a mail server carries through its peak
/// hour, how fast it answers them, and what runs out first.
#[derive(Debug, Parser)]
#[command(
    name = "peakhour",
    version,
    about = ABOUT,
    long_about = None,
    propagate_version = true,
    after_help = QUICK_START
)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// peakhour's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start, stop and inspect a real Postfix + Dovecot mail system on loopback.
    ///
    /// The lab is what peakhour's demo and tests measure. It runs as root from
    /// a private directory, listens only on 127.0.0.1, and delivers mail only
    /// to its own users (user1 ... userN @bench.test).
    Lab {
        /// What to do with the lab.
        #[command(subcommand)]
        command: LabCommand,
    },
    /// List and print workload profiles (the built-in ones cite their seed tables).
    Profiles {
        /// What to do with the profiles.
        #[command(subcommand)]
        command: ProfilesCommand,
    },
    /// Bring every mailbox to the profile's starting state (folders and messages).
    ///
    /// Idempotent and resumable: what is there already is counted and kept.
    /// It writes with IMAP APPEND, a folder's messages in one MULTIAPPEND
    /// command where the server offers it (any IMAP server; the fastest way
    /// into the lab, see docs/PERFORMANCE.md), or with `--via lmtp` over LMTP
    /// straight into Dovecot's folders (user+Folder@domain).
    #[command(after_help = INIT_EXAMPLES)]
    Init(InitArgs),
    /// Simulate users following a profile against a server, and score the result.
    ///
    /// Phases: logon (users log on staggered over --ramp-up), steady (measured for
    /// --duration), drain (no new actions; deliveries reconciled). Every action is timed
    /// from its intended start. Results go to a run directory; the exit code is 1 when
    /// the QoS verdict fails.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// How many real users this server carries through its peak hour and its morning:
    /// a search over measured steps, ending in one statement (answer.json, answer.html).
    #[command(after_help = capacity::CAPACITY_EXAMPLES)]
    Capacity(CapacityArgs),
    /// Run one `peakhour run` per user count and read the capacity curve: peak, shape,
    /// users at QoS, a Universal Scalability Law fit and the knee (docs/capacity.md).
    ///
    /// `init` runs once, for the largest step. Each step's run directory, capacity.csv,
    /// capacity.json and capacity.html go to --out. The sweep stops climbing after two
    /// QoS failures in a row or when errors pass --max-error-ratio. Exit code 0 when it
    /// finished (even early), 1 when a step could not run, 130 when interrupted.
    #[command(after_help = SWEEP_EXAMPLES)]
    Sweep(SweepArgs),
    /// Measure what each task costs the server, run alone at a steady rate: every action
    /// of the profile, a logon, an idle session held, a delivery through the MTA and a
    /// search without an index (seed 001's atomic tasks; docs/planner.md).
    ///
    /// An idle baseline is measured first and subtracted. Writes tasks.json, tasks.csv
    /// and tasks.html (ranked by CPU per task, with seed 001's paired bars).
    Tasks(TasksArgs),
    /// Size a server from tasks.json and a profile's rates: CPU, memory, disk and
    /// network per user count, the first resource to run out, the users within the QoS
    /// limit, and price/performance (seed 000's sizing tables; docs/planner.md).
    Plan(PlanArgs),
    /// Run the same load on a grid of shaped labs (CPUs × memory), each a fresh lab, and
    /// read which measurements rise or fall with more memory or CPUs (seed 003).
    Matrix(MatrixArgs),
    /// Sample the server (CPU, memory, disks, network, Dovecot/Postfix processes, mail
    /// queues) into DIR/monitor.csv, as STAT.NLM did during someone else's test.
    ///
    /// Prints a live line on stderr, and at the end each key metric's high average and
    /// the bottleneck line. Columns: docs/metrics.md.
    #[command(after_help = MONITOR_EXAMPLES)]
    Monitor(MonitorArgs),
    /// Analyse results offline: `analyze capacity` reads any CSV table of load against
    /// throughput (and optionally p95) and finds the peak, the shape after it, the QoS
    /// capacity, a Universal Scalability Law fit and the knee (docs/capacity.md).
    #[command(after_help = ANALYZE_EXAMPLES)]
    Analyze {
        /// The analysis to run.
        #[command(subcommand)]
        command: AnalyzeCommand,
    },
    /// Write RUN_DIR/report.html, the self-contained full-disclosure report.
    ///
    /// Verdict, score and capacity statement; per-action table; throughput and server
    /// counters; timelines with the phases shaded; high averages; delivery latency; the
    /// client host, server software, monitor and configuration (docs/report.md). Runs
    /// at the end of every `run`. With --format, also prints the summary.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Compare runs side by side: per-action p95, throughput and server resources,
    /// with the change in percent against the first run and whether it is within
    /// run-to-run noise (a bootstrap over the steady-state intervals).
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Merge the run directories of a sharded run (`run --shard I/N`) into one: the
    /// shards' histograms added interval by interval (exact percentiles), deliveries
    /// between shards reconciled, the server monitor taken from one shard.
    Merge(MergeArgs),
    /// Write Kubernetes manifests for a sharded run (docs/distributed.md).
    K8s {
        /// What to write.
        #[command(subcommand)]
        command: K8sCommand,
    },
    /// Print a shell completion script on stdout.
    ///
    /// bash: `peakhour completions bash > /etc/bash_completion.d/peakhour` (or
    /// `source <(peakhour completions bash)` in ~/.bashrc); zsh: write `_peakhour`
    /// into a directory of $fpath; fish: `~/.config/fish/completions/peakhour.fish`.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print a manual page in roff, or write every page to a directory.
    ///
    /// `peakhour man` is peakhour(1), which lists the commands; `peakhour man run`
    /// is peakhour-run(1), `peakhour man lab up` is peakhour-lab-up(1). `--dir`
    /// writes all of them (peakhour.1, peakhour-run.1, ...), ready for a man1
    /// directory.
    #[command(after_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

/// `peakhour completions`
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `peakhour man`
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, e.g. `run` or `lab up` (default: peakhour(1)).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page (peakhour.1, peakhour-run.1, ...) into DIR instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// Output formats of `report --format` and `compare --format`.
pub const SUMMARY_FORMATS: [&str; 4] = ["text", "json", "csv", "markdown"];

/// `peakhour report`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory written by `peakhour run`.
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// Also print the run's summary on stdout in this format.
    #[arg(long, value_name = "FORMAT", value_parser = SUMMARY_FORMATS)]
    pub format: Option<String>,
}

/// `peakhour compare`
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more run directories; the first is the baseline.
    #[arg(value_name = "RUN_DIR", num_args = 2.., required = true)]
    pub runs: Vec<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = SUMMARY_FORMATS)]
    pub format: String,
    /// Also write the comparison as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `peakhour profiles ...`
#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// List the built-in profiles.
    List,
    /// Print a profile's TOML (with its seed citations), ready to copy and edit.
    ///
    /// Example: peakhour profiles show mmb-medium > my-profile.toml
    Show {
        /// A built-in name or a TOML file.
        name: String,
        /// Print the plan resolved for these settings instead: rates per real second,
        /// lists, folders, QoS.
        #[arg(long)]
        resolved: bool,
        /// Users, for --resolved.
        #[arg(long, value_name = "N")]
        users: Option<u32>,
        /// Simulated day compression, for --resolved.
        #[arg(long, value_name = "X")]
        speed: Option<f64>,
    },
}
