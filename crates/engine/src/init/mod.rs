//! `peakhour init`: bring every mailbox to the profile's starting state —
//! its folders, and in each the profile's number of messages from its mix.
//!
//! * **Idempotent and resumable.** Each user's folders are counted first
//!   (IMAP STATUS), and only the missing messages are added, in order, so a
//!   second run adds nothing and an interrupted run continues where it stopped.
//!   Any init's messages count, whatever its seed: the mailboxes are the
//!   server's state, and a second seed must not double them.
//! * **Fast where it can be.** Messages go in with IMAP APPEND, each folder's
//!   in MULTIAPPEND batches (RFC 3502) when the server offers it: one command
//!   and one mailbox transaction for many messages. Into the lab that is about
//!   four times faster than LMTP delivery, which opens the mailbox, updates
//!   its indexes and syncs once per message (docs/PERFORMANCE.md). LMTP
//!   (`user+Folder@domain`, with `lmtp_save_to_detail_mailbox`) remains a
//!   choice. Users are initialized in parallel.
//! * **Deterministic.** Message bytes come from the plan's seed, so two labs
//!   initialized with the same profile and seed hold the same mail.
//!
//! The module's parts: [`report`] says what an init did or why it failed,
//! `mailbox` fills one user's mailbox. Copying a filled mailbox on the lab's
//! disk is not the engine's: `peakhour-app` passes it in through [`init_with`].

mod mailbox;
pub mod report;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use peakhour_workload::Plan;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::population::{Population, PopulationError};
use crate::target::Target;
use mailbox::UserJob;
pub use report::{CloneSummary, InitError, InitReport};

/// How messages get into the mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// LMTP straight into the store (the lab).
    Lmtp,
    /// IMAP APPEND (any server), batched with MULTIAPPEND when offered.
    ImapAppend,
    /// The lab only: the first user filled with IMAP APPEND, then its home
    /// copied on disk for every user that holds no mail (`peakhour-app`'s
    /// `init_clone`, given to [`init_with`]).
    Clone,
}

impl Via {
    /// The way `--via` names (`append`, `lmtp` or `clone`); `None` for another name.
    pub fn from_flag(name: &str) -> Option<Via> {
        match name {
            "lmtp" => Some(Via::Lmtp),
            "append" => Some(Via::ImapAppend),
            "clone" => Some(Via::Clone),
            _ => None,
        }
    }
}

/// Settings of an init.
#[derive(Debug, Clone)]
pub struct InitSettings {
    /// How messages are written.
    pub via: Via,
    /// Users initialized at once (each holds one connection for delivery).
    pub parallel: usize,
    /// Connecting, with the TLS handshake, the greeting and STARTTLS, must
    /// take less than this.
    pub timeout: Duration,
    /// Every IMAP and LMTP command must complete within this (a MULTIAPPEND
    /// batch of up to 4 MB is one command).
    pub command_timeout: Duration,
    /// The lab's users' homes (`mail/<domain>`), for [`Via::Clone`].
    pub homes: Option<std::path::PathBuf>,
}

/// Live progress, readable from another task (for a progress bar).
#[derive(Debug, Default)]
pub struct Progress {
    /// Messages the run will add, once known (grows as users are checked).
    pub to_add: AtomicU64,
    /// Messages added so far.
    pub added: AtomicU64,
    /// Users finished.
    pub users_done: AtomicU64,
}

impl Progress {
    /// Messages done so far out of `users × per_user`: those added, and
    /// those the finished users had already (so the bar ends full on a
    /// re-run that adds nothing).
    pub fn messages_done(&self, per_user: u64) -> u64 {
        let added = self.added.load(Ordering::Relaxed);
        let to_add = self.to_add.load(Ordering::Relaxed);
        let finished = self.users_done.load(Ordering::Relaxed) * per_user;
        added + finished.saturating_sub(to_add.min(finished))
    }
}

/// Initializes every mailbox of `plan` on `target` over `settings.via`
/// (LMTP or IMAP APPEND: [`Via::Clone`] needs [`init_with`] and a way to
/// clone). Every wait has a deadline (see [`InitSettings`]); the first user
/// that fails or panics ends the init with its error, and what was added
/// stays (init resumes). The error has passed the run's redaction
/// ([`Target::redactor`]).
pub async fn init(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    init_with(plan, target, settings, progress, fill_everyone).await
}

/// [`init`], with the mailboxes filled by `fill` (given the plan, the
/// target, the settings and the progress) instead of the engine's
/// [`fill_everyone`]; the calendars and the redaction stay the engine's.
pub async fn init_with<F, Fut>(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
    fill: F,
) -> Result<InitReport, InitError>
where
    F: FnOnce(Arc<Plan>, Arc<Target>, InitSettings, Arc<Progress>) -> Fut,
    Fut: Future<Output = Result<InitReport, InitError>>,
{
    let redactor = target.redactor();
    let filled = fill(plan.clone(), target.clone(), settings.clone(), progress).await;
    let mut report = filled.map_err(|e| e.redacted(&redactor))?;
    let population = Arc::new(Population::new(&plan, &target.credentials)?);
    report.calendars =
        crate::sessions::caldav::init::init_calendars(&plan, &target, &population, &settings)
            .await
            .map_err(|e| InitError::from(e).redacted(&redactor))?;
    Ok(report)
}

/// Fills every user's mailbox over `settings.via` (LMTP, else IMAP APPEND).
pub async fn fill_everyone(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    let everyone = (0..plan.users()).collect();
    fill_mailboxes(plan, target, settings, progress, everyone).await
}

/// Fills the mailboxes of `users` (indexes into the population), each over
/// its own connection (`settings.via` is LMTP, else IMAP APPEND).
pub async fn fill_mailboxes(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
    users_to_fill: Vec<u32>,
) -> Result<InitReport, InitError> {
    if settings.via == Via::Lmtp && target.lmtp.is_none() {
        return Err(InitError::NoLmtp);
    }
    let population = Arc::new(Population::new(&plan, &target.credentials)?);
    if population.users() < plan.users() {
        return Err(PopulationError::NoSuchUser {
            user: population.users(),
            users: population.users(),
        }
        .into());
    }
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(settings.parallel.max(1)));
    let mut tasks = JoinSet::new();
    let mut users = HashMap::new();
    for user in users_to_fill.iter().copied() {
        let (plan, population, target, settings, progress, permits) = (
            plan.clone(),
            population.clone(),
            target.clone(),
            settings.clone(),
            progress.clone(),
            permits.clone(),
        );
        let task = tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let job = UserJob {
                plan: &plan,
                population: &population,
                target: &target,
                settings: &settings,
            };
            job.run(&progress, user).await
        });
        users.insert(task.id(), user);
    }
    let mut report = InitReport {
        users: users_to_fill.len() as u32,
        ..InitReport::default()
    };
    let mut first_error = None;
    while let Some(joined) = tasks.join_next_with_id().await {
        let error = match joined {
            Ok((_, Ok(user))) => {
                report.wanted += user.wanted;
                report.already_there += user.already_there;
                report.added += user.added;
                report.bytes += user.bytes;
                continue;
            }
            Ok((_, Err(error))) => error,
            Err(joined) if joined.is_panic() => InitError::Panicked {
                user: users
                    .get(&joined.id())
                    .and_then(|&u| population.address(u).ok())
                    .unwrap_or_default(),
            },
            // Aborted below, after the first failure.
            Err(_) => continue,
        };
        // Stop at the first failure: what was added stays (init resumes).
        first_error.get_or_insert(error);
        tasks.abort_all();
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}
