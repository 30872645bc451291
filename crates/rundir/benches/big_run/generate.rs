//! A generated run directory as `peakhour run` writes it: the plan of
//! mmb-medium, every action, command, counter, logon, delivery, scheduling
//! lag probe and CPU sample fed through the analysis layer's recorders in
//! time order, the server monitor's samples written through its own CSV
//! writer, and the files written through `RunDir`.
//!
//! The latencies are made up (log-normal per action, slower as the offered
//! load nears the server's capacity); everything else about the run's shape
//! is what the engine records: one event per action at its end, the
//! commands it sent, IDLE and DONE, a lag probe every 10 ms and a CPU
//! sample every second.

use std::path::Path;
use std::time::Duration;

use peakhour_analysis::bootstrap::SplitMix64;
use peakhour_analysis::monitor::{MetricTable, TimeWindow, findings, mail_queue_at_end};
use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalRecorder, Outcome, Phase, PhaseLengths, RecorderConfig,
    RunMeta, RunRecord, Summary, counters,
};
use peakhour_monitor::{
    CpuSample, CpuShares, CsvWriter, DiskSample, GroupSample, MailSample, MemorySample,
    NetworkSample, QueueSizes, Sample, SystemSample,
};
use peakhour_rundir::{MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::{ActionKind, HumanDuration, Overrides, Plan};

type BoxError = Box<dyn std::error::Error>;

/// The engine's late-start threshold (`peakhour_engine::user::LATE_AFTER`).
const LATE_AFTER: Duration = Duration::from_millis(10);
/// The run's scheduling-lag probe fires every 10 ms.
const LAG_PROBE: Duration = Duration::from_millis(10);
/// The monitor and the client's CPU sampler run every second.
const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// The shape of one generated run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Simulated users.
    pub(crate) users: u32,
    /// Day compression.
    pub(crate) speed: f64,
    /// The run's seed (the schedule's and the made-up latencies').
    pub(crate) seed: u64,
    /// Logon ramp-up.
    pub(crate) logon: Duration,
    /// Steady phase.
    pub(crate) steady: Duration,
    /// Drain.
    pub(crate) drain: Duration,
    /// Actions per second the made-up server completes at most.
    pub(crate) capacity_per_s: f64,
    /// Multiplies every latency (a slower server for a comparison).
    pub(crate) slowdown: f64,
}

/// What was generated.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Generated {
    /// Actions recorded (successes, errors and skips).
    pub(crate) actions: u64,
    /// Protocol commands recorded, IDLE and DONE included.
    pub(crate) commands: u64,
    /// Rows of monitor.csv.
    pub(crate) monitor_rows: u64,
}

/// A log-normal latency's median and spread, per action.
fn latency_model(kind: ActionKind) -> (f64, f64) {
    match kind {
        ActionKind::CheckInbox => (18.0, 0.6),
        ActionKind::Read => (9.0, 0.7),
        ActionKind::Move => (14.0, 0.6),
        ActionKind::Delete => (16.0, 0.6),
        ActionKind::Send => (95.0, 0.5),
        ActionKind::UpdateCalendar => (22.0, 0.6),
        // Groupware actions: not in mmb-medium, modelled for completeness.
        ActionKind::PollCalendar => (12.0, 0.6),
        ActionKind::CreateEvent => (25.0, 0.6),
        ActionKind::ChangeEvent => (35.0, 0.6),
        ActionKind::DownloadMail => (40.0, 0.6),
    }
}

/// The commands an action sends (before IDLE, which every action ends with).
fn commands_of(kind: ActionKind) -> &'static [&'static str] {
    match kind {
        ActionKind::CheckInbox => &["imap.SELECT", "imap.FETCH"],
        ActionKind::Read => &["imap.UID FETCH"],
        ActionKind::Move => &["imap.UID MOVE"],
        ActionKind::Delete => &["imap.UID MOVE"],
        ActionKind::Send => &[
            "smtp.CONNECT",
            "smtp.EHLO",
            "smtp.AUTH",
            "smtp.TRANSACTION",
            "smtp.QUIT",
            "imap.APPEND",
        ],
        ActionKind::UpdateCalendar => &["imap.UID STORE", "imap.UID EXPUNGE", "imap.APPEND"],
        ActionKind::PollCalendar => &["caldav.PROPFIND", "caldav.REPORT"],
        ActionKind::CreateEvent => &["caldav.PUT"],
        ActionKind::ChangeEvent => &["caldav.REPORT", "caldav.PUT"],
        ActionKind::DownloadMail => &["pop3.STAT", "pop3.UIDL", "pop3.RETR", "pop3.DELE"],
    }
}

struct Rng(SplitMix64);

impl Rng {
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponential with the given mean.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (1.0 - self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1000.0)
}

/// The plan of mmb-medium for `shape`.
pub(crate) fn plan(shape: &Shape) -> Result<Plan, BoxError> {
    let profile = peakhour_workload::builtin("mmb-medium")?.profile()?;
    Ok(Plan::resolve(
        &profile,
        &Overrides {
            users: Some(shape.users),
            speed: Some(shape.speed),
            seed: Some(shape.seed),
            ..Overrides::default()
        },
    )?)
}

/// Actions per second all users offer once logged on.
pub(crate) fn offered_per_s(plan: &Plan) -> f64 {
    plan.rates().iter().map(|r| r.per_second).sum::<f64>() * f64::from(plan.users())
}

/// Offered load over capacity.
fn utilization(plan: &Plan, shape: &Shape) -> f64 {
    offered_per_s(plan) / shape.capacity_per_s
}

/// The events of one run, fed to the recorders in time order.
struct Generator<'a> {
    shape: &'a Shape,
    plan: &'a Plan,
    rng: Rng,
    recorder: IntervalRecorder,
    delivery: DeliveryRecorder,
    generated: Generated,
    /// Latency multiplier from the load.
    load_factor: f64,
    /// Share of offered actions the server gets through.
    completed_share: f64,
    /// Cumulative action weights, for picking a kind.
    cumulative: Vec<(ActionKind, f64)>,
}

impl Generator<'_> {
    fn logged_on(&self, t: Duration) -> u32 {
        let users = self.shape.users;
        if t >= self.shape.logon {
            return users;
        }
        (f64::from(users) * t.as_secs_f64() / self.shape.logon.as_secs_f64()) as u32
    }

    fn pick_kind(&mut self) -> ActionKind {
        let total = self.cumulative.last().map_or(1.0, |c| c.1);
        let x = self.rng.unit() * total;
        self.cumulative
            .iter()
            .find(|(_, c)| x < *c)
            .or(self.cumulative.last())
            .map_or(ActionKind::Read, |(k, _)| *k)
    }

    /// One action starting (as intended) at `at`, recorded at its end.
    fn action(&mut self, at: Duration) {
        let kind = self.pick_kind();
        let (median, sigma) = latency_model(kind);
        let factor = self.load_factor * self.shape.slowdown;
        let latency_ms = median * factor * (sigma * self.rng.normal()).exp();
        let late_ms = if self.rng.unit() < 0.01 {
            self.rng.exp(40.0)
        } else {
            self.rng.exp(0.4)
        };
        let started = at + ms(late_ms);
        let end = started + ms(latency_ms);
        let outcome = if self.rng.unit() < 0.0005 {
            Outcome::Error("imap:timeout")
        } else {
            Outcome::Ok
        };
        if kind == ActionKind::CheckInbox && self.rng.unit() < 0.02 {
            self.recorder.count(end, "skipped_empty_inbox", 1);
            self.generated.actions += 1;
            return;
        }
        let timing = ActionTiming {
            intended_start: at,
            actual_start: started,
            end,
        };
        self.recorder.record_action(kind.name(), timing, outcome);
        self.generated.actions += 1;
        let commands = commands_of(kind);
        let share = latency_ms / commands.len() as f64;
        self.recorder.record_command(started, "imap.DONE", ms(0.1));
        for name in commands {
            let command_ms = share * (0.3 * self.rng.normal()).exp();
            self.recorder.record_command(end, name, ms(command_ms));
        }
        self.recorder.record_command(end, "imap.IDLE", ms(0.2));
        self.generated.commands += commands.len() as u64 + 2;
        self.counters(kind, end);
    }

    fn counters(&mut self, kind: ActionKind, end: Duration) {
        match kind {
            ActionKind::CheckInbox => self.recorder.count(end, counters::FOLDER_OPENS, 1),
            ActionKind::Read => self.recorder.count(end, counters::MESSAGE_OPENS, 1),
            ActionKind::Send => {
                let recipients = 1 + self.rng.exp(self.plan.expected_recipients() - 1.0) as u64;
                self.recorder.count(end, counters::MESSAGES_SUBMITTED, 1);
                self.recorder
                    .count(end, counters::RECIPIENTS_SUBMITTED, recipients);
                self.delivery.submitted(recipients);
                for _ in 0..recipients {
                    // Seen through IDLE: Dovecot's 0.5 s notification delay and the queue.
                    let latency = 500.0 + self.rng.exp(150.0 * self.load_factor);
                    self.delivery.delivered(ms(latency));
                    self.recorder.count(end, counters::RECIPIENTS_DELIVERED, 1);
                }
            }
            _ => {}
        }
    }

    /// One 10 ms tick: the lag probe, logons, the CPU sample, then the
    /// actions intended to start in it.
    fn tick(&mut self, t: Duration, actions_end: Duration, per_user_per_s: f64) {
        let lag_us = 30.0 + self.rng.exp(40.0) + if self.rng.unit() < 0.005 { 3000.0 } else { 0.0 };
        self.recorder
            .record_scheduling_lag(t, Duration::from_micros(lag_us as u64));
        let before = self.logged_on(t.saturating_sub(LAG_PROBE));
        let now = self.logged_on(t);
        if now > before {
            for _ in before..now {
                self.recorder
                    .record_command(t, "imap.CONNECT", ms(1.0 + self.rng.exp(2.0)));
                self.recorder
                    .record_command(t, "imap.LOGIN", ms(3.0 + self.rng.exp(5.0)));
            }
            self.recorder.set_users_logged_on(t, now);
        }
        if t.as_millis().is_multiple_of(SAMPLE_PERIOD.as_millis()) {
            let busy = 100.0 * (offered_share(self) * 0.25).min(0.9);
            self.recorder
                .record_client_cpu(t, busy * (0.9 + 0.2 * self.rng.unit()));
        }
        if t >= actions_end {
            return;
        }
        let rate = f64::from(now) * per_user_per_s * self.completed_share;
        let tick_ms = LAG_PROBE.as_secs_f64() * 1000.0;
        let mut at_ms = self.rng.exp(1000.0 / rate.max(1e-9));
        while at_ms < tick_ms {
            self.action(t + ms(at_ms));
            at_ms += self.rng.exp(1000.0 / rate);
        }
    }
}

fn offered_share(g: &Generator<'_>) -> f64 {
    utilization(g.plan, g.shape).min(1.0)
}

/// The run's record: every interval, the deliveries and the metadata.
fn record(plan: &Plan, shape: &Shape) -> Result<(RunRecord, Generated), BoxError> {
    let rho = utilization(plan, shape);
    let mut cumulative = Vec::new();
    let mut sum = 0.0;
    for r in plan.rates() {
        sum += r.per_second;
        cumulative.push((r.kind, sum));
    }
    let mut g = Generator {
        shape,
        plan,
        rng: Rng(SplitMix64::new(shape.seed)),
        recorder: IntervalRecorder::new(RecorderConfig {
            interval: peakhour_analysis::DEFAULT_INTERVAL,
            late_start_threshold: LATE_AFTER,
        })?,
        delivery: DeliveryRecorder::new(),
        generated: Generated::default(),
        // Past capacity queues build up: slower, and a little less done.
        load_factor: 1.0 + 0.5 * rho.powi(8),
        completed_share: if rho <= 1.0 {
            1.0
        } else {
            (1.0 - 0.04 * (rho - 1.0)) / rho
        },
        cumulative,
    };
    let per_user_per_s = sum;
    let steady_start = shape.logon;
    let drain_start = steady_start + shape.steady;
    let end = drain_start + shape.drain;
    let mut t = Duration::ZERO;
    let mut phase = Phase::Logon;
    while t < end {
        let now = if t >= drain_start {
            Phase::Drain
        } else if t >= steady_start {
            Phase::Steady
        } else {
            Phase::Logon
        };
        if now != phase {
            g.recorder.enter_phase(now, t);
            phase = now;
        }
        g.tick(t, drain_start, per_user_per_s);
        t += LAG_PROBE;
    }
    let intervals = g.recorder.finish(end);
    let record = RunRecord::new(meta(plan, shape), intervals, g.delivery.finish()?);
    Ok((record, g.generated))
}

/// The metadata as the engine writes it (`peakhour_engine::recording::run_meta`).
fn meta(plan: &Plan, shape: &Shape) -> RunMeta {
    let run_id = format!("20261123T000000Z-mmb-medium-{}u", shape.users);
    let mut meta = RunMeta::new(
        run_id,
        plan.name(),
        plan.users(),
        plan.seed(),
        "2026-11-23T00:00:00Z",
    );
    meta.phases = PhaseLengths {
        logon: shape.logon,
        steady: shape.steady,
        drain: shape.drain,
    };
    meta.day = plan.day();
    meta.speed = plan.speed();
    meta.late_start_threshold = LATE_AFTER;
    meta.client_cores = 2;
    meta.peakhour_version = env!("CARGO_PKG_VERSION").to_owned();
    meta.action_weights = plan
        .rates()
        .iter()
        .map(|r| (r.kind.name().to_owned(), r.per_day))
        .collect();
    for kind in plan.actions() {
        meta.qos
            .p95_ms
            .insert(kind.name().to_owned(), plan.qos_p95_ms(kind));
    }
    meta
}

/// One second of the lab as the local monitor sees it: two cores, the
/// disk, loopback and the NIC, Dovecot, Postfix and peakhour, the queues.
fn lab_sample(rng: &mut Rng, time_s: f64, busy_share: f64, connections: u32) -> Sample {
    let mut noise = |base: f64, spread: f64| (base * (1.0 + spread * rng.normal())).max(0.0);
    let busy = (100.0 * busy_share).min(99.0);
    let user = noise(busy * 0.6, 0.1).min(busy);
    let shares = |user: f64, busy: f64| CpuShares {
        user_pct: user,
        system_pct: busy - user,
        iowait_pct: 0.5,
        steal_pct: 0.0,
        idle_pct: (100.0 - busy - 0.5).max(0.0),
    };
    let total = shares(user, busy);
    let per_core = vec![total, total];
    let disk = |device: &str, writes: f64| DiskSample {
        device: device.to_owned(),
        reads_per_s: Some(1.0),
        writes_per_s: Some(writes),
        read_kb_per_s: Some(4.0),
        write_kb_per_s: Some(writes * 12.0),
        util_pct: Some((writes / 20.0).min(100.0)),
        queue_len: Some(writes / 500.0),
        await_ms: Some(0.8),
    };
    let net = |interface: &str, bytes: f64| NetworkSample {
        interface: interface.to_owned(),
        rx_bytes_per_s: Some(bytes),
        tx_bytes_per_s: Some(bytes),
        rx_packets_per_s: Some(bytes / 900.0),
        tx_packets_per_s: Some(bytes / 900.0),
        errors_per_s: Some(0.0),
        drops_per_s: Some(0.0),
    };
    let group = |name: &str, cpu: f64, processes: u32, rss_kb: u64| GroupSample {
        name: name.to_owned(),
        processes,
        threads: processes,
        rss_kb,
        cpu_pct: Some(cpu),
        read_bytes_per_s: Some(0.0),
        write_bytes_per_s: Some(cpu * 40_000.0),
        ctx_switches_per_s: Some(cpu * 120.0),
    };
    let imap_processes = connections / 100 + 8;
    Sample {
        time_s,
        system: SystemSample {
            cores: 2,
            cpu: Some(CpuSample { total, per_core }),
            run_queue: Some(noise(2.0 * busy_share + 1.0, 0.3)),
            load1: Some(2.0 * busy_share + 1.0),
            pressure: Default::default(),
            memory: MemorySample {
                total_kb: 24_000_000,
                available_kb: 20_000_000 - u64::from(connections) * 60,
                cached_kb: 3_000_000,
                swap_total_kb: 0,
                swap_used_kb: 0,
                major_faults_per_s: Some(0.0),
                swap_in_pages_per_s: Some(0.0),
                swap_out_pages_per_s: Some(0.0),
            },
            disks: vec![disk("vda", noise(busy * 3.0, 0.2))],
            networks: vec![net("eth0", 2_000.0), net("lo", noise(busy * 30_000.0, 0.2))],
        },
        groups: vec![
            group("dovecot", noise(busy * 1.2, 0.15), imap_processes, 400_000),
            group("postfix", noise(busy * 0.3, 0.2), 12, 60_000),
            group("peakhour", noise(busy * 0.2, 0.2), 1, 80_000),
        ],
        mail: MailSample {
            postfix_queue: Some(QueueSizes {
                incoming: 0,
                active: noise(busy / 10.0, 0.5) as u64,
                deferred: 0,
                hold: 0,
            }),
            dovecot_processes: Some(imap_processes + 6),
            dovecot_connections: Some(connections),
        },
        monitor_cpu_us: Some(noise(5_000.0, 0.1)),
        cgroup: None,
        client_net: None,
    }
}

/// Writes monitor.csv through the monitor's CSV writer, one row a second,
/// and returns the samples as the monitor keeps them.
fn monitor(dir: &RunDir, plan: &Plan, shape: &Shape) -> Result<(MetricTable, u64), BoxError> {
    let mut rng = Rng(SplitMix64::new(shape.seed ^ 0x6d6f_6e69));
    let mut csv = CsvWriter::new(dir.create_monitor_csv()?);
    let mut table = MetricTable::default();
    let end = shape.logon + shape.steady + shape.drain;
    let busy = utilization(plan, shape).min(1.0) * 0.95;
    let mut rows = 0;
    let mut t = SAMPLE_PERIOD;
    while t <= end {
        let ramp = (t.as_secs_f64() / shape.logon.as_secs_f64()).min(1.0);
        let load = if t > shape.logon + shape.steady {
            0.05
        } else {
            busy * ramp
        };
        let users = (f64::from(shape.users) * ramp) as u32;
        let sample = lab_sample(&mut rng, t.as_secs_f64(), load, users);
        csv.write_sample(&sample)?;
        table.push(sample.time_s, &sample.metrics());
        rows += 1;
        t += SAMPLE_PERIOD;
    }
    Ok((table, rows))
}

/// `config.toml` as `peakhour run` writes it.
fn config(plan: &Plan, shape: &Shape) -> Result<RunConfig, BoxError> {
    Ok(RunConfig::new(
        RunSection {
            ramp_up: HumanDuration(shape.logon),
            duration: HumanDuration(shape.steady),
            drain: HumanDuration(shape.drain),
            interval: HumanDuration(peakhour_analysis::DEFAULT_INTERVAL),
            action_timeout: HumanDuration(Duration::from_secs(30)),
            check_state: None,
        },
        TargetSection {
            imap: "127.0.0.1:10143".into(),
            smtp: "127.0.0.1:10025".into(),
            security_shortcuts: Vec::new(),
            lab: None,
            source_addresses: Vec::new(),
        },
        MonitorSection {
            interval: HumanDuration(SAMPLE_PERIOD),
            high_average_window: HumanDuration(peakhour_rundir::DEFAULT_HIGH_AVERAGE_WINDOW),
            baseline: HumanDuration(Duration::ZERO),
        },
        plan,
    )?)
}

/// Writes a whole run directory at `path` as `peakhour run` does: config,
/// monitor.csv, the summary with the monitor's findings, the results, host.json
/// and report.html.
pub(crate) fn run_dir(path: &Path, shape: &Shape) -> Result<Generated, BoxError> {
    let plan = plan(shape)?;
    let dir = RunDir::create(path)?;
    dir.write_config(&config(&plan, shape)?)?;
    let (table, rows) = monitor(&dir, &plan, shape)?;
    let (record, mut generated) = record(&plan, shape)?;
    generated.monitor_rows = rows;
    let mut summary = Summary::compute(&record)?;
    let start = summary.steady.start_s;
    let window = TimeWindow::new(start + 0.5, start + summary.steady.length_s + 0.5);
    let found = findings(&table, window, peakhour_rundir::DEFAULT_HIGH_AVERAGE_WINDOW);
    summary.bottleneck = Some(found.bottleneck);
    summary.resources = found.resources;
    summary.delivery.mail_queue_at_end = mail_queue_at_end(&table);
    dir.write_results(&record, &summary)?;
    dir.write_host(&peakhour_rundir::host::collect(
        None,
        &peakhour_analysis::Redactor::default(),
    ))?;
    dir.write_report()?;
    Ok(generated)
}
