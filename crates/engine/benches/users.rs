//! The generator's own cost, measured against the real lab (run as root):
//!
//! * **RSS per connected idle user**: N users log on and idle (IMAP IDLE on
//!   their Inbox); peakhour's resident memory before and during the steady
//!   phase, divided by N.
//! * **Scheduling lag**: the run's own probe (how long a woken task waits to
//!   run) p50/p99/max while they idle; and, beside it, how late a 10 ms
//!   tokio sleep ends (the timer wheel's 1 ms resolution plus that lag).
//! * **CPU per action**: users running the mmb-medium profile at a high day
//!   compression; peakhour's CPU time divided by the actions completed.
//!
//! `cargo bench -p peakhour-engine --bench users -- [IDLE_USERS] [ACTIVE_USERS]`
//! (defaults 5000 and 200). It prints figures; it asserts nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_engine::{
    Credentials, Endpoint, Event, LAG_PROBE_PERIOD, Observer, Outcome, Phase, RunClock,
    RunSettings, SelfSample, Target, process_cpu_time,
};
use peakhour_lab::{LabConfig, LabGuard, Ports};
use peakhour_net::{Secret, TlsSettings};
use peakhour_workload::{Overrides, Plan, Profile, builtin};
use tokio::sync::watch;
use tokio::time::Instant;

/// A profile whose users log on and then only idle: one check per simulated week.
const IDLE_PROFILE: &str = r#"
name = "idle"
description = "log on, then idle on the Inbox"
day = "8h"
[users]
count = 1
name = "user{n}"
first = 1
domain = "bench.test"
[recipients]
average = 1
[actions.check_inbox]
per_day = 0.0001
[[mix]]
label = "tiny"
weight = 1
body = "1KB"
"#;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Meter {
    logged_on: i64,
    steady_rss_max: u64,
    steady_users_min: Option<i64>,
    lags: Vec<Duration>,
    /// First and last lag reading of the steady phase.
    steady_window: Option<(Instant, Instant)>,
    actions_ok: u64,
    actions_failed: u64,
    errors: std::collections::BTreeMap<String, u64>,
}

impl Observer for Meter {
    fn event(&mut self, _clock: &RunClock, _at: Instant, event: &Event) {
        match event {
            Event::LoggedOn(change) => self.logged_on += i64::from(*change),
            Event::Action { outcome, .. } => match outcome {
                Outcome::Ok => self.actions_ok += 1,
                Outcome::Error(kind) => {
                    self.actions_failed += 1;
                    *self.errors.entry(kind.clone()).or_default() += 1;
                }
                Outcome::Skipped(_) => {}
            },
            Event::LogonFailed(kind) | Event::SessionError(kind) => {
                *self.errors.entry(kind.clone()).or_default() += 1;
            }
            _ => {}
        }
    }

    fn lag(&mut self, clock: &RunClock, at: Instant, lag: Duration) {
        if clock.phase(at) == Phase::Steady {
            self.lags.push(lag);
            let window = self.steady_window.get_or_insert((at, at));
            window.1 = at;
        }
    }

    fn tick(&mut self, clock: &RunClock, at: Instant, _sample: SelfSample) {
        if clock.phase(at) == Phase::Steady {
            self.steady_rss_max = self.steady_rss_max.max(rss_kib());
            let users = self.steady_users_min.get_or_insert(self.logged_on);
            *users = (*users).min(self.logged_on);
        }
    }
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn target(lab: &LabGuard) -> Arc<Target> {
    let status = &lab.status;
    let tls = TlsSettings {
        extra_ca_file: Some(status.ca_file.clone().into()),
        ..TlsSettings::default()
    }
    .client_config()
    .expect("TLS config");
    Arc::new(Target {
        imap: Endpoint::parse(&format!("imap://{}", status.endpoints.imap), &["imap"])
            .expect("imap"),
        smtp: Endpoint::parse(&format!("smtp://{}", status.endpoints.smtp), &["smtp"])
            .expect("smtp"),
        jmap: None,
        lmtp: Some(
            Endpoint::parse(&format!("lmtp://{}", status.endpoints.lmtp), &["lmtp"]).expect("lmtp"),
        ),
        caldav: None,
        pop3: None,
        tls,
        credentials: Credentials::Shared(Secret::new(status.password.clone())),
        options: peakhour_engine::ServerOptions::default(),
    })
}

fn settings(name: &str, ramp_up: Duration, duration: Duration) -> RunSettings {
    RunSettings {
        run_id: format!("bench-{name}"),
        ramp_up,
        duration,
        drain: Duration::from_secs(5),
        action_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        client_name: "bench.peakhour.test".into(),
        interval: Duration::from_secs(10),
        qos_p95_ms: None,
        shard: peakhour_engine::Shard::whole(),
        start_at: None,
        protocol: peakhour_engine::MailProtocol::Imap,
        check_state: None,
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let idle_users: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let active_users: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    // 0755: the lab refuses (and does not chmod) a 0700 directory its servers cannot reach.
    let dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .expect("tempdir");
    let config = LabConfig {
        users: idle_users.max(active_users),
        ports: Ports::free().expect("free ports"),
        // One Dovecot process per 100 connections, or 5,000 users need 5,000 processes.
        imap_client_limit: 100,
        ..LabConfig::new(dir.path())
    };
    let lab = LabGuard::start(&config).expect("the lab (run as root, after scripts/setup.sh)");
    let target = target(&lab);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    idle_users_cost(&runtime, &target, idle_users);
    active_users_cost(&runtime, target, active_users);
}

/// Idle users: memory and scheduling lag.
fn idle_users_cost(runtime: &tokio::runtime::Runtime, target: &Arc<Target>, idle_users: u32) {
    let profile = Profile::parse("idle.toml", IDLE_PROFILE).expect("idle profile");
    let plan = Arc::new(
        Plan::resolve(
            &profile,
            &Overrides {
                users: Some(idle_users),
                ..Overrides::default()
            },
        )
        .expect("plan"),
    );
    let before = rss_kib();
    let mut meter = Meter::default();
    let (_stop_tx, stop) = watch::channel(false);
    // Dovecot logs on about 100 new users a second here (LIST, CREATE, SELECT each).
    let ramp = Duration::from_secs_f64((f64::from(idle_users) / 80.0).max(5.0));
    let started = Instant::now();
    let timer_lateness = Arc::new(Mutex::new(Vec::new()));
    let timer_probe = runtime.spawn({
        let readings = timer_lateness.clone();
        async move {
            loop {
                let asked = Instant::now() + LAG_PROBE_PERIOD;
                tokio::time::sleep_until(asked).await;
                let late = Instant::now().saturating_duration_since(asked);
                readings.lock().expect("lock").push((asked, late));
            }
        }
    });
    runtime
        .block_on(peakhour_engine::run(
            plan,
            target.clone(),
            settings("idle", ramp, Duration::from_secs(20)),
            stop,
            &mut meter,
        ))
        .expect("the idle run");
    timer_probe.abort();
    let mut timer_late: Vec<Duration> = match meter.steady_window {
        Some((from, to)) => timer_lateness
            .lock()
            .expect("lock")
            .iter()
            .filter(|(at, _)| (from..=to).contains(at))
            .map(|(_, late)| *late)
            .collect(),
        None => Vec::new(),
    };
    timer_late.sort_unstable();
    let users = meter.steady_users_min.unwrap_or(0).max(1) as u64;
    let mut lags = meter.lags.clone();
    lags.sort_unstable();
    println!(
        "idle users: {idle_users} asked, {users} logged on through the steady phase ({:.0} s ramp-up)",
        ramp.as_secs_f64()
    );
    println!(
        "  RSS before {before} KiB, steady max {} KiB",
        meter.steady_rss_max
    );
    println!(
        "  RSS per connected idle user: {:.1} KiB",
        meter.steady_rss_max.saturating_sub(before) as f64 / users as f64
    );
    println!(
        "  scheduling lag (woken task waits to run): p50 {:?}, p99 {:?}, max {:?} over {} probes",
        percentile(&lags, 0.50),
        percentile(&lags, 0.99),
        lags.last().copied().unwrap_or_default(),
        lags.len()
    );
    println!(
        "  10 ms tokio sleep ends late by: p50 {:?}, p99 {:?}, max {:?} over {} sleeps",
        percentile(&timer_late, 0.50),
        percentile(&timer_late, 0.99),
        timer_late.last().copied().unwrap_or_default(),
        timer_late.len()
    );
    println!(
        "  errors: {:?}; wall {:.0} s",
        meter.errors,
        started.elapsed().as_secs_f64()
    );
}

/// Active users: CPU per action.
fn active_users_cost(runtime: &tokio::runtime::Runtime, target: Arc<Target>, active_users: u32) {
    let profile = builtin("mmb-medium")
        .expect("builtin")
        .profile()
        .expect("profile");
    let overrides = Overrides {
        users: Some(active_users),
        speed: Some(300.0),
        ..Overrides::default()
    };
    let plan = Arc::new(Plan::resolve(&profile, &overrides).expect("plan"));
    let mut meter = Meter::default();
    let (_stop_tx, stop) = watch::channel(false);
    let cpu_before = process_cpu_time().unwrap_or_default();
    let wall = Instant::now();
    runtime
        .block_on(peakhour_engine::run(
            plan,
            target,
            settings("active", Duration::from_secs(5), Duration::from_secs(30)),
            stop,
            &mut meter,
        ))
        .expect("the active run");
    let cpu = process_cpu_time()
        .unwrap_or_default()
        .saturating_sub(cpu_before);
    let actions = meter.actions_ok + meter.actions_failed;
    println!("active users: {active_users} on mmb-medium at speed 300 for 30 s steady");
    println!(
        "  {actions} actions ({} failed), peakhour CPU {:.2} s over {:.0} s wall = {:.0} µs of CPU per action (including logon, IDLE and reconciliation)",
        meter.actions_failed,
        cpu.as_secs_f64(),
        wall.elapsed().as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / actions.max(1) as f64
    );
    println!("  errors: {:?}", meter.errors);
}
