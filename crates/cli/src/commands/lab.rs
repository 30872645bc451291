//! `peakhour lab up | down | status | check`: arguments in, `peakhour-lab` calls,
//! its reports printed.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use peakhour_lab::{
    CheckLine, Lab, LabConfig, LabStatus, Limits, Namespace, Ports, check_mail_path,
};

use crate::args::{LabCheckArgs, LabCommand, LabUpArgs};

pub(crate) fn run(command: LabCommand) -> anyhow::Result<ExitCode> {
    if let Some(note) = command.lab_dir().deprecation_note() {
        eprintln!("{note}");
    }
    match command {
        LabCommand::Up(args) => up(args),
        LabCommand::Down(args) => {
            let lab = Lab::new(args.dir.dir());
            let report = lab.down(args.purge)?;
            for warning in report.not_ours.iter().chain(&report.warnings) {
                eprintln!("warning: {warning}");
            }
            print!("{}", report.text(args.dir.dir()));
            if !report.remaining.is_empty() {
                anyhow::bail!("lab processes still running: {:?}", report.remaining);
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Status(args) => {
            let status = Lab::new(args.dir.dir()).status()?;
            if args.json {
                print_json(&status)?;
            } else {
                print!("{}", status.status_text());
            }
            Ok(if status.healthy {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        LabCommand::Check(args) => check(&args),
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
        (&mut ports.jmap, args.jmap_port),
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
        mail_server: args.mail_server,
        ..LabConfig::new(args.dir.dir())
    };
    let report = Lab::up(&config).context("cannot start the lab")?;
    if args.json {
        print_json(&report.status)?;
        return Ok(ExitCode::SUCCESS);
    }
    for warning in &report.warnings {
        eprintln!("note: {warning}");
    }
    print!("{}", report.text());
    Ok(ExitCode::SUCCESS)
}

fn print_json(status: &LabStatus) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, status)?;
    writeln!(out)?;
    Ok(())
}

/// `lab check`: one message through the lab, every step timed as it ends.
fn check(args: &LabCheckArgs) -> anyhow::Result<ExitCode> {
    let status = Lab::new(args.dir.dir()).status()?;
    let mut show = |line: CheckLine| println!("{line}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let bytes = runtime.block_on(check_mail_path(
        &status,
        args.user,
        args.starttls,
        &mut show,
    ))?;
    println!("ok: {bytes} bytes from SMTP arrived identical over IMAP and POP3");
    Ok(ExitCode::SUCCESS)
}
