//! `peakhour monitor`: the server monitor on its own (STAT.NLM logging
//! someone else's test), and the monitor's part of `peakhour run`: the local
//! source's settings. The sources, the findings (key metrics' high averages
//! and the bottleneck), the live line's text and the cost line are
//! `peakhour-monitor`'s, the local source beside a load
//! `peakhour_app::monitor_source`'s; this file picks a source from the
//! arguments, draws the live line and writes the directory.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
pub(crate) use peakhour_app::monitor_source::{Watching, local_source};
use peakhour_lab::mail_probes_in;
use peakhour_monitor::{MailProbes, Monitor, MonitorConfig, NodeExporterSource, Sample};
use peakhour_report::render_monitor_session;
use peakhour_rundir::{DirKind, RunDir, RunFile, default_dir};
use tokio::sync::watch;

use super::signals::EXIT_INTERRUPTED;
use super::signals::wait_for_signal;
use crate::args::MonitorArgs;
use peakhour_app::StatusLine;

/// Starts the monitor on the source the arguments name; returns it and what it watches.
fn start(
    args: &MonitorArgs,
    csv: std::fs::File,
    config: MonitorConfig,
) -> anyhow::Result<(Monitor, String)> {
    if let Some(url) = &args.node_exporter {
        if args.postfix_queue.is_some() || !args.group.is_empty() {
            bail!("--postfix-queue and --group need the local source, not --node-exporter");
        }
        let timeout = Duration::from_secs(2).min(args.interval);
        let source = NodeExporterSource::new(url, timeout)
            .with_context(|| format!("--node-exporter {url}"))?;
        return Ok((
            Monitor::start(source, Some(csv), config)?,
            format!("node_exporter {url}"),
        ));
    }
    let mail = mail_probes(args);
    let what = mail.describe();
    let source = local_source(&args.group, None, mail, Watching::MailServers)?;
    Ok((Monitor::start(source, Some(csv), config)?, what))
}

pub(crate) fn run(args: MonitorArgs) -> anyhow::Result<ExitCode> {
    if args.interval.is_zero() {
        bail!("--interval must be more than zero");
    }
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_dir(std::time::SystemTime::now(), DirKind::Monitor));
    let run_dir = RunDir::create(&dir).context("cannot create the output directory")?;
    let csv = run_dir.create_monitor_csv()?;
    let config = MonitorConfig {
        interval: args.interval,
        duration: args.duration,
        ..MonitorConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (monitor, what) = {
        let _guard = runtime.enter();
        start(&args, csv, config)?
    };
    eprintln!(
        "monitoring {what} every {:?} {} -> {}",
        args.interval,
        match args.duration {
            Some(d) => format!("for {d:?}"),
            None => "until SIGINT or SIGTERM".to_owned(),
        },
        run_dir.file(RunFile::Monitor).display()
    );

    let interrupted = Arc::new(AtomicBool::new(false));
    let report = runtime.block_on(async {
        let stop = monitor.stop_handle();
        let flag = interrupted.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            flag.store(true, Ordering::SeqCst);
            stop.stop();
        });
        let live = tokio::spawn(draw_live(monitor.latest()));
        let report = monitor.join().await;
        live.abort();
        report
    })?;
    StatusLine::new().clear();

    let text = render_monitor_session(&what, &report, args.high_average_window);
    print!("{text}");
    run_dir.write_monitor_summary(&text)?;
    println!("results: {}", dir.display());
    runtime.shutdown_timeout(Duration::from_millis(100));
    let stopped_early = interrupted.load(Ordering::SeqCst) && !args.until_signal;
    Ok(if stopped_early {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--postfix-queue` and `--dovecot-port`, else the lab's if `--lab-dir` holds one.
fn mail_probes(args: &MonitorArgs) -> MailProbes {
    let given = MailProbes {
        postfix_queue_dir: args.postfix_queue.clone(),
        dovecot_ports: args.dovecot_port.clone(),
        not_dovecot: false,
    };
    let (probes, unreadable) = mail_probes_in(&args.lab_dir, given);
    if let Some(e) = unreadable {
        eprintln!(
            "note: the lab in {} cannot be read ({e}); no queue or Dovecot ports",
            args.lab_dir.display()
        );
    }
    probes
}

/// Draws each sample with CPU figures on the status line, when one is due.
async fn draw_live(mut latest: watch::Receiver<Option<Arc<Sample>>>) {
    let mut line = StatusLine::new();
    while latest.changed().await.is_ok() {
        let Some(sample) = latest.borrow_and_update().clone() else {
            continue;
        };
        if sample.system.cpu.is_some() && line.due().is_some() {
            line.write(&sample.live_text());
        }
    }
}
