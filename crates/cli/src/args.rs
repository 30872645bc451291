//! The command line, as clap sees it. Validation into library types happens in
//! `commands`, so that every error message can name the flag at fault.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod help;
use help::{
    ANALYZE_EXAMPLES, COMPARE_EXAMPLES, COMPLETIONS_EXAMPLES, IMAP_URL_HELP, INIT_EXAMPLES,
    LAB_UP_EXAMPLES, LMTP_URL_HELP, MAN_EXAMPLES, MONITOR_EXAMPLES, QUICK_START, REPORT_EXAMPLES,
    RUN_EXAMPLES, SMTP_URL_HELP, SWEEP_EXAMPLES,
};

/// peakhour measures how many users a mail server carries through its peak
/// hour, how fast it answers them, and what runs out first.
#[derive(Debug, Parser)]
#[command(
    name = "peakhour",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = QUICK_START
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start, stop and inspect a real Postfix + Dovecot mail system on loopback.
    ///
    /// The lab is what peakhour's demo and tests measure. It runs as root from
    /// a private directory, listens only on 127.0.0.1, and delivers mail only
    /// to its own users (user1 ... userN @bench.test).
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
    /// List and print workload profiles (the built-in ones cite their seed tables).
    Profiles {
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
    /// Run one `peakhour run` per user count and read the capacity curve: peak, shape,
    /// users at QoS, a Universal Scalability Law fit and the knee (docs/capacity.md).
    ///
    /// `init` runs once, for the largest step. Each step's run directory, capacity.csv,
    /// capacity.json and capacity.html go to --out. The sweep stops climbing after two
    /// QoS failures in a row or when errors pass --max-error-ratio. Exit code 0 when it
    /// finished (even early), 1 when a step could not run, 130 when interrupted.
    #[command(after_help = SWEEP_EXAMPLES)]
    Sweep(SweepArgs),
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
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

/// `peakhour man`
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `run` or `lab up` (default: peakhour(1)).
    #[arg(value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
    /// Write every page (peakhour.1, peakhour-run.1, ...) into DIR instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub(crate) dir: Option<PathBuf>,
}

/// Output formats of `report --format` and `compare --format`.
pub(crate) const SUMMARY_FORMATS: [&str; 4] = ["text", "json", "csv", "markdown"];

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The run directory written by `peakhour run`.
    #[arg(value_name = "RUN_DIR")]
    pub(crate) run_dir: PathBuf,
    /// Also print the run's summary on stdout in this format.
    #[arg(long, value_name = "FORMAT", value_parser = SUMMARY_FORMATS)]
    pub(crate) format: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// Two or more run directories; the first is the baseline.
    #[arg(value_name = "RUN_DIR", num_args = 2.., required = true)]
    pub(crate) runs: Vec<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = SUMMARY_FORMATS)]
    pub(crate) format: String,
    /// Also write the comparison as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
    /// Start the lab (harmless if it is already up) and print its endpoints.
    #[command(after_help = LAB_UP_EXAMPLES)]
    Up(LabUpArgs),
    /// Stop every process the lab started, and check that none is left.
    Down(LabDownArgs),
    /// Report every lab process and whether each endpoint answers.
    ///
    /// Exit code 0 when healthy, 1 otherwise. `--json` prints the endpoints,
    /// users and password for scripts.
    Status(LabStatusArgs),
    /// Send a message through the lab and read it back: SMTP in, IMAP and POP3 out.
    ///
    /// Uses peakhour's own protocol clients, and prints every command's time.
    Check(LabCheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct LabDirArg {
    /// The lab's private directory (configuration, logs, queue, mail store).
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub(crate) dir: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct LabUpArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Number of users: user1 ... userN in bench.test, sharing one generated password.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) users: u32,
    /// Dovecot's mail storage: sdbox (one file per message, Dovecot's fastest) or maildir.
    #[arg(long, value_name = "FORMAT", default_value = "sdbox", value_parser = ["sdbox", "maildir"])]
    pub(crate) storage: String,
    /// Add N to every standard port (25, 465, 143, 993, 110, 24): 10000 gives 10025, 10143 ...
    #[arg(long, value_name = "N", default_value_t = 10000)]
    pub(crate) port_base: u16,
    /// SMTP port (Postfix; STARTTLS and AUTH offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) smtp_port: Option<u16>,
    /// SMTP with implicit TLS ("submissions") port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) submissions_port: Option<u16>,
    /// IMAP port (Dovecot; STARTTLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) imap_port: Option<u16>,
    /// IMAP with implicit TLS port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) imaps_port: Option<u16>,
    /// POP3 port (Dovecot; STLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) pop3_port: Option<u16>,
    /// LMTP port (Dovecot; Postfix delivers here). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) lmtp_port: Option<u16>,
    /// Connections one Dovecot imap process serves (Dovecot's default is 1: a process
    /// per connected user). Raise it (e.g. 100) for thousands of users.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) imap_client_limit: u32,
    /// Prefix of Dovecot's personal namespace, ending with the separator: `INBOX.`
    /// imitates Courier- and Cyrus-like servers, where `Sent` is `INBOX.Sent` and a
    /// top-level `Sent` is refused. Empty (the default) puts folders at the top.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub(crate) namespace_prefix: String,
    /// Dovecot's hierarchy separator (one character; `.` with `--namespace-prefix INBOX.`).
    #[arg(long, value_name = "CHAR", default_value_t = '/')]
    pub(crate) namespace_separator: char,
    /// Cap every lab server process at this many CPU cores (e.g. 0.5), with a cgroup.
    #[arg(long, value_name = "CORES", value_parser = peakhour_lab::Limits::parse_cpus)]
    pub(crate) cpus: Option<f64>,
    /// Cap the lab servers' memory, page cache included (e.g. 256M, 1G), with a cgroup.
    #[arg(long, value_name = "SIZE", value_parser = peakhour_lab::Limits::parse_memory)]
    pub(crate) memory: Option<u64>,
    /// SMTP port without AUTH or STARTTLS, for clients on loopback. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) smtp_noauth_port: Option<u16>,
    /// Print the resulting status as JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabDownArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Also delete what the lab made in its directory: mail store, queue, certificates
    /// and password (the entries its lab-manifest.json lists). Anything else in the
    /// directory is kept, and so is the directory unless the lab created it.
    #[arg(long)]
    pub(crate) purge: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabStatusArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Print JSON: {"healthy", "domain", "users", "password", "endpoints": {...}, ...}.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabCheckArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// The user (by number) the test message is sent to.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub(crate) user: u32,
    /// Use STARTTLS (verified against the lab's CA) on every connection.
    #[arg(long)]
    pub(crate) starttls: bool,
}

/// Which profile to use: a built-in name or a TOML file.
#[derive(Debug, Args)]
pub(crate) struct ProfileArg {
    /// A built-in profile (`peakhour profiles list`) or the path of a profile TOML file.
    #[arg(long, value_name = "NAME|FILE", default_value = "mmb-medium")]
    pub(crate) profile: String,
}

/// Where the load goes and who logs in.
#[derive(Debug, Args)]
pub(crate) struct TargetArgs {
    /// `lab` to use the lab in --lab-dir (endpoints, users and password from its state), or
    /// `explicit` to use --imap, --smtp and a user list.
    #[arg(long, value_name = "lab|explicit", default_value = "lab", value_parser = ["lab", "explicit"])]
    pub(crate) target: String,
    /// The lab directory, with --target lab.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub(crate) lab_dir: PathBuf,
    /// IMAP server (--target explicit): imap://, imap+starttls:// or imaps://HOST:PORT
    /// (--help says what each means).
    #[arg(long, value_name = "URL", long_help = IMAP_URL_HELP)]
    pub(crate) imap: Option<String>,
    /// SMTP submission server (--target explicit): smtp://, smtp+starttls://, submission://,
    /// submission+starttls://, submissions:// or smtps://HOST:PORT (--help says what each means).
    #[arg(long, value_name = "URL", long_help = SMTP_URL_HELP)]
    pub(crate) smtp: Option<String>,
    /// LMTP server for `init --via lmtp` (--target explicit): lmtp:// or lmtp+starttls://HOST:PORT.
    #[arg(long, value_name = "URL", long_help = LMTP_URL_HELP)]
    pub(crate) lmtp: Option<String>,
    /// CalDAV server (any target; the lab's own by default when it runs one): http:// or
    /// https://HOST:PORT[/PATH], where each user's calendar home is discovered. Without one,
    /// `update_calendar` writes to an IMAP folder.
    #[arg(long, value_name = "URL")]
    pub(crate) caldav: Option<String>,
    /// POP3 server for `download_mail` (--target explicit): pop3://, pop3+starttls:// or
    /// pop3s://HOST:PORT. The lab's POP3 server is used with --target lab.
    #[arg(long, value_name = "URL")]
    pub(crate) pop3: Option<String>,
    /// CSV of `login,password` lines, one per simulated user, in user order.
    #[arg(long, value_name = "FILE")]
    pub(crate) users_file: Option<PathBuf>,
    /// The environment variable holding the password every user shares (explicit targets
    /// whose users follow the profile's name pattern). Kept out of argv on purpose.
    #[arg(long, value_name = "VAR", default_value = "PEAKHOUR_PASSWORD")]
    pub(crate) password_env: String,
    /// A PEM file of CA certificates to trust in addition to the system's.
    #[arg(long, value_name = "FILE")]
    pub(crate) ca_file: Option<PathBuf>,
    /// Accept any TLS certificate. Only for test servers you control.
    #[arg(long)]
    pub(crate) insecure_skip_tls_verify: bool,
}

/// `peakhour profiles ...`
#[derive(Debug, Subcommand)]
pub(crate) enum ProfilesCommand {
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

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    #[command(flatten)]
    pub(crate) profile: ProfileArg,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Users to initialize (default: the lab's user count, or the profile's).
    #[arg(long, value_name = "N")]
    pub(crate) users: Option<u32>,
    /// Seed for message content and mailbox layout (recorded; default 1).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Users initialized at once.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(crate) parallel: usize,
    /// How messages get in: `append` (IMAP APPEND, batched with MULTIAPPEND
    /// when offered) or `lmtp` (LMTP delivery, one transaction per message;
    /// needs the lab or --lmtp).
    #[arg(long, value_name = "append|lmtp", default_value = "append", value_parser = ["append", "lmtp"])]
    pub(crate) via: String,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    peakhour_workload::HumanDuration::parse(text).map(|d| d.0)
}

/// How a run is shaped in time and judged: shared by `run` and every step of `sweep`.
#[derive(Debug, Args)]
pub(crate) struct RunShape {
    /// Length of the simulated day (the profile's counts are per day).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) day: Option<std::time::Duration>,
    /// Day compression: 16 runs an 8-hour day in 30 minutes. It multiplies the load.
    #[arg(long, value_name = "X")]
    pub(crate) speed: Option<f64>,
    /// The measured steady phase.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub(crate) duration: std::time::Duration,
    /// Users log on staggered over this long before measuring starts.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub(crate) ramp_up: std::time::Duration,
    /// After the steady phase: time allowed for in-flight actions and for deliveries to arrive.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub(crate) drain: std::time::Duration,
    /// Seed for schedules, recipients and message content (recorded in the results).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Length of one measurement interval.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub(crate) interval: std::time::Duration,
    /// An action taking longer than this fails with `timeout`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) action_timeout: std::time::Duration,
    /// QoS: the p95 every action must meet, in ms (default: the profile's, 1000 for MMB).
    #[arg(long, value_name = "MS")]
    pub(crate) qos_p95_ms: Option<f64>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) profile: ProfileArg,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Simulated users (default: the lab's user count, or the profile's).
    #[arg(long, value_name = "N")]
    pub(crate) users: Option<u32>,
    #[command(flatten)]
    pub(crate) shape: RunShape,
    /// The run directory (default: runs/TIME-PROFILE-USERSu, TIME in UTC).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Server monitor: the shortest window of the high average (highest sustained mean).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) high_average_window: std::time::Duration,
    /// Server monitor: sample the idle server this long before the load starts
    /// (rows with a negative time_s in monitor.csv).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub(crate) monitor_baseline: std::time::Duration,
}

/// `peakhour sweep`
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("steps").required(true).args(["users", "from"])))]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    pub(crate) profile: ProfileArg,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The user counts of the steps, e.g. 25,50,100,200,400.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', num_args = 1..)]
    pub(crate) users: Option<Vec<u32>>,
    /// First step of a geometric progression of user counts (with --to, --factor).
    #[arg(long, value_name = "N", requires = "to")]
    pub(crate) from: Option<u32>,
    /// Last step: from, from x factor, ... up to N (N itself ends the list).
    #[arg(long, value_name = "N", requires = "from")]
    pub(crate) to: Option<u32>,
    /// Growth factor between steps, with --from and --to.
    #[arg(long, value_name = "X", default_value_t = 2.0)]
    pub(crate) factor: f64,
    /// Every step is shaped the same; one seed serves init and every step.
    #[command(flatten)]
    pub(crate) shape: RunShape,
    /// Which p95 the capacity curve is held to the QoS limit by: `weighted` (the score's
    /// weighted p95) or `max-action` (the slowest action's p95).
    #[arg(long, value_name = "WHICH", default_value = "weighted", value_parser = ["weighted", "max-action"])]
    pub(crate) p95: String,
    /// Stop climbing when failed actions exceed this fraction of the attempted ones.
    #[arg(long, value_name = "RATIO", default_value_t = 0.05)]
    pub(crate) max_error_ratio: f64,
    /// Skip `init` (the mailboxes are already filled for the largest step).
    #[arg(long)]
    pub(crate) no_init: bool,
    /// The sweep directory (default: runs/TIME-sweep-PROFILE, TIME in UTC).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
}

/// `peakhour monitor`
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("length").required(true).args(["duration", "until_signal"])))]
pub(crate) struct MonitorArgs {
    /// Time between samples.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub(crate) interval: std::time::Duration,
    /// Stop after this long (SIGINT or SIGTERM stop it earlier; everything is still written).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) duration: Option<std::time::Duration>,
    /// Run until SIGINT (Ctrl-C) or SIGTERM, then write the summary.
    #[arg(long)]
    pub(crate) until_signal: bool,
    /// Output directory for monitor.csv and monitor-summary.txt (default: runs/TIME-monitor).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Scrape a Prometheus node_exporter instead of the local /proc, e.g.
    /// http://127.0.0.1:9100/metrics (system metrics only: no process groups or queues).
    #[arg(long, value_name = "URL")]
    pub(crate) node_exporter: Option<String>,
    /// Postfix queue directory to count (default: the lab's, if --lab-dir holds a lab).
    #[arg(long, value_name = "DIR")]
    pub(crate) postfix_queue: Option<PathBuf>,
    /// Dovecot's listening ports, to count its client connections (default: the lab's).
    #[arg(long, value_name = "PORT", value_delimiter = ',')]
    pub(crate) dovecot_port: Vec<u16>,
    /// The lab directory whose queue and ports are the defaults.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub(crate) lab_dir: PathBuf,
    /// Another process group, by a regex over the command name, e.g. --group 'nginx=^nginx'
    /// (repeatable). Columns group_NAME_*.
    #[arg(long, value_name = "NAME=REGEX")]
    pub(crate) group: Vec<String>,
    /// The shortest window of the high average (highest sustained mean).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) high_average_window: std::time::Duration,
}

/// `peakhour analyze ...`
#[derive(Debug, Subcommand)]
pub(crate) enum AnalyzeCommand {
    /// Peak, shape, QoS capacity, USL fit and knee of a load/throughput table.
    ///
    /// Example: peakhour analyze capacity tests/fixtures/netbench-nt-1cpu.csv
    /// --load-column clients --throughput-column bytes_per_sec --json
    Capacity(AnalyzeCapacityArgs),
}

#[derive(Debug, Args)]
pub(crate) struct AnalyzeCapacityArgs {
    /// A CSV (or tab-separated) file with a header row; `#` lines are comments.
    #[arg(value_name = "FILE.csv")]
    pub(crate) file: PathBuf,
    /// The column holding the load (users, clients, processes).
    #[arg(long, value_name = "NAME")]
    pub(crate) load_column: String,
    /// The column holding the throughput.
    #[arg(long, value_name = "NAME")]
    pub(crate) throughput_column: String,
    /// A column holding the p95 response time in ms, for the QoS capacity.
    #[arg(long, value_name = "NAME")]
    pub(crate) p95_column: Option<String>,
    /// QoS: the p95 limit in ms.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub(crate) qos_p95_ms: f64,
    /// Kneedle's sensitivity S (larger is more conservative).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub(crate) knee_sensitivity: f64,
    /// Print JSON (peak, shape, qos, usl, knee, warnings) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}
