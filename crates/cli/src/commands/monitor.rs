//! `peakhour monitor`: the server monitor on its own (STAT.NLM logging
//! someone else's test), and the monitor's part of `peakhour run`: the local
//! source's settings. The findings (key metrics' high averages and the
//! bottleneck) are the monitor crate's `analysis::findings`.

use std::io::{IsTerminal as _, Write as _};
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
    NodeExporterSource, Sample,
};
use peakhour_rundir::{DirKind, RunDir, RunFile, default_dir};

use crate::args::MonitorArgs;

/// Exit code of a `--duration` monitor stopped early by a signal.
const EXIT_INTERRUPTED: u8 = 130;

/// The mail probes for a lab: its Postfix queue, and Dovecot's IMAP, IMAPS
/// and POP3 ports for the connection count.
pub(crate) fn lab_probes(status: &LabStatus) -> MailProbes {
    let port = |endpoint: &str| {
        endpoint
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<u16>().ok())
    };
    let e = &status.endpoints;
    MailProbes {
        postfix_queue_dir: Some(Layout::new(&status.dir).postfix_queue()),
        dovecot_ports: [&e.imap, &e.imaps, &e.pop3]
            .into_iter()
            .filter_map(|p| port(p))
            .collect(),
    }
}

/// The local source with the default groups (dovecot, postfix, peakhour),
/// the extra `NAME=REGEX` groups, and the mail probes. With a lab, the
/// `dovecot` and `postfix` groups count only that lab's servers (other labs
/// or a system Postfix on the same host are left out).
pub(crate) fn local_source(
    groups: &[String],
    lab: Option<&LabStatus>,
    mail: MailProbes,
) -> anyhow::Result<LocalSource> {
    let mut config = LocalConfig {
        mail,
        ..LocalConfig::default()
    };
    if let Some(lab) = lab {
        let master = |name: &str| {
            lab.servers
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.master_pid)
                .and_then(|pid| u32::try_from(pid).ok())
        };
        config.groups = vec![
            scoped(GroupSpec::dovecot(), master("dovecot")),
            scoped(GroupSpec::postfix(), master("postfix")),
            GroupSpec::peakhour(),
        ];
        config.cgroup = lab.limits.cgroup.as_ref().map(super::planner::cgroup_files);
    }
    for spec in groups {
        config.groups.push(parse_group(spec)?);
    }
    LocalSource::new(config).context("cannot start the local monitor source")
}

fn scoped(group: GroupSpec, master: Option<u32>) -> GroupSpec {
    match master {
        Some(pid) => group.within(&[pid]),
        None => group,
    }
}

fn parse_group(spec: &str) -> anyhow::Result<GroupSpec> {
    let Some((name, pattern)) = spec.split_once('=') else {
        bail!("--group {spec:?}: expected NAME=REGEX, e.g. nginx=^nginx");
    };
    let name = name.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        bail!(
            "--group {spec:?}: the name must be lowercase letters, digits and _ (it becomes a column name)"
        );
    }
    if ["dovecot", "postfix", "peakhour"].contains(&name) {
        bail!("--group {spec:?}: {name} is a default group already");
    }
    GroupSpec::regex(name, pattern).with_context(|| format!("--group {spec:?}"))
}

/// The monitor's cost, for people.
pub(crate) fn cost_line(report: &MonitorReport) -> String {
    let mut line = format!(
        "monitor: {} samples, {:.0} µs CPU per sample, {:.2}% of one core",
        report.cost.samples,
        report.cost.mean_sample_us(),
        report.cost.pct_of_one_core()
    );
    if report.errors > 0 {
        line.push_str(&format!(
            "; {} samples failed (last: {})",
            report.errors,
            report.last_error.as_deref().unwrap_or("?")
        ));
    }
    if !report.dropped_columns.is_empty() {
        line.push_str(&format!(
            "; not in the CSV (appeared late): {}",
            report.dropped_columns.join(", ")
        ));
    }
    line
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
    let csv_path = run_dir.file(RunFile::Monitor);
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
        match &args.node_exporter {
            Some(url) => {
                if args.postfix_queue.is_some() || !args.group.is_empty() {
                    bail!("--postfix-queue and --group need the local source, not --node-exporter");
                }
                let source =
                    NodeExporterSource::new(url, Duration::from_secs(2).min(args.interval))
                        .with_context(|| format!("--node-exporter {url}"))?;
                (
                    Monitor::start(source, Some(csv), config)?,
                    format!("node_exporter {url}"),
                )
            }
            None => {
                let mail = mail_probes(&args);
                let mut what = "local /proc".to_owned();
                if let Some(q) = &mail.postfix_queue_dir {
                    what.push_str(&format!(", Postfix queue {}", q.display()));
                }
                if !mail.dovecot_ports.is_empty() {
                    let ports: Vec<String> =
                        mail.dovecot_ports.iter().map(u16::to_string).collect();
                    what.push_str(&format!(", Dovecot ports {}", ports.join(",")));
                }
                let source = local_source(&args.group, None, mail)?;
                (Monitor::start(source, Some(csv), config)?, what)
            }
        }
    };
    eprintln!(
        "monitoring {what} every {:?} {} -> {}",
        args.interval,
        match args.duration {
            Some(d) => format!("for {d:?}"),
            None => "until SIGINT or SIGTERM".to_owned(),
        },
        csv_path.display()
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
        let live = tokio::spawn(live_line(monitor.latest()));
        let report = monitor.join().await;
        live.abort();
        report
    })?;
    clear_live_line();

    let window = TimeWindow::ALL;
    let found = findings(&report.table, window, args.high_average_window);
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
    text.push_str(&cost_line(&report));
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

pub(crate) async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Redraws the live line on stderr: every second on a terminal, every 10 s
/// in a log.
async fn live_line(mut latest: tokio::sync::watch::Receiver<Option<Arc<Sample>>>) {
    let terminal = std::io::stderr().is_terminal();
    let every = if terminal { 1.0 } else { 10.0 };
    let mut last_drawn: Option<f64> = None;
    while latest.changed().await.is_ok() {
        let Some(sample) = latest.borrow_and_update().clone() else {
            continue;
        };
        if sample.system.cpu.is_none()
            || last_drawn.is_some_and(|t| sample.time_s - t < every - 0.01)
        {
            continue;
        }
        last_drawn = Some(sample.time_s);
        let line = live_text(&sample);
        let mut err = std::io::stderr().lock();
        if terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

fn clear_live_line() {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
}

/// `  12s  CPU  34% busy  run queue 2  mem avail 1234 MiB  disk vda 3%  net 1.2 MB/s  queue in 0 act 3 def 0`
fn live_text(s: &Sample) -> String {
    let sys = &s.system;
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let cpu = or_dash(
        sys.cpu
            .as_ref()
            .map(|c| format!("{:3.0}%", c.total.busy_pct())),
    );
    let rq = or_dash(sys.run_queue.map(|r| format!("{r:.0}")));
    let mem = format!("{} MiB", sys.memory.available_kb / 1024);
    let disk = or_dash(
        sys.disks
            .iter()
            .filter_map(|d| d.util_pct.map(|u| (d.device.as_str(), u)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(d, u)| format!("{d} {u:.0}%")),
    );
    let net: f64 = sys
        .networks
        .iter()
        .map(|n| n.rx_bytes_per_s.unwrap_or(0.0) + n.tx_bytes_per_s.unwrap_or(0.0))
        .sum();
    let queue = or_dash(
        s.mail
            .postfix_queue
            .map(|q| format!("in {} act {} def {}", q.incoming, q.active, q.deferred)),
    );
    format!(
        "{:>6.0}s  CPU {cpu} busy  run queue {rq}  mem avail {mem}  disk {disk}  net {:.2} MB/s  mail queue {queue}",
        s.time_s,
        net / 1e6
    )
}
