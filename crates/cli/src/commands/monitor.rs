//! `peakhour monitor`: the server monitor on its own (STAT.NLM logging
//! someone else's test), and the monitor's part of `peakhour run`: the local
//! source's settings. The sources, the findings (key metrics' high averages
//! and the bottleneck), the live line's text and the cost line are
//! `peakhour-monitor`'s; this file picks a source from the arguments, draws
//! the live line and writes the directory.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_lab::{Lab, LabStatus, Layout};
use peakhour_monitor::analysis::TimeWindow;
pub(crate) use peakhour_monitor::analysis::findings;
use peakhour_monitor::{
    GroupSpec, LocalConfig, LocalSource, MailProbes, Monitor, MonitorConfig, MonitorReport,
    NodeExporterSource, RADICALE_NAMES, SAMBA_NAMES, Sample,
};
use peakhour_rundir::{DirKind, RunDir, RunFile, default_dir};
use tokio::sync::watch;

use super::signals::EXIT_INTERRUPTED;
use super::signals::wait_for_signal;
use super::status_line::StatusLine;
use crate::args::MonitorArgs;

/// The mail probes for a lab: its Postfix queue, and Dovecot's IMAP, IMAPS
/// and POP3 ports for the connection count.
pub(crate) fn lab_probes(status: &LabStatus) -> MailProbes {
    MailProbes {
        postfix_queue_dir: Some(Layout::new(&status.dir).postfix_queue()),
        dovecot_ports: status.dovecot_client_ports(),
    }
}

/// Which processes the local source counts besides the `--group` ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watching {
    /// `peakhour monitor`: Dovecot and Postfix by name (and peakhour).
    MailServers,
    /// A run against an explicit target: only peakhour, since a Dovecot or
    /// Postfix on this host need not be the target's.
    OnlyPeakhour,
}

/// The local source with the default groups (dovecot, postfix, peakhour),
/// the extra `NAME=REGEX` groups, and the mail probes. With a lab, the
/// `dovecot` and `postfix` groups count only that lab's servers (other labs
/// or a system Postfix on the same host are left out).
pub(crate) fn local_source(
    groups: &[String],
    lab: Option<&LabStatus>,
    mail: MailProbes,
    watching: Watching,
) -> anyhow::Result<LocalSource> {
    let mut config = LocalConfig {
        mail,
        ..LocalConfig::default()
    };
    if watching == Watching::OnlyPeakhour {
        config.groups = vec![GroupSpec::peakhour()];
    }
    if let Some(lab) = lab {
        config.groups =
            GroupSpec::defaults_within(lab.master_pid("dovecot"), lab.master_pid("postfix"));
        // A lab's optional servers, by their masters' names in `lab status`.
        for (name, names) in [("radicale", RADICALE_NAMES), ("samba", SAMBA_NAMES)] {
            if let Some(pid) = lab.master_pid(name) {
                config
                    .groups
                    .push(GroupSpec::names(name, names).within(&[pid]));
            }
        }
        config.cgroup = lab.limits.cgroup.as_ref().map(super::planner::cgroup_files);
    }
    for spec in groups {
        let group = GroupSpec::parse(spec).with_context(|| format!("--group {spec:?}"))?;
        config.groups.push(group);
    }
    LocalSource::new(config).context("cannot start the local monitor source")
}

/// The monitor's cost, for people (`peakhour run` prints it too).
pub(crate) fn cost_line(report: &MonitorReport) -> String {
    report.cost_line()
}

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

    let found = findings(&report.table, TimeWindow::ALL, args.high_average_window);
    let mut text = format!(
        "peakhour monitor · {what} · {} samples over {:.0} s\n",
        report.table.len(),
        report.cost.wall.as_secs_f64()
    );
    text.push_str(&peakhour_report::render_monitor(
        "monitor.csv, whole run",
        &found.resources,
        Some(&found.bottleneck),
    ));
    text.push_str(&report.cost_line());
    text.push('\n');
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
    let mut probes = MailProbes {
        postfix_queue_dir: args.postfix_queue.clone(),
        dovecot_ports: args.dovecot_port.clone(),
    };
    let has_lab = Layout::new(&args.lab_dir).state_file().exists();
    if has_lab && (probes.postfix_queue_dir.is_none() || probes.dovecot_ports.is_empty()) {
        match Lab::new(&args.lab_dir).status() {
            Ok(status) => {
                let lab = lab_probes(&status);
                probes.postfix_queue_dir = probes.postfix_queue_dir.or(lab.postfix_queue_dir);
                if probes.dovecot_ports.is_empty() {
                    probes.dovecot_ports = lab.dovecot_ports;
                }
            }
            Err(e) => eprintln!(
                "note: the lab in {} cannot be read ({e}); no queue or Dovecot ports",
                args.lab_dir.display()
            ),
        }
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
