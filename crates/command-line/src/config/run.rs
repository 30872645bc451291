//! `peakhour run` and `peakhour init`: their raw arguments checked into the
//! settings they run with.

use std::time::{Duration, SystemTime};

use peakhour_engine::parse_start_at;
use peakhour_workload::Shard;

use super::{
    MAX_ACTION_TIMEOUT, MAX_DAY, MAX_DRAIN, MAX_DURATION, MAX_HIGH_AVERAGE_WINDOW,
    MAX_INIT_PARALLEL, MAX_INTERVAL, MAX_INTERVALS, MAX_MONITOR_BASELINE, MAX_QOS_P95_MS,
    MAX_RAMP_UP, MAX_SPEED, MAX_USERS, MIN_ACTION_TIMEOUT, MIN_DURATION, MIN_INTERVAL,
    MONITOR_INTERVAL, UsageError, count_within, duration_within, positive_at_most,
};
use crate::args::{InitArgs, RunArgs, RunShape, TargetArgs};
use peakhour_rundir::{MonitorSection, RunSection};
use peakhour_workload::{HumanDuration, Window};

/// `--duration` when not given: the measured steady phase of an even day.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(120);
/// `--duration` when not given with `--window peak-hour|morning`: the
/// measured window (issue 25: 10 minutes).
pub const WINDOW_LENGTH: Duration = Duration::from_secs(600);

/// The shortest time between two state-check checkpoints: each one stops
/// every session of an account for a NOOP.
pub(crate) const MIN_CHECK_STATE_INTERVAL: Duration = Duration::from_secs(1);
/// The longest time between two checkpoints.
pub(crate) const MAX_CHECK_STATE_INTERVAL: Duration = Duration::from_secs(3600);

/// A run's shape in time and its QoS limit, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// `--day`: the simulated day, if not the profile's.
    pub day: Option<Duration>,
    /// `--speed`: the day compression, if not the profile's.
    pub speed: Option<f64>,
    /// `--seed`, if given.
    pub seed: Option<u64>,
    /// `--ramp-up`: the users log on staggered over this.
    pub ramp_up: Duration,
    /// `--duration`: the measured steady phase.
    pub duration: Duration,
    /// `--drain`: no new actions; deliveries reconciled.
    pub drain: Duration,
    /// `--interval`: one measurement interval.
    pub interval: Duration,
    /// `--action-timeout`: an action's (and each command's) deadline.
    pub action_timeout: Duration,
    /// `--qos-p95-ms`: the p95 limit, if not the profile's.
    pub qos_p95_ms: Option<f64>,
}

impl Shape {
    /// Checks the shape of `run` (and of every step of a sweep).
    pub fn check(raw: &RunShape) -> Result<Shape, UsageError> {
        Shape::check_in(raw, Window::Day)
    }

    /// Checks the shape of a run of `window`: without `--duration`, a
    /// window other than the even day is measured for [`WINDOW_LENGTH`].
    pub fn check_in(raw: &RunShape, window: Window) -> Result<Shape, UsageError> {
        let zero = Duration::ZERO;
        let default = match window {
            Window::Day => DEFAULT_DURATION,
            Window::PeakHour | Window::Morning => WINDOW_LENGTH,
        };
        let duration = raw.duration.unwrap_or(default);
        let duration = duration_within("duration", duration, MIN_DURATION, MAX_DURATION)?;
        let interval = duration_within("interval", raw.interval, MIN_INTERVAL, MAX_INTERVAL)?;
        let intervals = duration.as_nanos().div_ceil(interval.as_nanos());
        if intervals > u128::from(MAX_INTERVALS) {
            return Err(UsageError(format!(
                "--duration {} in intervals of {} makes {intervals} intervals, more than the \
                 {MAX_INTERVALS} a run may hold: choose a longer --interval",
                human(duration),
                human(interval)
            )));
        }
        Ok(Shape {
            day: raw
                .day
                .map(|day| duration_within("day", day, Duration::from_secs(1), MAX_DAY))
                .transpose()?,
            speed: raw
                .speed
                .map(|speed| positive_at_most("speed", speed, MAX_SPEED))
                .transpose()?,
            seed: raw.seed,
            ramp_up: duration_within("ramp-up", raw.ramp_up, zero, MAX_RAMP_UP)?,
            duration,
            drain: duration_within("drain", raw.drain, zero, MAX_DRAIN)?,
            interval,
            action_timeout: duration_within(
                "action-timeout",
                raw.action_timeout,
                MIN_ACTION_TIMEOUT,
                MAX_ACTION_TIMEOUT,
            )?,
            qos_p95_ms: raw
                .qos_p95_ms
                .map(|ms| positive_at_most("qos-p95-ms", ms, MAX_QOS_P95_MS))
                .transpose()?,
        })
    }
}

impl Shape {
    /// `[run]` of `config.toml`.
    pub fn run_section(&self) -> RunSection {
        RunSection {
            ramp_up: HumanDuration(self.ramp_up),
            duration: HumanDuration(self.duration),
            drain: HumanDuration(self.drain),
            interval: HumanDuration(self.interval),
            action_timeout: HumanDuration(self.action_timeout),
            check_state: None,
        }
    }
}

/// `peakhour run`'s settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// `--users`, if given (else the lab's count, or the profile's).
    pub users: Option<u32>,
    /// The run's shape in time and its QoS limit.
    pub shape: Shape,
    /// `--window`: the part of the day measured.
    pub window: Window,
    /// `--high-average-window`: the monitor's shortest high-average window.
    pub high_average_window: Duration,
    /// `--monitor-baseline`: the idle server sampled before the load.
    pub monitor_baseline: Duration,
    /// `--allow-domain`: the domains mail may go to, lowercase, without a final dot.
    pub allow_domains: Vec<String>,
    /// The monitor's `--group NAME=SPEC` specs, each checked to parse.
    pub groups: Vec<String>,
    /// The monitor's `--node-exporter URL`, checked to parse.
    pub node_exporter: Option<String>,
    /// `--shard I/N`, or `--shards N` with the index from
    /// `JOB_COMPLETION_INDEX`; the whole population without either.
    pub shard: Shard,
    /// `--start-at`, within [`peakhour_engine::MAX_START_AHEAD`] ahead and
    /// [`peakhour_engine::MAX_START_BEHIND`] behind the time of the check.
    pub start_at: Option<SystemTime>,
    /// `--beyond-limits`: run even when one process cannot hold the run.
    pub beyond_limits: bool,
    /// `--check-state[=INTERVAL]`: the state checks (IMAP, with a checkpoint
    /// every interval; JMAP; CalDAV); `None` when off.
    pub check_state: Option<Duration>,
}

impl RunConfig {
    /// Says which limit of this machine the run of `plan` over `protocol`
    /// would hit first ([`peakhour_engine::limits`]) and acts on it: spreads
    /// the users over loopback source addresses in `target` when ports are
    /// short, or refuses (exit 2) with the shards it needs, unless
    /// `--beyond-limits`.
    pub fn fit_limits(
        &self,
        plan: &peakhour_workload::Plan,
        protocol: peakhour_engine::MailProtocol,
        target: &mut std::sync::Arc<peakhour_engine::Target>,
    ) -> Result<peakhour_engine::limits::Decision, peakhour_engine::limits::LimitsError> {
        let target = std::sync::Arc::make_mut(target);
        peakhour_engine::limits::fit(plan, self.shard, protocol, target, self.beyond_limits)
    }

    /// Checks every option of `run` that has bounds; the profile, the target
    /// and the population are checked when they are read.
    pub fn check(args: &RunArgs) -> Result<RunConfig, UsageError> {
        let job_index = std::env::var("JOB_COMPLETION_INDEX").ok();
        RunConfig::check_at(args, SystemTime::now(), job_index.as_deref())
    }

    /// [`RunConfig::check`] at `now`, with `job_index` as
    /// `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job's) says it.
    pub fn check_at(
        args: &RunArgs,
        now: SystemTime,
        job_index: Option<&str>,
    ) -> Result<RunConfig, UsageError> {
        // Before the profile, the target or a connection: never over another's files.
        if let Some(out) = &args.out {
            peakhour_rundir::RunDir::check_unused(out).map_err(|e| UsageError(e.to_string()))?;
        }
        let distributed = &args.distributed;
        let start_at = (distributed.start_at.as_deref())
            .map(|text| parse_start_at(text, now))
            .transpose()
            .map_err(|e| UsageError(e.to_string()))?;
        let shard = Shard::choose(
            distributed.shard,
            distributed.shards,
            job_index,
            start_at.is_some(),
        )
        .map_err(|e| UsageError(e.to_string()))?;
        Ok(RunConfig {
            shard,
            start_at,
            beyond_limits: args.beyond_limits,
            check_state: args
                .check_state
                .map(|every| {
                    duration_within(
                        "check-state",
                        every,
                        MIN_CHECK_STATE_INTERVAL,
                        MAX_CHECK_STATE_INTERVAL,
                    )
                })
                .transpose()?,
            users: args
                .users
                .map(|users| count_within("users", users, 1, MAX_USERS))
                .transpose()?,
            shape: Shape::check_in(&args.shape, args.window)?,
            window: args.window,
            high_average_window: duration_within(
                "high-average-window",
                args.high_average_window,
                Duration::from_secs(1),
                MAX_HIGH_AVERAGE_WINDOW,
            )?,
            monitor_baseline: duration_within(
                "monitor-baseline",
                args.monitor_baseline,
                Duration::ZERO,
                MAX_MONITOR_BASELINE,
            )?,
            allow_domains: allowed_domains(&args.target)?,
            groups: checked_groups(&args.group)?,
            node_exporter: checked_node_exporter(args.node_exporter.as_deref())?,
        })
    }
}

/// A `--node-exporter` URL must be one the monitor can scrape.
pub fn checked_node_exporter(url: Option<&str>) -> Result<Option<String>, UsageError> {
    url.map(|url| {
        peakhour_monitor::NodeExporterSource::new(url, Duration::from_secs(2))
            .map(|_| url.to_owned())
            .map_err(|e| UsageError(format!("--node-exporter {url:?}: {e}")))
    })
    .transpose()
}

impl RunConfig {
    /// `[monitor]` of `config.toml`.
    pub fn monitor_section(&self) -> MonitorSection {
        MonitorSection {
            interval: HumanDuration(MONITOR_INTERVAL),
            high_average_window: HumanDuration(self.high_average_window),
            baseline: HumanDuration(self.monitor_baseline),
        }
    }
}

/// Every `--group` must parse as the monitor's `NAME=SPEC`.
pub fn checked_groups(groups: &[String]) -> Result<Vec<String>, UsageError> {
    for spec in groups {
        peakhour_monitor::GroupSpec::parse(spec)
            .map_err(|e| UsageError(format!("--group {spec:?}: {e}")))?;
    }
    Ok(groups.to_vec())
}

/// `peakhour init`'s settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct InitConfig {
    /// `--users`, if given (else the lab's count, or the profile's).
    pub users: Option<u32>,
    /// `--parallel`: mailboxes filled at once.
    pub parallel: usize,
    /// `--allow-domain`: the domains mail may go to, lowercase, without a final dot.
    pub allow_domains: Vec<String>,
}

impl InitConfig {
    /// Checks every option of `init` that has bounds.
    pub fn check(args: &InitArgs) -> Result<InitConfig, UsageError> {
        Ok(InitConfig {
            users: args
                .users
                .map(|users| count_within("users", users, 1, MAX_USERS))
                .transpose()?,
            parallel: count_within("parallel", args.parallel, 1, MAX_INIT_PARALLEL)?,
            allow_domains: allowed_domains(&args.target)?,
        })
    }
}

/// The `--allow-domain` values: domain names, not addresses or patterns.
fn allowed_domains(target: &TargetArgs) -> Result<Vec<String>, UsageError> {
    target
        .allow_domain
        .iter()
        .map(|domain| {
            let trimmed = domain.trim().trim_end_matches('.');
            let valid = !trimmed.is_empty()
                && trimmed.contains('.')
                && trimmed
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if valid {
                Ok(trimmed.to_ascii_lowercase())
            } else {
                Err(UsageError(format!(
                    "--allow-domain {domain:?} is not a domain name such as mail.corp.example"
                )))
            }
        })
        .collect()
}

fn human(d: Duration) -> String {
    peakhour_workload::HumanDuration(d).to_string()
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::args::{Cli, Command};

    fn run_args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["peakhour", "run"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(args) => args,
            _ => unreachable!("a run"),
        }
    }

    #[test]
    fn issue_27_item_2_check_state_takes_an_optional_interval_within_bounds() {
        let check = |extra: &[&str]| RunConfig::check_at(&run_args(extra), SystemTime::now(), None);
        assert_eq!(check(&[]).unwrap().check_state, None);
        let default = check(&["--check-state"]).unwrap().check_state;
        assert_eq!(default, Some(Duration::from_secs(30)));
        let chosen = check(&["--check-state=5s"]).unwrap().check_state;
        assert_eq!(chosen, Some(Duration::from_secs(5)));
        let too_often = check(&["--check-state=100ms"]).unwrap_err().to_string();
        assert!(too_often.contains("check-state"), "{too_often}");
        // Issue 27 item 3: a run over JMAP is checked too.
        let jmap = check(&["--check-state", "--protocol", "jmap"]).unwrap();
        assert_eq!(jmap.check_state, Some(Duration::from_secs(30)));
    }

    #[test]
    fn the_defaults_are_within_bounds() {
        let config = RunConfig::check(&run_args(&[])).expect("defaults");
        assert_eq!(config.shape.duration, Duration::from_secs(120));
        assert_eq!(config.shape.action_timeout, Duration::from_secs(30));
    }

    #[test]
    fn issue_11_absurd_run_options_are_refused_with_the_flag_named() {
        let cases: &[(&[&str], &str)] = &[
            (&["--interval", "1ms"], "--interval 1ms"),
            (&["--action-timeout", "0s"], "--action-timeout 0s"),
            (&["--qos-p95-ms", "NaN"], "--qos-p95-ms NaN"),
            (&["--qos-p95-ms", "inf"], "--qos-p95-ms inf"),
            (&["--qos-p95-ms=-5"], "--qos-p95-ms -5"),
            (&["--speed", "0"], "--speed 0"),
            (&["--speed", "1e300"], "--speed 1e300"),
            (&["--duration", "9000h"], "--duration 9000h"),
            (&["--duration", "0s"], "--duration 0s"),
            (&["--ramp-up", "48h"], "--ramp-up 48h"),
            (&["--drain", "48h"], "--drain 48h"),
            (&["--users", "0"], "--users 0"),
            (&["--users", "4000000000"], "--users 4000000000"),
            (&["--day", "0s"], "--day 0s"),
            (&["--duration", "720h", "--interval", "1s"], "intervals"),
            (&["--allow-domain", "user@corp.example"], "--allow-domain"),
            (&["--monitor-baseline", "5h"], "--monitor-baseline"),
            (&["--group", "Bad Name=x"], "--group"),
            (&["--group", "imapd=("], "--group"),
        ];
        for (argv, expected) in cases {
            let error = RunConfig::check(&run_args(argv)).expect_err("out of bounds");
            assert!(error.0.contains(expected), "{argv:?}: {error}");
        }
    }

    #[test]
    fn issue_26_item_6_a_start_too_far_ahead_or_behind_is_refused_with_the_time_and_the_bound() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000);
        let check = |at: &str| RunConfig::check_at(&run_args(&["--start-at", at]), now, None);
        let error = check("9999-12-31T23:59:59Z").expect_err("years ahead");
        assert!(error.0.contains("9999-12-31T23:59:59Z"), "{error}");
        assert!(error.0.contains("24h"), "the bound: {error}");
        let in_the_past = chrono_text(now - Duration::from_secs(2 * 3600));
        let error = check(&in_the_past).expect_err("two hours ago");
        assert!(
            error.0.contains(&in_the_past) && error.0.contains("1h"),
            "{error}"
        );
        // Within the bounds: an hour ahead, half an hour late.
        for at in [
            now + Duration::from_secs(3600),
            now - Duration::from_secs(1800),
        ] {
            let config = check(&chrono_text(at)).expect("within bounds");
            assert_eq!(config.start_at, Some(at));
        }
    }

    #[test]
    fn issue_26_item_7_a_bad_start_or_a_shard_without_one_is_a_usage_error() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000);
        let error = RunConfig::check_at(&run_args(&["--start-at", "tomorrow"]), now, None)
            .expect_err("not RFC 3339");
        assert!(
            error.0.contains("RFC 3339") && error.0.contains("tomorrow"),
            "{error}"
        );
        let error = RunConfig::check_at(&run_args(&["--shard", "1/2"]), now, None)
            .expect_err("no common start");
        assert!(error.0.contains("--start-at"), "{error}");
        let error =
            RunConfig::check_at(&run_args(&["--shards", "2"]), now, None).expect_err("no index");
        assert!(error.0.contains("JOB_COMPLETION_INDEX"), "{error}");
        let at = chrono_text(now + Duration::from_secs(60));
        let config = RunConfig::check_at(
            &run_args(&["--shards", "2", "--start-at", &at]),
            now,
            Some("1"),
        )
        .expect("an indexed shard");
        assert_eq!((config.shard.index(), config.shard.count()), (1, 2));
    }

    /// `at` in RFC 3339, whole seconds.
    fn chrono_text(at: SystemTime) -> String {
        chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    #[test]
    fn allowed_domains_are_normalized() {
        let config =
            RunConfig::check(&run_args(&["--allow-domain", "Corp.Example.CO."])).expect("a domain");
        assert_eq!(config.allow_domains, vec!["corp.example.co".to_owned()]);
    }
}
