//! `peakhour run` with a file profile: NetBench's disk mix (`netbench-disk-mix`, or a file
//! profile TOML) or a dbench/NBENCH trace replay (`nbench --loadfile FILE`), against a
//! directory (`--dir`), an SMB share (`--smb`) or the lab's Samba (`--target lab`).
//!
//! It writes the same run directory as a mail run: `config.toml` (the resolved file
//! plan and target, no password), `summary.json` with `throughput.bytes_per_second`,
//! `record.json`, the CSVs, `monitor.csv` with a `samba` process group, and
//! `report.html`. See docs/files.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::{Summary, Verdict};
use peakhour_engine::Credentials;
use peakhour_engine::files::{
    FileEvent, FileObserver, FileProgress, FileRunResult, FileRunSettings, FileTarget,
    FileWorkload, LoadFile, run_files,
};
use peakhour_files::CachePolicy;
use peakhour_lab::{Lab, LabStatus};
use peakhour_monitor::analysis::{TimeWindow, findings};
use peakhour_monitor::{GroupSpec, LocalConfig, LocalSource, Monitor, MonitorConfig};
use peakhour_net::Secret;
use peakhour_rundir::{DirKind, MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::HumanDuration;
use peakhour_workload::files::{FileOverrides, FilePlan, FileProfile, file_builtin};
use tokio::sync::watch;
use tokio::time::Instant;

use super::monitor::{cost_line, wait_for_signal};
use crate::args::{FileArgs, RunArgs, TargetArgs};

/// The built-in trace-replay profile.
pub(crate) const NBENCH: &str = "nbench";

/// The server monitor samples every second during a run.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// Exit code of a run stopped by SIGINT or SIGTERM.
const EXIT_INTERRUPTED: u8 = 130;

/// Samba's processes on Debian 12: `smbd` and its helpers (`smbd-notifyd`,
/// `cleanupd`), `samba-dcerpcd`, `samba-bgqd` and the `rpcd_*` services.
const SAMBA_PROCESSES: &str = "^(smbd|cleanupd|samba-dcerpc|samba-bgqd|rpcd_)";

/// A file profile, as `--profile` names it.
pub(crate) enum FileProfileChoice {
    /// A disk mix (boxed: a profile is large and `Nbench` is nothing).
    Mix(Box<FileProfile>),
    /// `nbench`: replay a load file.
    Nbench,
}

impl FileProfileChoice {
    pub(crate) fn name(&self) -> &str {
        match self {
            FileProfileChoice::Mix(p) => &p.name,
            FileProfileChoice::Nbench => NBENCH,
        }
    }
}

/// The file profile `name` names, or `None` when it is a mail profile: a built-in file
/// profile, `nbench`, or a TOML file with a `[workspace]` table or a `[[script]]`.
pub(crate) fn file_profile(name: &str) -> anyhow::Result<Option<FileProfileChoice>> {
    if name == NBENCH {
        return Ok(Some(FileProfileChoice::Nbench));
    }
    if let Ok(builtin) = file_builtin(name) {
        return Ok(Some(FileProfileChoice::Mix(Box::new(builtin.profile()?))));
    }
    let path = Path::new(name);
    if !path.is_file() {
        return Ok(None);
    }
    let source =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let is_file_profile = source.lines().any(|l| {
        let l = l.trim();
        l == "[workspace]" || l == "[[script]]"
    });
    if !is_file_profile {
        return Ok(None);
    }
    Ok(Some(FileProfileChoice::Mix(Box::new(FileProfile::parse(
        &path.display().to_string(),
        &source,
    )?))))
}

/// The lab's SMB share, `smb://127.0.0.1:PORT/SHARE`, when it runs Samba
/// (`lab up --with smb`). Read from the status as `lab status --json` prints it, so a
/// lab without Samba simply has none.
fn lab_smb_endpoint(status: &LabStatus) -> Option<String> {
    let json = serde_json::to_value(status).ok()?;
    let endpoint = json.get("endpoints")?.get("smb")?.as_str()?;
    Some(if endpoint.starts_with("smb://") {
        endpoint.to_owned()
    } else {
        format!("smb://{endpoint}")
    })
}

/// `smb://[LOGIN@]host[:port]/share` split into the login pattern and the address.
fn split_login(url: &str) -> (Option<String>, String) {
    let Some(rest) = url.strip_prefix("smb://") else {
        return (None, url.to_owned());
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((login, host)) => (
            Some(login.to_owned()),
            format!("smb://{host}{}", &rest[authority_end..]),
        ),
        None => (None, url.to_owned()),
    }
}

/// The target, and the lab's status when it is the lab.
fn resolve_file_target(
    files: &FileArgs,
    target: &TargetArgs,
    clients: Option<u32>,
) -> anyhow::Result<(FileTarget, Option<LabStatus>)> {
    if let Some(root) = &files.dir {
        let cache = match files.cache.as_str() {
            "bypass" => CachePolicy::Bypass,
            "keep" => CachePolicy::Keep,
            _ => CachePolicy::Auto,
        };
        // Check the directory now, before any client starts.
        peakhour_files::DirBackend::new(root, cache)
            .with_context(|| format!("--dir {}", root.display()))?;
        return Ok((
            FileTarget::Dir {
                root: root.clone(),
                cache,
            },
            None,
        ));
    }
    if let Some(url) = &files.smb {
        let (login, url) = split_login(url);
        peakhour_files::SmbTarget::from_url(&url, "", "").context("--smb")?;
        let credentials = match &target.users_file {
            Some(path) => Credentials::PerUser(super::target::read_users_file(path)?),
            None => Credentials::Shared(Secret::new(
                std::env::var(&target.password_env).with_context(|| {
                    format!(
                        "set the SMB password in ${} (or give --users-file)",
                        target.password_env
                    )
                })?,
            )),
        };
        return Ok((
            FileTarget::Smb {
                url,
                credentials,
                login_pattern: login.unwrap_or_else(|| "user{n}".into()),
                home_pattern: None,
            },
            None,
        ));
    }
    if target.target != "lab" {
        bail!("a file profile needs --dir PATH, --smb URL or --target lab");
    }
    let status = Lab::new(&target.lab_dir)
        .status()
        .context("--target lab needs a running lab with Samba (peakhour lab up --with smb)")?;
    let Some(url) = lab_smb_endpoint(&status) else {
        bail!(
            "the lab in {} runs no Samba; start it with `peakhour lab up --with smb`, or give --dir or --smb",
            status.dir
        );
    };
    if !status.healthy {
        bail!(
            "the lab in {} is not healthy; see `peakhour lab status --lab-dir {}`",
            status.dir,
            target.lab_dir.display()
        );
    }
    if let Some(n) = clients
        && n > status.users
    {
        bail!(
            "the lab has {} users and {n} clients were asked for; restart it with more --users",
            status.users
        );
    }
    Ok((
        FileTarget::Smb {
            url,
            credentials: Credentials::Shared(Secret::new(status.password.clone())),
            // The lab's share holds a directory per user, writable by that user only.
            login_pattern: "user{n}".into(),
            home_pattern: Some("user{n}".into()),
        },
        Some(status),
    ))
}

/// Reads and parses a load file; every bad line is reported (up to 10).
fn read_loadfile(path: &Path) -> anyhow::Result<LoadFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the load file {}", path.display()))?;
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    for line in peakhour_workload::files::parse_loadfile(&text) {
        match line {
            Ok(l) => lines.push(l),
            Err(e) => bad.push(e.to_string()),
        }
    }
    if !bad.is_empty() {
        let shown: Vec<&str> = bad.iter().take(10).map(String::as_str).collect();
        bail!(
            "{}: {} lines do not parse:\n  {}",
            path.display(),
            bad.len(),
            shown.join("\n  ")
        );
    }
    if lines.is_empty() {
        bail!("{} holds no operation", path.display());
    }
    Ok(LoadFile {
        source: path.display().to_string(),
        lines,
    })
}

fn overrides(args: &RunArgs) -> FileOverrides {
    let f = &args.files;
    FileOverrides {
        clients: args.users,
        seed: args.shape.seed,
        think_time: f.think_time,
        start_delay: f.start_delay,
        workspace_size: f.workspace,
        ramp_up: f.ramp_up_iterations,
        measured: f.measured_iterations,
        ramp_down: f.ramp_down_iterations,
        work_per_iteration: f.work_per_iteration,
    }
}

/// The workload: a resolved plan, or the parsed load file.
fn resolve_workload(
    choice: FileProfileChoice,
    args: &RunArgs,
    lab: Option<&LabStatus>,
) -> anyhow::Result<FileWorkload> {
    let default_clients = lab.map(|l| l.users.min(8)).unwrap_or(1);
    match choice {
        FileProfileChoice::Mix(profile) => {
            if args.files.loadfile.is_some() {
                bail!("--loadfile is for --profile nbench");
            }
            let mut o = overrides(args);
            if o.clients.is_none() && lab.is_some() {
                o.clients = Some(default_clients);
            }
            Ok(FileWorkload::Mix(Arc::new(FilePlan::resolve(
                &profile, &o,
            )?)))
        }
        FileProfileChoice::Nbench => {
            let path = args.files.loadfile.as_deref().context(
                "--profile nbench replays a load file: give --loadfile FILE (Debian's dbench ships /usr/share/dbench/client.txt)",
            )?;
            Ok(FileWorkload::Replay {
                load: Arc::new(read_loadfile(path)?),
                clients: args.users.unwrap_or(default_clients).max(1),
                name: NBENCH.into(),
                seed: args.shape.seed.unwrap_or(peakhour_workload::DEFAULT_SEED),
            })
        }
    }
}

/// The `[files]` table of config.toml: every setting of the workload and the target.
fn plan_table(workload: &FileWorkload, target: &FileTarget, args: &RunArgs) -> toml::Table {
    let mut files = toml::Table::new();
    let mut put = |k: &str, v: toml::Value| {
        files.insert(k.to_owned(), v);
    };
    put("target", target.kind().into());
    put("address", target.describe().into());
    if let Some(login) = target.login(1) {
        put("login_of_client_1", login.into());
    }
    if let FileTarget::Dir { cache, .. } = target {
        put("cache", format!("{cache:?}").to_lowercase().into());
    }
    put("cleanup", (!args.files.keep_workspace).into());
    match workload {
        FileWorkload::Mix(plan) => {
            let (up, measured, down) = plan.iterations();
            put("ramp_up_iterations", i64::from(up).into());
            put("measured_iterations", i64::from(measured).into());
            put("ramp_down_iterations", i64::from(down).into());
            put(
                "think_time",
                HumanDuration(plan.think_time()).to_string().into(),
            );
            put(
                "start_delay",
                HumanDuration(plan.start_delay_max()).to_string().into(),
            );
            put("workspace_bytes", (plan.workspace_size() as i64).into());
            put(
                "workspace_directory",
                plan.workspace_dir(1).replace("client1", "client{n}").into(),
            );
            put(
                "work_per_iteration",
                i64::from(plan.work_per_iteration()).into(),
            );
            put(
                "operations_per_work",
                i64::from(plan.operations_per_work()).into(),
            );
        }
        FileWorkload::Replay { load, .. } => {
            put("loadfile", load.source.clone().into());
            put("loadfile_lines", (load.lines.len() as i64).into());
        }
    }
    let mut table = toml::Table::new();
    table.insert("profile".into(), workload.name().into());
    table.insert("users".into(), i64::from(workload.clients()).into());
    table.insert("seed".into(), (workload.seed() as i64).into());
    table.insert("files".into(), toml::Value::Table(files));
    table
}

/// The live line: phase, clients, operations, errors, throughput so far.
struct FileLine {
    last: std::time::Instant,
    bytes: u64,
}

impl FileObserver for FileLine {
    fn event(&mut self, event: &FileEvent) {
        if let FileEvent::Failed { client, error, .. } = event {
            eprintln!("\rclient {client} stopped: {error}");
        }
    }

    fn tick(&mut self, p: &FileProgress) {
        let now = std::time::Instant::now();
        let secs = now.duration_since(self.last).as_secs_f64().max(0.001);
        let rate = (p.bytes - self.bytes.min(p.bytes)) as f64 / secs;
        self.last = now;
        self.bytes = p.bytes;
        eprint!(
            "\r{:>5.0} s {:<6} {} clients running{} · {} ops · {} errors · {:.1} MB/s measured · cpu {:.0}%   ",
            p.elapsed.as_secs_f64(),
            p.phase,
            p.clients_running,
            if p.clients_failed > 0 {
                format!(" ({} failed)", p.clients_failed)
            } else {
                String::new()
            },
            p.operations,
            p.errors,
            rate / 1e6,
            p.cpu_percent
        );
    }
}

/// The monitor's source: this machine, with Samba's processes as the `samba` group
/// (the lab's own when it says which is its master) and peakhour's.
fn monitor_source(lab: Option<&LabStatus>) -> anyhow::Result<LocalSource> {
    let mut samba = GroupSpec::regex("samba", SAMBA_PROCESSES)?;
    if let Some(pid) = lab
        .and_then(|l| {
            l.servers
                .iter()
                .find(|s| s.name == "samba" || s.name == "smbd")
        })
        .and_then(|s| s.master_pid)
        .and_then(|p| u32::try_from(p).ok())
    {
        samba = samba.within(&[pid]);
    }
    let config = LocalConfig {
        groups: vec![samba, GroupSpec::peakhour()],
        ..LocalConfig::default()
    };
    LocalSource::new(config).context("cannot start the local monitor source")
}

pub(crate) fn run(args: RunArgs, choice: FileProfileChoice) -> anyhow::Result<ExitCode> {
    let (target, lab) = resolve_file_target(&args.files, &args.target, args.users)?;
    let workload = resolve_workload(choice, &args, lab.as_ref())?;
    if let Some(lab) = &lab
        && workload.clients() > lab.users
    {
        bail!(
            "the lab has {} users and {} clients were asked for",
            lab.users,
            workload.clients()
        );
    }
    let run_id = peakhour_rundir::dir_name(
        std::time::SystemTime::now(),
        DirKind::Run {
            profile: workload.name(),
            users: workload.clients(),
        },
    );
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(&run_id));
    if dir.join("summary.json").exists() {
        bail!(
            "{} already holds a run; choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
    let shape = &args.shape;
    let config = RunConfig {
        run: RunSection {
            ramp_up: HumanDuration(shape.ramp_up),
            duration: HumanDuration(shape.duration),
            drain: HumanDuration(shape.drain),
            interval: HumanDuration(shape.interval),
            action_timeout: HumanDuration(shape.action_timeout),
        },
        // A file run has no mail endpoints: its target is `[files]`.
        target: TargetSection {
            imap: String::new(),
            smtp: String::new(),
        },
        monitor: MonitorSection {
            interval: HumanDuration(MONITOR_INTERVAL),
            high_average_window: HumanDuration(args.high_average_window),
            baseline: HumanDuration(args.monitor_baseline),
        },
        plan: plan_table(&workload, &target, &args),
    };
    RunDir::new(&dir).write_config(&config)?;
    let settings = FileRunSettings {
        run_id: run_id.clone(),
        ramp_up: shape.ramp_up,
        duration: shape.duration,
        op_timeout: shape.action_timeout,
        connect_timeout: Duration::from_secs(10),
        interval: shape.interval,
        qos_p95_ms: shape.qos_p95_ms,
        cleanup: !args.files.keep_workspace,
    };
    announce(&run_id, &workload, &target, &settings);
    let (result, monitor) = execute(&args, workload, target, settings, lab.as_ref(), &dir)?;
    finish(&args, &dir, result, monitor)
}

fn announce(run_id: &str, workload: &FileWorkload, target: &FileTarget, s: &FileRunSettings) {
    let shape = match workload {
        FileWorkload::Mix(plan) => {
            let (up, measured, down) = plan.iterations();
            format!(
                "{up}+{measured}+{down} iterations of {} pieces of work, think time {}, start delay up to {}, workspace {} bytes",
                plan.work_per_iteration(),
                HumanDuration(plan.think_time()),
                HumanDuration(plan.start_delay_max()),
                plan.workspace_size()
            )
        }
        FileWorkload::Replay { load, .. } => format!(
            "{} ({} operations) replayed for {} warm-up + {} measured",
            load.source,
            load.lines.len(),
            HumanDuration(s.ramp_up),
            HumanDuration(s.duration)
        ),
    };
    eprintln!(
        "run {run_id}: {} clients of {} against {} {} (seed {}): {shape}",
        workload.clients(),
        workload.name(),
        target.kind(),
        target.describe(),
        workload.seed()
    );
}

/// What the monitor recorded, and the instant its `time_s` counts from.
struct MonitorRun {
    report: Result<peakhour_monitor::MonitorReport, peakhour_monitor::MonitorError>,
    origin: Instant,
}

fn execute(
    args: &RunArgs,
    workload: FileWorkload,
    target: FileTarget,
    settings: FileRunSettings,
    lab: Option<&LabStatus>,
    dir: &Path,
) -> anyhow::Result<(FileRunResult, Option<MonitorRun>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let monitor_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("peakhour-monitor")
        .enable_all()
        .build()?;
    let source = monitor_source(lab);
    let csv_path = dir.join("monitor.csv");
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut line = FileLine {
        last: std::time::Instant::now(),
        bytes: 0,
    };
    let (result, monitor) = runtime.block_on(async {
        tokio::spawn(async move {
            wait_for_signal().await;
            eprintln!("\nstopping: cleaning up the workspaces (at most 2 s), then writing results");
            let _ = stop_tx.send(true);
        });
        let origin = Instant::now() + args.monitor_baseline;
        let monitor = source.and_then(|source| {
            let csv = std::fs::File::create(&csv_path)
                .with_context(|| format!("cannot create {}", csv_path.display()))?;
            let config = MonitorConfig {
                interval: MONITOR_INTERVAL,
                origin: Some(origin),
                ..MonitorConfig::default()
            };
            let _on_monitor_runtime = monitor_runtime.enter();
            Monitor::start(source, Some(csv), config).map_err(anyhow::Error::from)
        });
        let monitor = match monitor {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!(
                    "warning: the server monitor could not start ({e:#}); running without it"
                );
                None
            }
        };
        if monitor.is_some() && !args.monitor_baseline.is_zero() {
            tokio::time::sleep_until(origin).await;
        }
        let result = run_files(workload, Arc::new(target), settings, stop_rx, &mut line).await;
        let monitor = match monitor {
            Some(m) => Some(MonitorRun {
                report: m.finish().await,
                origin,
            }),
            None => None,
        };
        (result, monitor)
    });
    eprintln!();
    Ok((result?, monitor))
}

fn finish(
    args: &RunArgs,
    dir: &Path,
    result: FileRunResult,
    monitor: Option<MonitorRun>,
) -> anyhow::Result<ExitCode> {
    let mut summary = Summary::compute(&result.record)?;
    if let Some(monitor) = monitor {
        match monitor.report {
            Ok(report) => {
                let t0 = result.outcome.t0;
                let shift = if t0 >= monitor.origin {
                    t0.duration_since(monitor.origin).as_secs_f64()
                } else {
                    -monitor.origin.duration_since(t0).as_secs_f64()
                };
                let start = summary.steady.start_s + shift;
                let half = MONITOR_INTERVAL.as_secs_f64() / 2.0;
                let window = TimeWindow::new(start + half, start + summary.steady.length_s + half);
                let found = findings(&report.table, window, args.high_average_window);
                summary.bottleneck = Some(found.bottleneck);
                summary.resources = found.resources;
                eprintln!("{}", cost_line(&report));
            }
            Err(e) => eprintln!("warning: the server monitor failed: {e}"),
        }
    }
    RunDir::new(dir).write_results(&result.record, &summary)?;
    if let Err(e) = super::report::write_report(dir) {
        eprintln!("warning: report.html was not written: {e:#}");
    }
    print!("{}", peakhour_report::render_terminal(&summary));
    let o = &result.outcome;
    for (client, error) in &o.failed_clients {
        println!("client {client} failed: {error}");
    }
    if args.files.keep_workspace {
        println!("workspaces kept on the target (--keep-workspace)");
    } else if o.leftovers.is_empty() {
        println!("workspaces: cleaned up, nothing left behind");
    } else {
        for (path, status) in &o.leftovers {
            println!("left behind: {path} ({status})");
        }
    }
    println!("results: {}", dir.display());
    Ok(if o.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if summary.verdict == Verdict::Fail || !o.failed_clients.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_in_the_url_is_split_off() {
        assert_eq!(
            split_login("smb://user{n}@127.0.0.1:1445/bench"),
            (
                Some("user{n}".to_owned()),
                "smb://127.0.0.1:1445/bench".to_owned()
            )
        );
        assert_eq!(
            split_login("smb://files.example/data"),
            (None, "smb://files.example/data".to_owned())
        );
    }
}
