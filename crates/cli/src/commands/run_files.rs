//! `peakhour run` with a file profile: NetBench's disk mix (`netbench-disk-mix`, or a file
//! profile TOML) or a dbench/NBENCH trace replay (`nbench --loadfile FILE`), against a
//! directory (`--dir`), an SMB share (`--smb`) or the lab's Samba (`--target lab`, from
//! `lab up --with smb`).
//!
//! Glue: `peakhour_engine::files` resolves the profile, the load file, the target and the
//! workload, runs the clients and words the run's lines; this module maps the flags onto
//! it, writes the same run directory as a mail run (`config.toml` with a `[files]` table,
//! `summary.json` with `throughput.bytes_per_second`, `monitor.csv` with a `samba`
//! group, `report.html`) and picks the exit code. See docs/files.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use peakhour_analysis::{Summary, Verdict};
use peakhour_engine::Credentials;
use peakhour_engine::files::{
    FileObserver, FileProfileChoice, FileProgress, FileRunSettings, FileTarget, FileWorkload,
    RecordedValue, cache_policy, read_file_users, run_files,
};
use peakhour_lab::{Lab, LabStatus};
use peakhour_monitor::{LocalSource, MailProbes};
use peakhour_net::Secret;
use peakhour_rundir::{DirKind, MonitorSection, RunConfig, RunDir, RunSection, TargetSection};
use peakhour_workload::HumanDuration;
use peakhour_workload::files::FileOverrides;

use super::monitor::{Watching, local_source};
use super::run::MONITOR_INTERVAL;
use super::run::monitored::run_monitored;
use super::signals::EXIT_INTERRUPTED;
use super::status_line::StatusLine;
use crate::args::{FileArgs, RunArgs, TargetArgs};
use crate::config::{CONNECT_TIMEOUT, RunConfig as CheckedRunConfig};

/// Samba's processes (Debian 12's 4.17): `smbd` and its helpers, for the monitor's
/// `samba` group when the server is not the lab's (the lab's group is scoped to its own).
const SAMBA_GROUP: &str = "samba=^(smbd|cleanupd|samba-dcerpc|samba-bgqd|rpcd_)";

/// Clients of a file run on the lab when `--users` is not given.
const LAB_DEFAULT_CLIENTS: u32 = 8;

/// The file profile `name` names, or `None` for a mail profile.
pub(crate) fn file_profile(name: &str) -> anyhow::Result<Option<FileProfileChoice>> {
    Ok(FileProfileChoice::from_name(name)?)
}

/// The target, and the lab's status when it is the lab's Samba.
fn resolve_target(
    files: &FileArgs,
    target: &TargetArgs,
) -> anyhow::Result<(FileTarget, Option<LabStatus>)> {
    if let Some(root) = &files.dir {
        let cache = cache_policy(&files.cache).unwrap_or_default();
        return Ok((FileTarget::dir(root, cache)?, None));
    }
    if let Some(url) = &files.smb {
        let credentials = match &target.users_file {
            Some(path) => Credentials::PerUser(read_file_users(path)?),
            None => Credentials::Shared(Secret::new(
                std::env::var(&target.password_env).with_context(|| {
                    format!(
                        "set the SMB password in ${} (or give --users-file)",
                        target.password_env
                    )
                })?,
            )),
        };
        return Ok((FileTarget::smb(url, credentials)?, None));
    }
    if target.target != "lab" {
        bail!("a file profile needs --dir PATH, --smb URL or --target lab");
    }
    let status = Lab::new(&target.lab_dir)
        .status()
        .context("--target lab needs a running lab with Samba (peakhour lab up --with smb)")?;
    let Some(url) = status.endpoints.smb.clone() else {
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
    let share = FileTarget::lab_share(&url, Secret::new(status.password.clone()));
    Ok((share, Some(status)))
}

fn overrides(args: &RunArgs, config: &CheckedRunConfig, lab: Option<&LabStatus>) -> FileOverrides {
    let f = &args.files;
    FileOverrides {
        clients: config
            .users
            .or(lab.map(|l| l.users.min(LAB_DEFAULT_CLIENTS))),
        seed: config.shape.seed,
        think_time: f.think_time,
        start_delay: f.start_delay,
        workspace_size: f.workspace,
        ramp_up: f.ramp_up_iterations,
        measured: f.measured_iterations,
        ramp_down: f.ramp_down_iterations,
        work_per_iteration: f.work_per_iteration,
    }
}

/// The resolved configuration: the run's phases, and the workload and target in
/// `[files]` (no password).
fn run_config(
    workload: &FileWorkload,
    target: &FileTarget,
    args: &RunArgs,
    config: &CheckedRunConfig,
) -> RunConfig {
    let files: toml::Table = workload
        .recorded_settings(target, !args.files.keep_workspace)
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                RecordedValue::Text(t) => toml::Value::String(t),
                RecordedValue::Number(n) => toml::Value::Integer(n.try_into().unwrap_or(i64::MAX)),
                RecordedValue::Flag(b) => toml::Value::Boolean(b),
            };
            (key.to_owned(), value)
        })
        .collect();
    let mut plan = toml::Table::new();
    plan.insert("profile".into(), workload.name().into());
    plan.insert("users".into(), i64::from(workload.clients()).into());
    plan.insert(
        "seed".into(),
        i64::try_from(workload.seed()).unwrap_or(i64::MAX).into(),
    );
    plan.insert("files".into(), toml::Value::Table(files));
    let shape = &config.shape;
    RunConfig {
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
            security_shortcuts: Vec::new(),
        },
        monitor: MonitorSection {
            interval: HumanDuration(MONITOR_INTERVAL),
            high_average_window: HumanDuration(config.high_average_window),
            baseline: HumanDuration(config.monitor_baseline),
        },
        plan,
    }
}

/// The live line: the engine's text, drawn by the one status line.
struct FileLine {
    line: StatusLine,
    bytes: u64,
}

impl FileObserver for FileLine {
    fn event(&mut self, event: &peakhour_engine::files::FileEvent) {
        if let peakhour_engine::files::FileEvent::Failed { client, error, .. } = event {
            self.line.clear();
            eprintln!("client {client} stopped: {error}");
        }
    }

    fn tick(&mut self, p: &FileProgress) {
        let Some(since) = self.line.due() else { return };
        let moved = p.bytes.saturating_sub(self.bytes);
        self.bytes = p.bytes;
        let rate = moved as f64 / since.as_secs_f64().max(0.001);
        self.line.write(&p.live_text(rate));
    }
}

/// The monitor's source: this machine, with the lab's groups (its Samba's processes
/// only) or, for another server, every Samba process as the `samba` group.
fn monitor_source(
    lab: Option<&LabStatus>,
    dir: &std::path::Path,
) -> anyhow::Result<(LocalSource, std::fs::File)> {
    let source = match lab {
        Some(lab) => local_source(
            &[],
            Some(lab),
            MailProbes::default(),
            Watching::OnlyPeakhour,
        )?,
        None => local_source(
            &[SAMBA_GROUP.to_owned()],
            None,
            MailProbes::default(),
            Watching::OnlyPeakhour,
        )?,
    };
    let path = dir.join("monitor.csv");
    let csv = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    Ok((source, csv))
}

pub(crate) fn run(
    args: &RunArgs,
    config: CheckedRunConfig,
    choice: FileProfileChoice,
) -> anyhow::Result<ExitCode> {
    let (target, lab) = resolve_target(&args.files, &args.target)?;
    let overrides = overrides(args, &config, lab.as_ref());
    let workload = FileWorkload::resolve(choice, &overrides, args.files.loadfile.as_deref())?;
    if let Some(lab) = &lab
        && workload.clients() > lab.users
    {
        bail!(
            "the lab has {} users and {} clients were asked for; restart it with more --users",
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
    RunDir::new(&dir).write_config(&run_config(&workload, &target, args, &config))?;
    let shape = &config.shape;
    let cleanup = !args.files.keep_workspace;
    let settings = FileRunSettings {
        run_id,
        ramp_up: shape.ramp_up,
        duration: shape.duration,
        op_timeout: shape.action_timeout,
        connect_timeout: CONNECT_TIMEOUT,
        interval: shape.interval,
        qos_p95_ms: shape.qos_p95_ms,
        cleanup,
    };
    eprintln!("{}", workload.describe(&target, &settings));

    // Several threads: a directory's operations block on the file system (tokio's
    // blocking pool), and SMB clients each hold a connection of their own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut line = FileLine {
        line: StatusLine::new(),
        bytes: 0,
    };
    let line_ref = &mut line;
    let (result, monitor) = run_monitored(
        &runtime,
        monitor_source(lab.as_ref(), &dir),
        config.monitor_baseline,
        "cleaning up the workspaces (at most 2 s), then writing results",
        |stop| async move { run_files(workload, Arc::new(target), settings, stop, line_ref).await },
    )?;
    line.line.clear();
    let result = result?;

    let mut summary = Summary::compute(&result.record)?;
    if let Some(monitor) = monitor {
        monitor.add_findings(&mut summary, result.outcome.t0, config.high_average_window);
    }
    RunDir::new(&dir).write_results(&result.record, &summary)?;
    if let Err(e) = super::report::write_report(&dir) {
        eprintln!("warning: report.html was not written: {e:#}");
    }
    print!("{}", peakhour_report::render_terminal(&summary));
    let o = &result.outcome;
    for line in o.closing_lines(cleanup) {
        println!("{line}");
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
