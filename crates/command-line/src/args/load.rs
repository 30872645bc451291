//! The arguments of the commands that put load on a server: `init`, `run`
//! and `sweep`, with what they share (the profile, the target, the run's
//! shape). These are the raw values as typed; `crate::config` checks them
//! into the settings a run uses.

use std::path::PathBuf;

use clap::Args;
use peakhour_engine::ServerOptions;

use super::FileArgs;
use super::help::{IMAP_URL_HELP, LMTP_URL_HELP, SMTP_URL_HELP};
use super::parse_duration;
use crate::TargetSpec;

/// Which profile to use: a built-in name or a TOML file.
#[derive(Debug, Args)]
pub struct ProfileArg {
    /// A built-in profile (`peakhour profiles list`) or the path of a profile TOML file.
    #[arg(long, value_name = "NAME|FILE", default_value = "mmb-medium")]
    pub profile: String,
}

/// Where the load goes and who logs in.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// `lab` to use the lab in --lab-dir (endpoints, users and password from its state), or
    /// `explicit` to use --imap, --smtp and a user list.
    #[arg(long, value_name = "lab|explicit", default_value = "lab", value_parser = ["lab", "explicit"])]
    pub target: String,
    /// The lab directory, with --target lab.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub lab_dir: PathBuf,
    /// IMAP server (--target explicit): imap://, imap+starttls:// or imaps://HOST:PORT
    /// (--help says what each means).
    #[arg(long, value_name = "URL", long_help = IMAP_URL_HELP)]
    pub imap: Option<String>,
    /// SMTP submission server (--target explicit): smtp://, smtp+starttls://, submission://,
    /// submission+starttls://, submissions:// or smtps://HOST:PORT (--help says what each means).
    #[arg(long, value_name = "URL", long_help = SMTP_URL_HELP)]
    pub smtp: Option<String>,
    /// LMTP server for `init --via lmtp` (--target explicit): lmtp:// or lmtp+starttls://HOST:PORT.
    #[arg(long, value_name = "URL", long_help = LMTP_URL_HELP)]
    pub lmtp: Option<String>,
    /// JMAP server for `run --protocol jmap` (--target explicit): http:// or https://HOST:PORT.
    #[arg(long, value_name = "URL")]
    pub jmap: Option<String>,
    /// CalDAV server (any target; the lab's own by default when it runs one): http:// or
    /// https://HOST:PORT[/PATH], where each user's calendar home is discovered. Without one,
    /// `update_calendar` writes to an IMAP folder.
    #[arg(long, value_name = "URL")]
    pub caldav: Option<String>,
    /// POP3 server for `download_mail` (--target explicit): pop3://, pop3+starttls:// or
    /// pop3s://HOST:PORT. The lab's POP3 server is used with --target lab.
    #[arg(long, value_name = "URL")]
    pub pop3: Option<String>,
    /// CSV of `login,password[,address]` lines, one per simulated user, in user order: the
    /// run's whole test population. The address is the login when the login is one. A
    /// password with a comma or a quote goes in double quotes ("pa,ss").
    #[arg(long, value_name = "FILE")]
    pub users_file: Option<PathBuf>,
    /// The environment variable holding the password every user shares (explicit targets
    /// whose users follow the profile's name pattern). Kept out of argv on purpose.
    #[arg(long, value_name = "VAR", default_value = "PEAKHOUR_PASSWORD")]
    pub password_env: String,
    /// SMTP AUTH: `auto` (PLAIN or LOGIN when offered, none otherwise), `none` (a relay
    /// that trusts this network), `plain` or `login`.
    #[arg(long, value_name = "auto|none|plain|login", default_value = "auto")]
    pub smtp_auth: peakhour_engine::AuthPolicy,
    /// Where the users' own folders live, instead of the server's NAMESPACE answer
    /// (e.g. `INBOX.`; `""` for the top level). Profile folder names go under it.
    #[arg(long, value_name = "PREFIX")]
    pub folder_prefix: Option<String>,
    /// A PEM file of CA certificates to trust in addition to the system's; a
    /// self-signed server certificate may be given here as its own CA.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate. Only for test servers you control.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// With --target explicit, allow test users in DOMAIN (repeatable). Mail goes only to
    /// the run's test population; a population outside the reserved test domains (.test,
    /// .example, .invalid, .localhost, example.com/.net/.org) is refused unless its domain
    /// is named here.
    #[arg(long, value_name = "DOMAIN")]
    pub allow_domain: Vec<String>,
}

impl TargetArgs {
    /// The target as named, for `peakhour-app` to resolve.
    pub fn spec(&self) -> TargetSpec {
        TargetSpec {
            lab_dir: (self.target == "lab").then(|| self.lab_dir.clone()),
            imap: self.imap.clone(),
            smtp: self.smtp.clone(),
            lmtp: self.lmtp.clone(),
            pop3: self.pop3.clone(),
            caldav: self.caldav.clone(),
            jmap: self.jmap.clone(),
            users_file: self.users_file.clone(),
            password_env: self.password_env.clone(),
            ca_file: self.ca_file.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            options: ServerOptions {
                smtp_auth: self.smtp_auth,
                folder_prefix: self.folder_prefix.clone(),
                source_addresses: Vec::new(),
            },
        }
    }
}

/// `peakhour init`
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The server and its users.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Users to initialize (default: the lab's user count, or the profile's).
    #[arg(long, value_name = "N")]
    pub users: Option<u32>,
    /// Seed for message content and mailbox layout (recorded; default 1).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Users initialized at once.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub parallel: usize,
    /// How messages get in: `append` (IMAP APPEND, batched with MULTIAPPEND
    /// when offered), `lmtp` (LMTP delivery, one transaction per message;
    /// needs the lab or --lmtp) or `clone` (a Dovecot lab only: the first
    /// user over IMAP, its mailbox copied on disk for the others). Default:
    /// `clone` on a Dovecot lab above 8 users, else `append`.
    #[arg(long, value_name = "append|lmtp|clone", value_parser = ["append", "lmtp", "clone"])]
    pub via: Option<String>,
}

/// `run --check-state`'s long help: what it checks and what it costs.
const CHECK_STATE_HELP: &str = "\
State checks (issue 27; docs/state-checks.md), as Dovecot's imaptest
makes them, for IMAP, JMAP and CalDAV. Every IMAP session's traffic goes through a model of what the
server told it: message count, sequence numbers and UIDs, UIDVALIDITY, flags
and keywords, MODSEQ, the static items of messages it fetched, where an
EXPUNGE may come. A contradiction (a UID that changes, a sequence number
never announced, an ENVELOPE that changes ...) is a violation. Every
INTERVAL (default 30s: --check-state alone; --check-state=10s to choose) a
checkpoint waits until every session of an account is quiet, sends UID
SEARCH ALL and NOOP in each and compares what they were told: count, UIDs,
flags, keywords, MODSEQ. After the run, every delivered copy is compared
with its submission: found once, same headers, same size but trace fields.
Give sessions shared accounts with the profile's `[users]
sessions_per_account = 2` for the checkpoints to compare anything.

Over JMAP (--protocol jmap) each request and response goes to a model of the
session: a /set that changed something must answer a new state, and after
each changing action the checker's Email/changes must list the session's
own changes; after the run every message the sessions created or moved must
be in the one mailbox they last put it in. A calendar client's PUT ETag must
be what its next REPORT shows, and an inbox item it deleted must stay gone.

Any violation fails the run (exit 1), named; summary.json's `state_checks`
counts checks and violations by kind, errors.csv counts them as
`inconsistent:<check>`, state-violations.csv lists each with its evidence,
and state-violations/<client>.log holds the last lines of each session that
had one.

Cost: a second parse of every IMAP response on the generator's CPU, and at
each checkpoint a pause of every session of an account until the slowest has
finished its action. The pause is not counted as latency: a held user's
schedule stands still, so later actions move later, and those pushed past
the steady phase are not run. summary.json says how long the pauses were.";

/// `--duration` when not given.
const DEFAULT_DURATION: &str = "120s";
/// `--ramp-up` when not given.
const DEFAULT_RAMP_UP: &str = "20s";
/// `--drain` when not given.
const DEFAULT_DRAIN: &str = "20s";

impl RunShape {
    /// The phases a run takes when none is given: what `profiles list` says a
    /// profile's run takes.
    pub fn default_phases() -> peakhour_engine::profiles::DefaultPhases {
        let parse = |text| parse_duration(text).unwrap_or_default();
        peakhour_engine::profiles::DefaultPhases {
            ramp_up: parse(DEFAULT_RAMP_UP),
            duration: parse(DEFAULT_DURATION),
            drain: parse(DEFAULT_DRAIN),
        }
    }
}

/// How a run is shaped in time and judged: shared by `run` and every step of `sweep`.
#[derive(Debug, Args)]
pub struct RunShape {
    /// Length of the simulated day (the profile's counts are per day).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub day: Option<std::time::Duration>,
    /// Day compression: 16 runs an 8-hour day in 30 minutes. It multiplies the load.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// The measured steady phase [default: 120s; with `run --window peak-hour|morning`, 10m:
    /// the window's length (the morning's logon storm comes before it)]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Users log on staggered over this long before measuring starts.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_RAMP_UP, value_parser = parse_duration)]
    pub ramp_up: std::time::Duration,
    /// After the steady phase: time allowed for in-flight actions and for deliveries to arrive.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_DRAIN, value_parser = parse_duration)]
    pub drain: std::time::Duration,
    /// Seed for schedules, recipients and message content (recorded in the results).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Length of one measurement interval.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub interval: std::time::Duration,
    /// An action taking longer than this fails with `timeout`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub action_timeout: std::time::Duration,
    /// QoS: the weighted p95's limit in ms, replacing the profile's `qos.p95_ms` and its
    /// per-action limits (default: the profile's, 1000 for MMB; docs/capacity.md, "One QoS rule").
    #[arg(long, value_name = "MS")]
    pub qos_p95_ms: Option<f64>,
}

/// Live metrics for Prometheus: shared by `run` and every step of `sweep`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Serve live metrics at http://ADDR/metrics during the run, as OpenMetrics (or Prometheus
    /// text if the scraper asks): actions and errors by kind, users logged on, the phase, the
    /// generator's CPU and scheduling lag, latency histograms (docs/live-metrics.md). ADDR is
    /// IP:PORT, e.g. 127.0.0.1:9464; none by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// With --metrics-listen: keep serving the final figures this long after the run, so that
    /// a scraper's last scrape sees them (at least its scrape interval; at most 10m).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub metrics_linger: std::time::Duration,
}

/// `peakhour run`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The server and its users.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Simulated users (default: the lab's user count, or the profile's).
    #[arg(long, value_name = "N")]
    pub users: Option<u32>,
    /// The users' mail protocol: imap (with SMTP to send), or jmap (the lab's JMAP with
    /// `--mail-server cyrus`, or --jmap URL).
    #[arg(long, value_name = "imap|jmap", default_value = "imap", value_parser = peakhour_engine::MailProtocol::parse)]
    pub protocol: peakhour_engine::MailProtocol,
    /// The run's shape in time, and its QoS limit.
    #[command(flatten)]
    pub shape: RunShape,
    /// State checks, with an IMAP checkpoint every INTERVAL (default 30s): what the server
    /// tells each IMAP, JMAP or CalDAV session must stay consistent (docs/state-checks.md).
    #[arg(
        long,
        value_name = "INTERVAL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "30s",
        value_parser = parse_duration,
        long_help = CHECK_STATE_HELP
    )]
    pub check_state: Option<std::time::Duration>,
    /// The mail client every user imitates (issue 28, docs/clients.md): `peakhour` (the
    /// default: one session all day, IDLE between actions), `thunderbird` (a connection per
    /// busy folder, IDLE renewed every 2 min), `mbsync` (a login and a walk of every folder
    /// per change and every 5 min), `neomutt` (one connection, a NOOP every 10 min, every
    /// header fetched when the Inbox opens) or `roundcube` (a login per page view and one
    /// per minute, header pages of 50). Overrides the profile's `[clients]` mix.
    #[arg(long, value_name = "NAME", value_parser = parse_client)]
    pub client: Option<peakhour_workload::Personality>,
    /// The part of the day measured: `day` (the even day: every action at its day's average
    /// rate), `peak-hour` (the profile's busiest hour, held for --duration, 10m by default,
    /// after every user has logged on), or `morning` (every user logs on at the morning's
    /// real logon rate, measured: logons per second and logon p95, then --duration of the
    /// first hour at the busiest hour's rates; refused at a --speed other than 1). Needs the
    /// profile's `[day_shape]` (docs/profiles.md, docs/windows.md).
    #[arg(long, value_name = "day|peak-hour|morning", default_value = "day", value_parser = peakhour_workload::Window::parse)]
    pub window: peakhour_workload::Window,
    /// The run directory (default: runs/TIME-PROFILE-USERSu, TIME in UTC). It must be new
    /// or empty: a directory that holds a run, or files peakhour does not write, is
    /// refused (exit 2) and nothing in it is overwritten.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Server monitor: the shortest window of the high average (highest sustained mean).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub high_average_window: std::time::Duration,
    /// A file-server run's options.
    #[command(flatten)]
    pub files: FileArgs,
    /// Server monitor: sample the idle server this long before the load starts
    /// (rows with a negative time_s in monitor.csv).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub monitor_baseline: std::time::Duration,
    /// Server monitor: a process group, repeatable: the server's processes when it is
    /// not the lab. NAME=REGEX matches command names; `NAME=KIND:PATTERN[,KIND:PATTERN]`
    /// needs every condition: name:REGEX (command name), exe:REGEX (executable path),
    /// user:NAME|UID (owner), parent:REGEX (the process or an ancestor has a matching
    /// command name), e.g. `imapd=exe:^/usr/lib/cyrus/,user:cyrus`
    #[arg(long, value_name = "NAME=SPEC")]
    pub group: Vec<String>,
    /// Server monitor: scrape a Prometheus node_exporter (e.g.
    /// `http://mail.example:9100/metrics`) instead of this host's /proc, for a server on
    /// another host: system metrics only (no --group, no queue)
    #[arg(long, value_name = "URL", conflicts_with = "group")]
    pub node_exporter: Option<String>,
    /// Live metrics for Prometheus.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// This run as one shard of a distributed run.
    #[command(flatten)]
    pub distributed: super::ShardArgs,
    /// Run even when this machine's file descriptors or memory cannot hold the run (without
    /// it, such a run is refused with exit 2 and the number of shards it needs): to see how
    /// the generator fails at its limits, or when the estimate is known to be pessimistic
    /// (memory is counted at 11 KiB per user, measured on mmb-medium; docs/capacity.md).
    #[arg(long)]
    pub beyond_limits: bool,
}

/// `peakhour sweep`
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("steps").required(true).args(["users", "from"])))]
pub struct SweepArgs {
    /// The workload profile.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The server and its users.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The user counts of the steps, e.g. 25,50,100,200,400.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', num_args = 1..)]
    pub users: Option<Vec<u32>>,
    /// First step of a geometric progression of user counts (with --to, --factor).
    #[arg(long, value_name = "N", requires = "to")]
    pub from: Option<u32>,
    /// Last step: from, from x factor, ... up to N (N itself ends the list).
    #[arg(long, value_name = "N", requires = "from")]
    pub to: Option<u32>,
    /// Growth factor between steps, with --from and --to.
    #[arg(long, value_name = "X", default_value_t = 2.0)]
    pub factor: f64,
    /// Every step is shaped the same; one seed serves init and every step.
    /// The run's shape in time, and its QoS limit.
    #[command(flatten)]
    pub shape: RunShape,
    /// Which p95 the capacity curve is held to the QoS limit by: `weighted` (the score's
    /// weighted p95) or `max-action` (the slowest action's p95).
    #[arg(long, value_name = "WHICH", default_value = "weighted", value_parser = ["weighted", "max-action"])]
    pub p95: String,
    /// Stop climbing when failed actions exceed this fraction of the attempted ones.
    #[arg(long, value_name = "RATIO", default_value_t = 0.05)]
    pub max_error_ratio: f64,
    /// Server monitor: a process group NAME=REGEX or NAME=KIND:PATTERN[,...] (KIND:
    /// name, exe, user, parent), repeatable (as for `run`).
    #[arg(long, value_name = "NAME=SPEC")]
    pub group: Vec<String>,
    /// Server monitor: scrape this Prometheus node_exporter instead of this host's
    /// /proc (as for `run`).
    #[arg(long, value_name = "URL", conflicts_with = "group")]
    pub node_exporter: Option<String>,
    /// Skip `init` (the mailboxes are already filled for the largest step).
    #[arg(long)]
    pub no_init: bool,
    /// The sweep directory (default: runs/TIME-sweep-PROFILE, TIME in UTC).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The software's price: the sweep divides it by the peak throughput, dollars per
    /// Mbit/s for a file server as seed 004 computed price/performance.
    #[arg(long, value_name = "DOLLARS")]
    pub price: Option<f64>,
    /// A file-server run's options.
    #[command(flatten)]
    pub files: FileArgs,
    /// Each step serves its live metrics on the same address in turn.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// `--client NAME`: one of the personalities; the error lists them.
fn parse_client(name: &str) -> Result<peakhour_workload::Personality, String> {
    peakhour_workload::Personality::parse(name).map_err(|e| e.to_string())
}
