//! `peakhour run` with a file profile: NetBench's disk mix (`netbench-disk-mix`, or a file
//! profile TOML) or a dbench/NBENCH trace replay (`nbench --loadfile FILE`), against a
//! directory (`--dir`), an SMB share (`--smb`) or the lab's Samba (`--target lab`, from
//! `lab up --with smb`).
//!
//! Glue: `peakhour_app::files::FileRequest` resolves the target and the workload
//! (`peakhour_engine::files` the profile and the load file); the engine runs the clients and
//! words the run's lines; `peakhour-rundir` writes the same
//! run directory as a mail run (`config.toml` with a `[files]` table, `summary.json` with
//! `throughput.bytes_per_second`, `monitor.csv` with a `samba` group, `report.html`).
//! This module maps the flags onto them and picks the exit code. See docs/files.md.

use std::process::ExitCode;
use std::sync::Arc;

use peakhour_analysis::{Summary, Verdict};
use peakhour_app::files::FileRequest;
use peakhour_engine::Both;
use peakhour_engine::files::{FileLiveLine, FileProfileChoice, FileRunSettings, run_files};
use peakhour_lab::LabStatus;
use peakhour_monitor::{MailProbes, Source};
use peakhour_rundir::{DirKind, RunConfig, RunDir};

use super::monitor::{Watching, local_source};
use super::run::monitored::{add_findings, run_monitored};
use super::signals::EXIT_INTERRUPTED;
use crate::args::RunArgs;
use crate::config::{CONNECT_TIMEOUT, RunConfig as CheckedRunConfig};
use peakhour_app::StatusLine;

/// The file profile `name` names, or `None` for a mail profile.
pub(crate) fn file_profile(name: &str) -> anyhow::Result<Option<FileProfileChoice>> {
    Ok(FileProfileChoice::from_name(name)?)
}

/// The monitor's source: this machine, with the lab's groups (its Samba's processes
/// only) or, for another server, every Samba process as the `samba` group.
fn monitor_source(
    lab: Option<&LabStatus>,
    dir: &RunDir,
) -> anyhow::Result<(Box<dyn Source>, std::fs::File)> {
    let source = local_source(&[], lab, MailProbes::default(), Watching::Samba)?;
    Ok((Box::new(source), dir.create_monitor_csv()?))
}

pub(crate) fn run(
    args: &RunArgs,
    config: CheckedRunConfig,
    choice: FileProfileChoice,
) -> anyhow::Result<ExitCode> {
    let FileRequest {
        target,
        lab,
        workload,
    } = FileRequest::resolve(args, &config, choice)?;
    let run_id = peakhour_rundir::dir_name(
        std::time::SystemTime::now(),
        DirKind::Run {
            profile: workload.name(),
            users: workload.clients(),
        },
    );
    let dir = RunDir::start(args.out.as_deref(), &run_id)?;
    let cleanup = !args.files.keep_workspace;
    let (run, monitor) = (config.shape.run_section(), config.monitor_section());
    dir.write_config(&RunConfig::files(run, monitor, &workload, &target, cleanup))?;
    let shape = &config.shape;
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
    let mut line = FileLiveLine::new(StatusLine::new());
    // Closed intervals go to disk as they close, as in a mail run (crash safety).
    let mut journal = dir.journal()?;
    let observers = &mut Both(&mut line, &mut journal);
    let (result, monitor) = run_monitored(
        &runtime,
        monitor_source(lab.as_ref(), &dir),
        config.monitor_baseline,
        "cleaning up the workspaces (at most 2 s), then writing results",
        |stop| async move { run_files(workload, Arc::new(target), settings, stop, observers).await },
    )?;
    line.sink().clear();
    if let Err(e) = journal.finish() {
        eprintln!("warning: closed intervals were not all journaled as they closed: {e}");
    }
    let result = result?;

    let mut summary = Summary::compute(&result.record)?;
    if let Some(monitor) = monitor {
        add_findings(
            monitor,
            &mut summary,
            result.outcome.t0,
            config.high_average_window,
        );
    }
    let written = dir.finish_run(&result.record, &summary, &Default::default());
    let not_written = written.as_ref().err().map(ToString::to_string);
    print!("{}", peakhour_report::render_terminal(&summary));
    let o = &result.outcome;
    for line in o.closing_lines(cleanup) {
        println!("{line}");
    }
    print!(
        "{}",
        peakhour_report::results_line(dir.path(), not_written.as_deref())
    );
    if let Some(e) = written? {
        eprintln!("warning: host.json or report.html was not written: {e}");
    }
    Ok(if o.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if summary.verdict == Verdict::Fail || !o.failed_clients.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
