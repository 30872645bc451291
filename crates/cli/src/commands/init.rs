//! `peakhour init`: fill every mailbox to the profile's starting state.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use peakhour_engine::init::{InitSettings, Progress, Via, init};
use peakhour_engine::{CalendarInitError, CalendarInitReport, Target};
use peakhour_workload::{Overrides, Plan};

use super::target::{load_profile, resolve_plan, resolve_target};
use crate::args::InitArgs;

pub(crate) fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    let profile = load_profile(&args.profile.profile)?;
    let resolved = resolve_target(&args.target)?;
    let overrides = Overrides {
        users: args.users,
        seed: args.seed,
        ..Overrides::default()
    };
    let plan = resolve_plan(&profile, overrides, &resolved)?;
    let target = resolved.target.clone();
    let via = match args.via.as_str() {
        "lmtp" if target.lmtp.is_none() => anyhow::bail!(
            "--via lmtp needs an LMTP endpoint: use --target lab, or give --lmtp lmtp://host:port"
        ),
        "lmtp" => Via::Lmtp,
        _ => Via::ImapAppend,
    };
    let per_user: u64 = plan.folders().iter().map(|f| u64::from(f.messages)).sum();
    eprintln!(
        "initializing {} mailboxes for {} ({} folders, {per_user} messages each) via {}",
        plan.users(),
        plan.name(),
        plan.folders().len(),
        match via {
            Via::Lmtp => "LMTP",
            Via::ImapAppend => "IMAP APPEND",
        }
    );
    let progress = Arc::new(Progress::default());
    let bar = ProgressBar::new(u64::from(plan.users()) * per_user);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} messages  {per_sec}  eta {eta}  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let settings = InitSettings {
        via,
        parallel: args.parallel,
        timeout: Duration::from_secs(10),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        let job = tokio::spawn(init(
            plan.clone(),
            target.clone(),
            settings,
            progress.clone(),
        ));
        let mut ticker = tokio::time::interval(Duration::from_millis(200));
        while !job.is_finished() {
            ticker.tick().await;
            // Messages already there count as done, so the bar ends full on a re-run.
            let done = progress.added.load(Ordering::Relaxed);
            let to_add = progress.to_add.load(Ordering::Relaxed);
            let users_done = progress.users_done.load(Ordering::Relaxed);
            let checked_already =
                (users_done * per_user).saturating_sub(to_add.min(users_done * per_user));
            bar.set_position((done + checked_already).min(bar.length().unwrap_or(u64::MAX)));
            bar.set_message(format!("{users_done}/{} users", plan.users()));
        }
        job.await
    })??;
    bar.finish_and_clear();
    let calendars = runtime.block_on(init_calendars(&plan, &target, args.parallel))?;
    println!(
        "init done: {} users, {} messages wanted, {} already there, {} added ({:.1} MB) in {:.1} s = {:.0} messages/s",
        report.users,
        report.wanted,
        report.already_there,
        report.added,
        report.bytes as f64 / 1e6,
        report.elapsed.as_secs_f64(),
        report.messages_per_second()
    );
    if let Some(report) = calendars {
        println!(
            "calendars done: {} users, {} calendars created, {} events wanted, {} already there, {} added in {:.1} s",
            report.users,
            report.calendars_created,
            report.wanted,
            report.already_there,
            report.added,
            report.elapsed.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Each user's calendar and its starting events, when the profile keeps a
/// calendar and the target has a CalDAV server; `update_calendar` without
/// one writes to the IMAP folder the mail side created.
async fn init_calendars(
    plan: &Arc<Plan>,
    target: &Arc<Target>,
    parallel: usize,
) -> anyhow::Result<Option<CalendarInitReport>> {
    if !plan.uses_calendar() {
        return Ok(None);
    }
    if target.caldav.is_none() {
        if plan.needs_caldav() {
            anyhow::bail!(CalendarInitError::NoCalDav);
        }
        eprintln!("no CalDAV server: update_calendar will write to the IMAP folder");
        return Ok(None);
    }
    let report = peakhour_engine::init_calendars(
        plan.clone(),
        target.clone(),
        parallel,
        Duration::from_secs(10),
    )
    .await?;
    Ok(Some(report))
}
