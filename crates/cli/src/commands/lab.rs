//! `peakhour lab up | down | status | check`.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use peakhour_lab::{DownReport, Lab, LabConfig, LabStatus, Limits, Namespace, Ports};

use crate::args::{LabCommand, LabUpArgs};

pub(crate) fn run(command: LabCommand) -> anyhow::Result<ExitCode> {
    match command {
        LabCommand::Up(args) => up(args),
        LabCommand::Down(args) => {
            let lab = Lab::new(&args.dir.dir);
            let report = lab.down(args.purge)?;
            print_down(&args.dir.dir, &report)?;
            if !report.remaining.is_empty() {
                anyhow::bail!("lab processes still running: {:?}", report.remaining);
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Status(args) => {
            let status = Lab::new(&args.dir.dir).status()?;
            if args.json {
                print_json(&status)?;
            } else {
                print_status(&status)?;
            }
            Ok(if status.healthy {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        LabCommand::Check(args) => super::lab_check::run(args),
    }
}

fn up(args: LabUpArgs) -> anyhow::Result<ExitCode> {
    let mut ports = Ports::from_base(args.port_base).map_err(anyhow::Error::msg)?;
    let overrides = [
        (&mut ports.smtp, args.smtp_port),
        (&mut ports.smtp_noauth, args.smtp_noauth_port),
        (&mut ports.submissions, args.submissions_port),
        (&mut ports.imap, args.imap_port),
        (&mut ports.imaps, args.imaps_port),
        (&mut ports.pop3, args.pop3_port),
        (&mut ports.lmtp, args.lmtp_port),
        (&mut ports.caldav, args.caldav_port),
        (&mut ports.smb, args.smb_port),
    ];
    for (port, given) in overrides {
        if let Some(given) = given {
            *port = given;
        }
    }
    let mut limits = Limits::default();
    if let Some(cpus) = args.cpus {
        limits = limits.with_cpus(cpus).map_err(anyhow::Error::msg)?;
    }
    if let Some(bytes) = args.memory {
        limits = limits
            .with_memory(bytes)
            .map_err(|e| anyhow::anyhow!("--memory: {e}"))?;
    }
    let config = LabConfig {
        users: args.users,
        storage: args.storage.parse().map_err(anyhow::Error::msg)?,
        ports,
        imap_client_limit: args.imap_client_limit,
        namespace: Namespace {
            prefix: args.namespace_prefix,
            separator: args.namespace_separator,
        },
        limits,
        with: args.with.into_iter().collect(),
        ..LabConfig::new(&args.dir.dir)
    };
    let report = Lab::up(&config).context("cannot start the lab")?;
    if args.json {
        print_json(&report.status)?;
        return Ok(ExitCode::SUCCESS);
    }
    for warning in &report.warnings {
        eprintln!("note: {warning}");
    }
    if report.cleaned_up > 0 {
        println!(
            "cleaned up {} processes left by an earlier lab",
            report.cleaned_up
        );
    }
    if report.already_running {
        println!("lab already up in {}", report.status.dir);
    } else {
        println!(
            "lab up in {} ({:.2} s)",
            report.status.dir,
            report.elapsed.as_secs_f64()
        );
    }
    print_endpoints(&report.status)?;
    Ok(ExitCode::SUCCESS)
}

fn print_down(dir: &std::path::Path, report: &DownReport) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for refused in &report.not_ours {
        eprintln!("warning: {refused}");
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    if report.stopped.is_empty() {
        writeln!(out, "lab in {} was not running", dir.display())?;
    } else {
        writeln!(
            out,
            "stopped {} ({} leftover processes killed)",
            report.stopped.join(" and "),
            report.killed
        )?;
    }
    if let Some(purge) = &report.purge {
        writeln!(
            out,
            "removed what the lab made in {} ({} entries)",
            dir.display(),
            purge.removed.len()
        )?;
        if purge.removed_dir {
            writeln!(out, "removed {}", dir.display())?;
        }
        for kept in &purge.kept {
            writeln!(out, "kept {} (not made by the lab)", kept.display())?;
        }
    }
    Ok(())
}

fn print_json(status: &LabStatus) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, status)?;
    writeln!(out)?;
    Ok(())
}

fn print_endpoints(status: &LabStatus) -> anyhow::Result<()> {
    let e = &status.endpoints;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "  smtp         {}   (Postfix: STARTTLS, AUTH PLAIN/LOGIN)",
        e.smtp
    )?;
    if let Some(noauth) = &e.smtp_noauth {
        writeln!(
            out,
            "  smtp_noauth  {noauth}   (Postfix: no AUTH, no STARTTLS; loopback clients only)"
        )?;
    }
    writeln!(
        out,
        "  submissions  {}   (Postfix: implicit TLS)",
        e.submissions
    )?;
    writeln!(out, "  imap         {}   (Dovecot: STARTTLS)", e.imap)?;
    writeln!(out, "  imaps        {}   (Dovecot: implicit TLS)", e.imaps)?;
    writeln!(out, "  pop3         {}   (Dovecot: STLS)", e.pop3)?;
    writeln!(out, "  lmtp         {}   (Dovecot)", e.lmtp)?;
    if let Some(caldav) = &e.caldav {
        writeln!(
            out,
            "  caldav       {caldav}   (Radicale: HTTP, Basic auth as userN; home /userN/)"
        )?;
    }
    if let Some(smb) = &e.smb {
        writeln!(
            out,
            "  smb          {smb}   (Samba: sign in as userN; a directory per user)"
        )?;
    }
    writeln!(
        out,
        "  users        user1 ... user{} @{} ({} storage); password: peakhour lab status --json",
        status.users, status.domain, status.storage
    )?;
    writeln!(out, "  TLS CA       {}", status.ca_file)?;
    if !status.namespace.prefix.is_empty() || status.namespace.separator != '/' {
        writeln!(
            out,
            "  namespace    prefix {:?}, separator {:?}",
            status.namespace.prefix, status.namespace.separator
        )?;
    }
    print_limits(&mut out, status)?;
    Ok(())
}

/// The caps and the cgroup that enforces them, if the lab is shaped.
fn print_limits(out: &mut impl std::io::Write, status: &LabStatus) -> anyhow::Result<()> {
    let limits = &status.limits;
    if limits.cpus.is_none() && limits.memory_bytes.is_none() {
        return Ok(());
    }
    let cpus = limits
        .cpus
        .map_or_else(|| "no CPU cap".to_owned(), |c| format!("{c} CPUs"));
    let memory = limits.memory_bytes.map_or_else(
        || "no memory cap".to_owned(),
        |b| format!("{:.0} MiB of memory", b as f64 / 1_048_576.0),
    );
    writeln!(out, "  limits       {cpus}, {memory}")?;
    if let Some(cgroup) = &limits.cgroup {
        writeln!(
            out,
            "  cgroup       {} ({}): {}",
            cgroup.name,
            cgroup.version,
            cgroup.dirs.join(", ")
        )?;
    }
    Ok(())
}

fn print_status(status: &LabStatus) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "lab {}: {}",
        status.dir,
        if status.healthy {
            "healthy"
        } else {
            "NOT healthy"
        }
    )?;
    if !status.with.is_empty() {
        let with: Vec<&str> = status.with.iter().map(|s| s.as_str()).collect();
        writeln!(out, "  with     {}", with.join(", "))?;
    }
    for server in &status.servers {
        let state = match (server.running, server.master_pid) {
            (true, Some(pid)) => format!("running (master pid {pid})"),
            (false, Some(pid)) => format!("not running (master pid {pid} is gone)"),
            (_, None) => "not started".to_owned(),
        };
        writeln!(out, "  {:<8} {state}", server.name)?;
        for process in &server.processes {
            writeln!(out, "             pid {:<8} {}", process.pid, process.name)?;
        }
    }
    for port in &status.ports {
        let mark = if port.answers { "ok  " } else { "DOWN" };
        writeln!(
            out,
            "  {mark} {:<12} {:<16} {}",
            port.service, port.address, port.detail
        )?;
    }
    print_limits(&mut out, status)?;
    if let Some(cgroup) = &status.limits.cgroup {
        let cpu = cgroup
            .cpu_usage_ns()
            .map_or_else(|| "?".to_owned(), |ns| format!("{:.2} s", ns as f64 / 1e9));
        let memory = cgroup.memory_usage_bytes().map_or_else(
            || "?".to_owned(),
            |b| format!("{:.1} MiB", b as f64 / 1_048_576.0),
        );
        writeln!(out, "  used         CPU {cpu} in all, memory {memory} now")?;
    }
    Ok(())
}
