//! `peakhour init`: fill every mailbox to the profile's starting state.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use peakhour_app::init_clone::{choose_via, init};
use peakhour_app::{InitDone, MailRequest, init_announcement, messages_per_user};
use peakhour_engine::init::{InitSettings, Progress, Via};
use peakhour_workload::Overrides;

use crate::args::InitArgs;
use crate::config::{CONNECT_TIMEOUT, INIT_COMMAND_TIMEOUT, InitConfig, UsageError, usage_exit};

type Prepared = (
    Arc<peakhour_workload::Plan>,
    Arc<peakhour_engine::Target>,
    Via,
    Option<PathBuf>,
);

/// The plan, target and way in of an init, with the test population checked.
fn prepare(args: &InitArgs, config: &InitConfig) -> anyhow::Result<Prepared> {
    let overrides = Overrides {
        users: config.users,
        seed: args.seed,
        ..Overrides::default()
    };
    let (profile, target, allowed) = (
        &args.profile.profile,
        &args.target.spec(),
        &config.allow_domains,
    );
    let say = &mut |line: String| eprintln!("{line}");
    let MailRequest { plan, resolved, .. } =
        MailRequest::resolve(profile, target, overrides, allowed, say)?;
    let (target, lab) = (&resolved.target, resolved.lab.as_ref());
    let (via, homes) =
        choose_via(args.via.as_deref(), target, lab, plan.users()).map_err(UsageError)?;
    Ok((plan, target.clone(), via, homes))
}

pub(crate) fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    // Bounds, the profile, the target and the population: all checked
    // before any connection; bad usage exits with code 2.
    let prepared = InitConfig::check(&args)
        .map_err(anyhow::Error::from)
        .and_then(|config| prepare(&args, &config).map(|prepared| (config, prepared)));
    let (config, (plan, target, via, homes)) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return usage_exit(error),
    };
    let per_user = messages_per_user(&plan);
    eprintln!("{}", init_announcement(&plan, via));
    let progress = Arc::new(Progress::default());
    let bar = ProgressBar::new(u64::from(plan.users()) * per_user);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} messages  {per_sec}  eta {eta}  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let settings = InitSettings {
        via,
        parallel: config.parallel,
        timeout: CONNECT_TIMEOUT,
        command_timeout: INIT_COMMAND_TIMEOUT,
        homes,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime
        .block_on(async {
            let job = tokio::spawn(init(plan.clone(), target, settings, progress.clone()));
            let mut ticker = tokio::time::interval(Duration::from_millis(200));
            while !job.is_finished() {
                ticker.tick().await;
                let done = progress.messages_done(per_user);
                bar.set_position(done.min(bar.length().unwrap_or(u64::MAX)));
                let users_done = progress.users_done.load(Ordering::Relaxed);
                bar.set_message(format!("{users_done}/{} users", plan.users()));
            }
            job.await
        })
        // A panic of the init as a whole, or of one of its workers (the engine
        // reports that as an error): either way, a failed init.
        .context("init panicked (a bug in peakhour)")?
        .context("init failed; what was added stays, and a second init resumes")?;
    bar.finish_and_clear();
    println!("{}", InitDone(&report));
    Ok(ExitCode::SUCCESS)
}
