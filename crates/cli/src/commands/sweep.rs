//! `peakhour sweep`: one `peakhour run` per user count, then the capacity
//! curve (NetBench's mixes of growing client counts, seed 004).
//!
//! Each step is a child process (`peakhour run ... --out SWEEP_DIR/step-Nu`)
//! so that a step is exactly what `peakhour run` measures, with its own run
//! directory and report; the sweep only collects the steps' `summary.json`,
//! writes `capacity.csv`, and runs the capacity analysis on the curve. See
//! `docs/capacity.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use anyhow::{Context as _, bail};
use peakhour_analysis::capacity::{CapacityAnalysis, CapacityBound, CapacityOptions, CurvePoint};
use peakhour_lab::Lab;
use peakhour_report::capacity_html::{CapacityPage, render_capacity_html};
use peakhour_workload::HumanDuration;
use serde_json::Value;

use super::analyze::render_text;
use super::target::load_profile;
use crate::args::SweepArgs;

/// Exit code of a sweep stopped by SIGINT or SIGTERM, as `peakhour run`'s.
const EXIT_INTERRUPTED: u8 = 130;

/// The fixed columns of `capacity.csv`; `p95_ms.<action>` columns follow,
/// one per action, in name order.
pub(crate) const CAPACITY_CSV_COLUMNS: [&str; 13] = [
    "users",
    "throughput_actions_per_s",
    "weighted_p95_ms",
    "max_action_p95_ms",
    "actions",
    "errors",
    "error_ratio",
    "cpu_busy_pct",
    "bottleneck",
    "client_bound",
    "verdict",
    "interrupted",
    "run_dir",
];

/// Which p95 the capacity curve (and its QoS capacity) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum P95Basis {
    /// `score.weighted_p95_ms`: the MMB-style score.
    Weighted,
    /// The largest per-action p95 of the step: the strictest reading.
    MaxAction,
}

impl P95Basis {
    fn parse(text: &str) -> anyhow::Result<Self> {
        match text {
            "weighted" => Ok(Self::Weighted),
            "max-action" => Ok(Self::MaxAction),
            other => bail!("--p95 {other:?}: use weighted or max-action"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Weighted => "weighted p95",
            Self::MaxAction => "max per-action p95",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::Weighted => "the score's weighted p95 (summary.json score.weighted_p95_ms)",
            Self::MaxAction => {
                "the largest per-action p95 of each step (summary.json actions.*.p95_ms)"
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Weighted => "weighted",
            Self::MaxAction => "max-action",
        }
    }
}

/// The user counts `from, from·factor, from·factor², …` rounded to whole
/// users, strictly increasing, up to `to`; `to` itself ends the list when
/// the progression steps over it.
pub(crate) fn geometric_steps(from: u32, to: u32, factor: f64) -> Result<Vec<u32>, String> {
    if from == 0 {
        return Err("--from must be at least 1".into());
    }
    if to < from {
        return Err(format!("--to {to} is below --from {from}"));
    }
    if !factor.is_finite() || factor <= 1.0 {
        return Err(format!("--factor {factor} must be greater than 1"));
    }
    let mut steps = vec![from];
    let mut exact = f64::from(from);
    loop {
        exact *= factor;
        let next = exact.round();
        if next > f64::from(to) {
            break;
        }
        let next = next as u32;
        if steps.last().is_some_and(|last| next > *last) {
            steps.push(next);
        }
        if steps.len() > 1000 {
            return Err("more than 1000 steps; raise --factor".into());
        }
    }
    if steps.last() != Some(&to) {
        steps.push(to);
    }
    Ok(steps)
}

/// What the early-stop rule looks at in one finished step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StepCheck {
    /// The step's user count.
    pub(crate) users: u32,
    /// The step's QoS verdict failed.
    pub(crate) qos_failed: bool,
    /// Attempted actions in the steady phase (successes and errors).
    pub(crate) attempts: u64,
    /// Failed actions among them.
    pub(crate) errors: u64,
}

/// The early-stop rule: stop climbing when the last step's errors are
/// above `max_error_ratio` of its attempted actions, or when QoS failed in
/// the last two steps. Returns why, in a sentence.
pub(crate) fn early_stop(steps: &[StepCheck], max_error_ratio: f64) -> Option<String> {
    let last = steps.last()?;
    if last.attempts > 0 {
        let ratio = last.errors as f64 / last.attempts as f64;
        if ratio > max_error_ratio {
            return Some(format!(
                "errors were {:.1}% of the actions at {} users ({} of {}), above --max-error-ratio {}",
                ratio * 100.0,
                last.users,
                last.errors,
                last.attempts,
                max_error_ratio
            ));
        }
    }
    if let [.., before, last] = steps
        && before.qos_failed
        && last.qos_failed
    {
        return Some(format!(
            "QoS failed in two consecutive steps ({} and {} users)",
            before.users, last.users
        ));
    }
    None
}

/// The user counts of the sweep, sorted, from `--users` or `--from/--to/--factor`.
fn step_users(args: &SweepArgs) -> anyhow::Result<Vec<u32>> {
    let mut steps = match (&args.users, args.from, args.to) {
        (Some(list), None, None) => list.clone(),
        (None, Some(from), Some(to)) => {
            geometric_steps(from, to, args.factor).map_err(anyhow::Error::msg)?
        }
        (None, Some(_), None) => bail!("--from needs --to"),
        _ => bail!("give either --users N,N,... or --from N --to N [--factor X]"),
    };
    if steps.contains(&0) {
        bail!("a step of 0 users measures nothing; remove it from --users");
    }
    steps.sort_unstable();
    steps.dedup();
    if steps.is_empty() {
        bail!("--users lists no user count");
    }
    Ok(steps)
}

/// One finished step, from its `summary.json`.
#[derive(Clone, Debug)]
struct StepResult {
    users: u32,
    dir: PathBuf,
    verdict: String,
    interrupted: bool,
    client_bound: bool,
    throughput: Option<f64>,
    weighted_p95: Option<f64>,
    action_p95: BTreeMap<String, Option<f64>>,
    action_limits: Vec<f64>,
    attempts: u64,
    errors: u64,
    cpu_pct: Option<f64>,
    bottleneck: Option<String>,
    bottleneck_evidence: Option<String>,
    speed: Option<f64>,
    seed: Option<u64>,
}

impl StepResult {
    fn read(users: u32, dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("in {}", path.display()))?;
        let mut action_p95 = BTreeMap::new();
        let mut action_limits = Vec::new();
        let (mut attempts, mut errors) = (0, 0);
        if let Some(actions) = v["actions"].as_object() {
            for (name, a) in actions {
                action_p95.insert(name.clone(), a["p95_ms"].as_f64());
                let count = a["count"].as_u64().unwrap_or(0);
                let failed = a["errors"].as_u64().unwrap_or(0);
                attempts += count + failed;
                errors += failed;
                if let Some(limit) = a["p95_limit_ms"].as_f64() {
                    action_limits.push(limit);
                }
            }
        }
        let cpu_pct = v["resources"].as_array().and_then(|rs| {
            rs.iter()
                .find(|r| r["metric"] == "cpu_busy_pct")
                .and_then(|r| r["mean"].as_f64())
        });
        Ok(Self {
            users,
            dir: dir.to_path_buf(),
            verdict: v["verdict"].as_str().unwrap_or("unknown").to_string(),
            interrupted: v["interrupted"].as_bool().unwrap_or(false),
            client_bound: v["client_bound"].as_bool().unwrap_or(false),
            throughput: v["throughput"]["actions_per_second"].as_f64(),
            weighted_p95: v["score"]["weighted_p95_ms"].as_f64(),
            action_p95,
            action_limits,
            attempts,
            errors,
            cpu_pct,
            bottleneck: v["bottleneck"]["resource"].as_str().map(str::to_string),
            bottleneck_evidence: v["bottleneck"]["evidence"].as_str().map(str::to_string),
            speed: v["meta"]["speed"].as_f64(),
            seed: v["seed"].as_u64(),
        })
    }

    fn max_action_p95(&self) -> Option<f64> {
        self.action_p95
            .values()
            .flatten()
            .copied()
            .fold(None, |acc: Option<f64>, p| {
                Some(acc.map_or(p, |a| a.max(p)))
            })
    }

    fn p95(&self, basis: P95Basis) -> Option<f64> {
        match basis {
            P95Basis::Weighted => self.weighted_p95,
            P95Basis::MaxAction => self.max_action_p95(),
        }
    }

    fn error_ratio(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.errors as f64 / self.attempts as f64)
    }

    fn check(&self) -> StepCheck {
        StepCheck {
            users: self.users,
            qos_failed: self.verdict == "fail",
            attempts: self.attempts,
            errors: self.errors,
        }
    }

    fn line(&self) -> String {
        format!(
            "{} users: {} actions/s, weighted p95 {} ms, max action p95 {} ms, errors {}/{}, CPU {}, bottleneck {}{}, verdict {}{}",
            self.users,
            opt(self.throughput, 2),
            opt(self.weighted_p95, 0),
            opt(self.max_action_p95(), 0),
            self.errors,
            self.attempts,
            self.cpu_pct
                .map(|c| format!("{c:.0}%"))
                .unwrap_or_else(|| "-".into()),
            self.bottleneck.as_deref().unwrap_or("-"),
            if self.client_bound {
                " (CLIENT-BOUND)"
            } else {
                ""
            },
            self.verdict,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            },
        )
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v}")).unwrap_or_default()
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `capacity.csv`: the fixed columns, then `p95_ms.<action>` per action.
fn capacity_table(steps: &[StepResult]) -> (Vec<String>, Vec<Vec<String>>) {
    let actions: BTreeSet<&String> = steps.iter().flat_map(|s| s.action_p95.keys()).collect();
    let mut header: Vec<String> = CAPACITY_CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    header.extend(actions.iter().map(|a| format!("p95_ms.{a}")));
    let rows = steps
        .iter()
        .map(|s| {
            let mut row = vec![
                s.users.to_string(),
                cell(s.throughput),
                cell(s.weighted_p95),
                cell(s.max_action_p95()),
                s.attempts.to_string(),
                s.errors.to_string(),
                s.error_ratio()
                    .map(|r| format!("{r:.4}"))
                    .unwrap_or_default(),
                s.cpu_pct.map(|c| format!("{c:.1}")).unwrap_or_default(),
                s.bottleneck.clone().unwrap_or_default(),
                s.client_bound.to_string(),
                s.verdict.clone(),
                s.interrupted.to_string(),
                s.dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ];
            row.extend(
                actions
                    .iter()
                    .map(|a| cell(s.action_p95.get(*a).copied().flatten())),
            );
            row
        })
        .collect();
    (header, rows)
}

fn write_capacity_csv(dir: &Path, steps: &[StepResult]) -> anyhow::Result<()> {
    let (header, rows) = capacity_table(steps);
    let mut text = String::new();
    for row in std::iter::once(&header).chain(rows.iter()) {
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    let path = dir.join("capacity.csv");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// SIGINT and SIGTERM: set a flag and pass SIGINT on to the running step.
struct Interrupt {
    flag: Arc<AtomicBool>,
    child: Arc<AtomicU32>,
}

impl Interrupt {
    fn install() -> anyhow::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let child = Arc::new(AtomicU32::new(0));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (thread_flag, thread_child) = (flag.clone(), child.clone());
        std::thread::Builder::new()
            .name("sweep-signals".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                runtime.block_on(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    let (mut int, mut term) =
                        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
                            (Ok(i), Ok(t)) => (i, t),
                            (Err(e), _) | (_, Err(e)) => {
                                let _ = ready_tx.send(Err(e.to_string()));
                                return;
                            }
                        };
                    let _ = ready_tx.send(Ok(()));
                    loop {
                        tokio::select! {
                            _ = int.recv() => {}
                            _ = term.recv() => {}
                        }
                        if !thread_flag.swap(true, Ordering::SeqCst) {
                            eprintln!(
                                "\nsweep: interrupted; stopping the current step, then writing what was measured"
                            );
                        }
                        forward_sigint(thread_child.load(Ordering::SeqCst));
                    }
                });
            })
            .context("cannot start the signal thread")?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { flag, child }),
            Ok(Err(e)) => bail!("cannot watch for SIGINT: {e}"),
            Err(_) => bail!("cannot watch for SIGINT"),
        }
    }

    fn interrupted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

fn forward_sigint(pid: u32) {
    if pid == 0 {
        return;
    }
    if let Ok(pid) = i32::try_from(pid) {
        // The child may have exited already; nothing to do then.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        );
    }
}

/// Copies a child's output to our stderr line by line, each line prefixed.
/// Carriage returns (live lines redrawn in place) end a line too.
fn pump(mut from: impl std::io::Read, prefix: String) {
    let mut buf = [0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let flush = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{prefix}{text}");
        }
        line.clear();
    };
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        flush(&mut line);
                    } else {
                        line.push(b);
                    }
                }
            }
        }
    }
    flush(&mut line);
}

/// Runs `peakhour ARGS` with its stdout and stderr streamed through to our
/// stderr under `prefix`, SIGINT passed on.
fn run_child(args: &[OsString], prefix: &str, interrupt: &Interrupt) -> anyhow::Result<ExitStatus> {
    // The running binary itself: through /proc/self/exe every step runs the
    // same peakhour even if the file is replaced (rebuilt) during the sweep,
    // when current_exe() would name a deleted file.
    let proc_exe = Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().context("cannot find the peakhour executable")?
    };
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    interrupt.child.store(child.id(), Ordering::SeqCst);
    if interrupt.interrupted() {
        forward_sigint(child.id());
    }
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        let prefix = prefix.to_string();
        pumps.push(std::thread::spawn(move || pump(out, prefix)));
    }
    if let Some(err) = child.stderr.take() {
        let prefix = prefix.to_string();
        pumps.push(std::thread::spawn(move || pump(err, prefix)));
    }
    let status = child.wait();
    interrupt.child.store(0, Ordering::SeqCst);
    for p in pumps {
        let _ = p.join();
    }
    status.context("waiting for the step failed")
}

fn duration(d: std::time::Duration) -> OsString {
    HumanDuration(d).to_string().into()
}

/// The flags every child gets: profile and target.
fn common_args(args: &SweepArgs) -> Vec<OsString> {
    let t = &args.target;
    let mut out: Vec<OsString> = vec![
        "--profile".into(),
        args.profile.profile.clone().into(),
        "--target".into(),
        t.target.clone().into(),
        "--lab-dir".into(),
        t.lab_dir.clone().into(),
        "--password-env".into(),
        t.password_env.clone().into(),
    ];
    let mut push = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            out.push(flag.into());
            out.push(value);
        }
    };
    push("--imap", t.imap.clone().map(Into::into));
    push("--smtp", t.smtp.clone().map(Into::into));
    push("--lmtp", t.lmtp.clone().map(Into::into));
    push("--users-file", t.users_file.clone().map(Into::into));
    push("--ca-file", t.ca_file.clone().map(Into::into));
    if t.insecure_skip_tls_verify {
        out.push("--insecure-skip-tls-verify".into());
    }
    out
}

fn run_args(args: &SweepArgs, users: u32, seed: u64, dir: &Path) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["run".into()];
    out.extend(common_args(args));
    out.extend([
        "--users".into(),
        users.to_string().into(),
        "--seed".into(),
        seed.to_string().into(),
        "--duration".into(),
        duration(args.shape.duration),
        "--ramp-up".into(),
        duration(args.shape.ramp_up),
        "--drain".into(),
        duration(args.shape.drain),
        "--interval".into(),
        duration(args.shape.interval),
        "--action-timeout".into(),
        duration(args.shape.action_timeout),
        "--out".into(),
        dir.into(),
    ]);
    if let Some(day) = args.shape.day {
        out.extend(["--day".into(), duration(day)]);
    }
    if let Some(speed) = args.shape.speed {
        out.extend(["--speed".into(), speed.to_string().into()]);
    }
    if let Some(ms) = args.shape.qos_p95_ms {
        out.extend(["--qos-p95-ms".into(), ms.to_string().into()]);
    }
    out
}

/// With `--target lab`: the lab is up and has users for the largest step.
fn check_lab(args: &SweepArgs, max_users: u32) -> anyhow::Result<()> {
    if args.target.target != "lab" {
        return Ok(());
    }
    let dir = &args.target.lab_dir;
    let status = Lab::new(dir).status().with_context(|| {
        format!(
            "--target lab needs a running lab with at least {max_users} users: \
             peakhour lab up --dir {} --users {max_users}",
            dir.display()
        )
    })?;
    if !status.healthy {
        bail!(
            "the lab in {} is not healthy; see `peakhour lab status --dir {}`",
            status.dir,
            dir.display()
        );
    }
    if status.users < max_users {
        bail!(
            "the lab has {} users and the largest step needs {max_users}; restart it with \
             `peakhour lab down --dir {d} && peakhour lab up --dir {d} --users {max_users}`",
            status.users,
            d = dir.display()
        );
    }
    Ok(())
}

/// The p95 limit the analysis holds the curve to.
fn qos_limit(args: &SweepArgs, steps: &[StepResult]) -> (f64, Option<String>) {
    if let Some(ms) = args.shape.qos_p95_ms {
        return (ms, None);
    }
    let limits: Vec<f64> = steps
        .iter()
        .flat_map(|s| s.action_limits.iter().copied())
        .filter(|l| l.is_finite() && *l > 0.0)
        .collect();
    let Some(min) = limits.iter().copied().reduce(f64::min) else {
        return (peakhour_analysis::DEFAULT_P95_LIMIT_MS, None);
    };
    let max = limits.iter().copied().fold(min, f64::max);
    let note = (max > min).then(|| {
        format!(
            "the profile's actions have different p95 limits ({min} to {max} ms); the curve is held to the strictest, {min} ms"
        )
    });
    (min, note)
}

/// The capacity statement in sentences: the headline, the bottleneck where
/// QoS gave out, client-bound steps, day compression and why the sweep stopped.
fn statement(
    analysis: &CapacityAnalysis,
    steps: &[StepResult],
    basis: P95Basis,
    profile: &str,
    stopped: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let speed = steps.iter().find_map(|s| s.speed);
    let at_speed = speed.map(|s| format!(" at speed {s}")).unwrap_or_default();
    if let Some(q) = &analysis.qos {
        let limit = q.limit_ms;
        let tput = |x: Option<f64>| x.map(|x| format!("{x:.1} actions/s")).unwrap_or_default();
        out.push(match (q.bound, q.load) {
            (CapacityBound::Interpolated, Some(load)) => format!(
                "This server carries about {load:.0} users of profile {profile}{at_speed} within QoS ({} <= {limit} ms), at about {}.",
                basis.label(),
                tput(q.throughput)
            ),
            (CapacityBound::AllPassed, Some(load)) => format!(
                "This server carries at least {load:.0} users of profile {profile}{at_speed} within QoS ({} <= {limit} ms), at {}: every step passed, so the limit lies beyond the largest step.",
                basis.label(),
                tput(q.throughput)
            ),
            _ => format!(
                "This server did not meet QoS ({} <= {limit} ms) even at {} users of profile {profile}{at_speed}: its capacity is below the smallest step.",
                basis.label(),
                analysis.points.first().map_or(0.0, |p| p.load)
            ),
        });
    }
    out.push(format!(
        "Throughput peaked at {:.1} actions/s at {} users{}.",
        analysis.peak.throughput,
        analysis.peak.load,
        if analysis.peak.at_largest_load {
            ", the largest step, so it may rise further"
        } else {
            ""
        }
    ));
    // The bottleneck where QoS gave out, else at the largest step.
    let failing = steps.iter().find(|s| s.verdict == "fail" && !s.interrupted);
    let largest = steps.iter().rev().find(|s| !s.interrupted);
    if let Some((step, which)) = failing
        .map(|s| (s, "the first step that failed QoS"))
        .or_else(|| largest.map(|s| (s, "the largest step")))
        && let Some(resource) = &step.bottleneck
    {
        let evidence = step
            .bottleneck_evidence
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        out.push(if resource == "none" {
            format!(
                "At {} users, {which}, the server monitor found no saturated resource{evidence}: look at the server's configuration (process limits, locks) or at the network.",
                step.users
            )
        } else {
            format!(
                "At {} users, {which}, the server monitor names {resource} as the bottleneck{evidence}.",
                step.users
            )
        });
    }
    let bound: Vec<String> = steps
        .iter()
        .filter(|s| s.client_bound)
        .map(|s| s.users.to_string())
        .collect();
    if !bound.is_empty() {
        out.push(format!(
            "peakhour flagged itself client-bound at {} users (its own CPU or scheduling lag passed its limits, see each step's summary.json): those steps' response times include the load generator's own delays, so they may describe the client rather than the server. When the client shares the server's host, as with the lab, this is also a sign that the host's CPUs are saturated; run the load from another host to separate the two.",
            bound.join(", ")
        ));
    }
    if let Some(speed) = speed
        && speed > 1.0
    {
        out.push(format!(
            "Each simulated user ran its day {speed} times faster than a real one (day compression), so it offers about {speed} real users' worth of actions, over fewer connections."
        ));
    }
    if let Some(why) = stopped {
        out.push(format!("The sweep stopped climbing early: {why}."));
    }
    out
}

fn profile_slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

pub(crate) fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let steps = step_users(&args)?;
    let basis = P95Basis::parse(&args.p95)?;
    if !(0.0..=1.0).contains(&args.max_error_ratio) {
        bail!("--max-error-ratio must lie between 0 and 1");
    }
    if let Some(ms) = args.shape.qos_p95_ms
        && !(ms > 0.0 && ms.is_finite())
    {
        bail!("--qos-p95-ms must be a positive number of milliseconds");
    }
    let profile = load_profile(&args.profile.profile)?;
    let max_users = steps[steps.len() - 1];
    check_lab(&args, max_users)?;
    let seed = args.shape.seed.unwrap_or(peakhour_workload::DEFAULT_SEED);

    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "{}-sweep-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            profile_slug(&profile.name)
        ))
    });
    if dir.join("capacity.csv").exists()
        || steps
            .iter()
            .any(|n| dir.join(format!("step-{n}u")).join("summary.json").exists())
    {
        bail!(
            "{} already holds a sweep; choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the sweep directory {}", dir.display()))?;
    let interrupt = Interrupt::install()?;

    let list: Vec<String> = steps.iter().map(u32::to_string).collect();
    eprintln!(
        "sweep {}: profile {}, users {}, seed {seed}, each step {} ramp-up + {} steady + {} drain; stop after two QoS failures in a row or errors above {}",
        dir.display(),
        profile.name,
        list.join(", "),
        HumanDuration(args.shape.ramp_up),
        HumanDuration(args.shape.duration),
        HumanDuration(args.shape.drain),
        args.max_error_ratio
    );

    if !args.no_init {
        let mut init: Vec<OsString> = vec!["init".into()];
        init.extend(common_args(&args));
        init.extend([
            "--users".into(),
            max_users.to_string().into(),
            "--seed".into(),
            seed.to_string().into(),
        ]);
        eprintln!("sweep: initializing {max_users} mailboxes once, for the largest step");
        let status = run_child(&init, "[init] ", &interrupt)?;
        if interrupt.interrupted() {
            eprintln!("sweep: interrupted during init; no step was run");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        if !status.success() {
            bail!("init failed ({status}); no step was run (see its output above)");
        }
    }

    let mut results: Vec<StepResult> = Vec::new();
    let mut stopped: Option<String> = None;
    let mut failed: Option<String> = None;
    for (i, &users) in steps.iter().enumerate() {
        if interrupt.interrupted() {
            break;
        }
        let step_dir = dir.join(format!("step-{users}u"));
        let prefix = format!("[step {}/{} {users}u] ", i + 1, steps.len());
        eprintln!(
            "sweep: step {}/{}: {users} users -> {}",
            i + 1,
            steps.len(),
            step_dir.display()
        );
        let status = run_child(
            &run_args(&args, users, seed, &step_dir),
            &prefix,
            &interrupt,
        )?;
        let code = status.code();
        if !step_dir.join("summary.json").exists() {
            if !interrupt.interrupted() {
                failed = Some(format!(
                    "the step at {users} users ended without results ({status}); see its output above"
                ));
            }
            break;
        }
        let result = StepResult::read(users, &step_dir)?;
        println!("step {}/{}: {}", i + 1, steps.len(), result.line());
        let step_interrupted = result.interrupted || code == Some(i32::from(EXIT_INTERRUPTED));
        results.push(result);
        write_capacity_csv(&dir, &results)?;
        if step_interrupted || interrupt.interrupted() {
            break;
        }
        if !matches!(code, Some(0) | Some(1)) {
            failed = Some(format!(
                "the step at {users} users exited with {status}; see its output above"
            ));
            break;
        }
        let checks: Vec<StepCheck> = results.iter().map(StepResult::check).collect();
        if let Some(why) = early_stop(&checks, args.max_error_ratio) {
            if i + 1 < steps.len() {
                let rest: Vec<String> = steps[i + 1..].iter().map(u32::to_string).collect();
                println!(
                    "sweep: stopping early: {why}; not running {} users",
                    rest.join(", ")
                );
                stopped = Some(why);
            }
            break;
        }
    }
    write_capacity_csv(&dir, &results)?;
    let interrupted = interrupt.interrupted() || results.iter().any(|s| s.interrupted);

    let code = if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    if let Some(why) = &failed {
        eprintln!("sweep: {why}");
    }
    // Interrupted steps measured a shortened steady phase: kept in the CSV,
    // left out of the curve.
    let curve: Vec<&StepResult> = results
        .iter()
        .filter(|s| !s.interrupted && s.throughput.is_some())
        .collect();
    if curve.len() < 2 {
        println!(
            "sweep: {} complete step(s); the capacity analysis needs at least 2. capacity.csv: {}",
            curve.len(),
            dir.join("capacity.csv").display()
        );
        return Ok(code);
    }
    let (limit, limit_note) = qos_limit(&args, &results);
    let points: Vec<CurvePoint> = curve
        .iter()
        .map(|s| CurvePoint {
            load: f64::from(s.users),
            throughput: s.throughput.unwrap_or(0.0),
            p95_ms: s.p95(basis),
        })
        .collect();
    let options = CapacityOptions {
        qos_p95_ms: limit,
        ..CapacityOptions::default()
    };
    let analysis = CapacityAnalysis::compute(&points, &options)?;
    let sentences = statement(
        &analysis,
        &results,
        basis,
        &profile.name,
        stopped.as_deref(),
    );
    let mut notes = Vec::new();
    notes.push(format!(
        "Throughput is actions per second over each step's steady phase (summary.json throughput.actions_per_second); p95 is {}.",
        basis.source()
    ));
    if let Some(note) = &limit_note {
        notes.push(note.clone());
    }
    if let Some(why) = &stopped {
        notes.push(format!("Stopped early: {why}."));
    }
    if let Some(why) = &failed {
        notes.push(format!("Stopped: {why}."));
    }
    if interrupted {
        notes.push("The sweep was interrupted; interrupted steps are in capacity.csv but not in the curve.".into());
    }

    let mut json = serde_json::to_value(&analysis)?;
    if let Some(object) = json.as_object_mut() {
        object.insert(
            "sweep".into(),
            serde_json::json!({
                "dir": dir.display().to_string(),
                "profile": profile.name,
                "seed": results.iter().find_map(|s| s.seed).unwrap_or(seed),
                "speed": results.iter().find_map(|s| s.speed),
                "steps_planned": steps,
                "steps_run": results.iter().map(|s| s.users).collect::<Vec<_>>(),
                "load": "users",
                "throughput": "actions_per_second",
                "p95_basis": basis.name(),
                "p95_source": basis.source(),
                "qos_p95_ms": limit,
                "max_error_ratio": args.max_error_ratio,
                "stopped_early": stopped,
                "failed": failed,
                "interrupted": interrupted,
                "statement": sentences,
            }),
        );
    }
    let json_path = dir.join("capacity.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("cannot write {}", json_path.display()))?;

    let (header, rows) = capacity_table(&results);
    let title = format!("peakhour sweep: {}", profile.name);
    let subtitle = format!(
        "users {} · seed {seed}{} · each step {} ramp-up, {} steady, {} drain · {}",
        results
            .iter()
            .map(|s| s.users.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        results
            .iter()
            .find_map(|s| s.speed)
            .map(|s| format!(" · speed {s}"))
            .unwrap_or_default(),
        HumanDuration(args.shape.ramp_up),
        HumanDuration(args.shape.duration),
        HumanDuration(args.shape.drain),
        dir.display()
    );
    let html = render_capacity_html(&CapacityPage {
        title: &title,
        subtitle: &subtitle,
        analysis: &analysis,
        load_label: "users",
        throughput_label: "actions/s",
        p95_label: basis.label(),
        statement: &sentences,
        table_header: &header,
        table_rows: &rows,
        notes: &notes,
    });
    let html_path = dir.join("capacity.html");
    std::fs::write(&html_path, html)
        .with_context(|| format!("cannot write {}", html_path.display()))?;

    let mut text = String::new();
    let _ = writeln!(text);
    text.push_str(&render_text(
        &analysis,
        &format!(
            "throughput (actions/s) and {} against users, sweep {}",
            basis.label(),
            dir.display()
        ),
    ));
    let _ = writeln!(text, "\nCapacity statement");
    for s in &sentences {
        let _ = writeln!(text, "  {s}");
    }
    let _ = writeln!(text);
    for n in &notes {
        let _ = writeln!(text, "note: {n}");
    }
    let _ = writeln!(
        text,
        "results: {} (capacity.csv, capacity.json, capacity.html, step-*u/)",
        dir.display()
    );
    print!("{text}");
    Ok(code)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn from_to_factor_expands_geometrically() {
        assert_eq!(
            geometric_steps(25, 800, 2.0).unwrap(),
            vec![25, 50, 100, 200, 400, 800]
        );
        // `to` ends the list when the progression steps over it.
        assert_eq!(
            geometric_steps(25, 700, 2.0).unwrap(),
            vec![25, 50, 100, 200, 400, 700]
        );
        // Rounding never repeats a user count.
        assert_eq!(
            geometric_steps(1, 10, 1.5).unwrap(),
            vec![1, 2, 3, 5, 8, 10]
        );
        assert_eq!(geometric_steps(5, 5, 2.0).unwrap(), vec![5]);
        assert!(geometric_steps(0, 5, 2.0).is_err());
        assert!(geometric_steps(10, 5, 2.0).is_err());
        assert!(geometric_steps(1, 5, 1.0).is_err());
        assert!(geometric_steps(1, 5, f64::NAN).is_err());
    }

    fn step(users: u32, qos_failed: bool, attempts: u64, errors: u64) -> StepCheck {
        StepCheck {
            users,
            qos_failed,
            attempts,
            errors,
        }
    }

    #[test]
    fn early_stop_after_two_failures_in_a_row_or_too_many_errors() {
        assert_eq!(early_stop(&[], 0.05), None);
        // One failure is not enough; a pass in between resets it.
        let one = [step(25, false, 100, 0), step(50, true, 100, 0)];
        assert_eq!(early_stop(&one, 0.05), None);
        let reset = [
            step(25, true, 100, 0),
            step(50, false, 100, 0),
            step(100, true, 100, 0),
        ];
        assert_eq!(early_stop(&reset, 0.05), None);
        let two = [
            step(25, false, 100, 0),
            step(50, true, 100, 0),
            step(100, true, 100, 0),
        ];
        let why = early_stop(&two, 0.05).unwrap();
        assert!(why.contains("50 and 100 users"), "{why}");
        // Errors: strictly above the ratio stops, at it does not.
        assert_eq!(early_stop(&[step(25, false, 100, 5)], 0.05), None);
        let why = early_stop(&[step(25, false, 100, 6)], 0.05).unwrap();
        assert!(why.contains("6.0%") && why.contains("25 users"), "{why}");
        // Nothing attempted: no ratio to judge.
        assert_eq!(early_stop(&[step(25, false, 0, 0)], 0.05), None);
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("CPU"), "CPU");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
