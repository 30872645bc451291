//! `peakhour init` on the lab, fast: the first user's mailbox is filled the
//! normal way (IMAP APPEND), then its home is copied on disk for every other
//! user that holds no mail ([`peakhour_lab::clone_mailbox`]), at disk speed
//! instead of about 1,000 messages/s (issue 25 item 2).
//!
//! Every user then holds the same folders, counts, flags and bytes as the
//! first one (its `To:` and `Message-ID`s too, which no action reads). A
//! user that already holds mail of another fill (an earlier IMAP init, a run)
//! is completed over IMAP as `--via append` would, so the result is the
//! profile's starting state either way. An explicit target has no disk to
//! copy on: there init keeps IMAP APPEND or LMTP.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use peakhour_lab::{CloneKey, LabStatus, MailServer, clone_mailbox};
use peakhour_workload::Plan;
use tokio::time::Instant;

use crate::init::{InitError, InitReport, InitSettings, Progress, Via, fill_mailboxes};
use crate::messages_per_user;
use crate::population::Population;
use crate::target::Target;

/// Above this many users, `init` on a Dovecot lab clones unless `--via`
/// says otherwise: below it, the IMAP path is about as fast.
pub const CLONE_ABOVE_USERS: u32 = 8;

/// Files copied at once: the copy waits on the disk more than the CPU.
const CLONE_THREADS: usize = 4;

/// What the clone on disk did (the IMAP part is in [`InitReport`]).
#[derive(Debug, Clone, Default)]
pub struct CloneSummary {
    /// The user whose home was copied.
    pub source: String,
    /// Users filled by the copy now.
    pub cloned: u32,
    /// Users that held this clone already.
    pub already_cloned: u32,
    /// Users holding other mail, completed over IMAP instead.
    pub completed_over_imap: u32,
    /// Temporary trees of an interrupted clone, removed and redone.
    pub redone: u32,
    /// Files and bytes copied (messages and Dovecot's indexes).
    pub files: u64,
    /// See `files`.
    pub bytes: u64,
    /// Seconds the copy took.
    pub seconds: f64,
}

impl CloneSummary {
    /// Users copied per second.
    pub fn users_per_second(&self) -> f64 {
        f64::from(self.cloned) / self.seconds.max(1e-9)
    }
}

impl fmt::Display for CloneSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cloned {}'s mailbox on disk: {} users ({} files, {:.1} MB) in {:.1} s = {:.0} users/s; \
             {} already cloned, {} completed over IMAP, {} half-done clones redone",
            self.source,
            self.cloned,
            self.files,
            self.bytes as f64 / 1e6,
            self.seconds,
            self.users_per_second(),
            self.already_cloned,
            self.completed_over_imap,
            self.redone,
        )
    }
}

/// How `init` fills the mailboxes: `flag` is `--via` (`None` when not
/// given), `lab` the lab's status for `--target lab`. Returns the way and,
/// for a clone, the lab's homes; the error is a usage error's text.
pub fn choose_via(
    flag: Option<&str>,
    target: &Target,
    lab: Option<&LabStatus>,
    users: u32,
) -> Result<(Via, Option<PathBuf>), String> {
    let homes = lab
        .filter(|lab| lab.mail_server == MailServer::Dovecot)
        .map(|lab| Path::new(&lab.dir).join("mail").join(&lab.domain));
    let via = match flag {
        Some(name) => Via::from_flag(name).ok_or_else(|| format!("unknown --via {name:?}"))?,
        None if homes.is_some() && users > CLONE_ABOVE_USERS => Via::Clone,
        None => Via::ImapAppend,
    };
    match via {
        Via::Lmtp if target.lmtp.is_none() => Err(
            "--via lmtp needs an LMTP endpoint: use --target lab, or give --lmtp lmtp://host:port"
                .into(),
        ),
        Via::Clone if homes.is_none() => Err(
            "--via clone copies a mailbox on the lab's own disk (a Dovecot lab, --target lab): \
             an explicit target or a Cyrus lab cannot be cloned; use --via append"
                .into(),
        ),
        Via::Clone => Ok((via, homes)),
        _ => Ok((via, None)),
    }
}

/// What marks a clone as this init's: the profile, the seed, the folders'
/// message counts.
fn clone_key(plan: &Plan) -> CloneKey {
    let counts: Vec<String> = plan
        .folders()
        .iter()
        .map(|f| f.messages.to_string())
        .collect();
    CloneKey(format!(
        "peakhour init: profile {} seed {} messages {}",
        plan.name(),
        plan.seed(),
        counts.join(",")
    ))
}

/// [`Via::Clone`]: user 0 over IMAP APPEND, a copy of its home for every
/// other user that holds no mail, IMAP APPEND for those that hold some.
pub(crate) async fn fill_by_clone(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    let homes = settings.homes.clone().ok_or_else(|| {
        peakhour_lab::LabError::BadConfig("--via clone needs the lab's mail directory".into())
    })?;
    let started = Instant::now();
    let append = InitSettings {
        via: Via::ImapAppend,
        ..settings
    };
    let mut report = fill_mailboxes(
        plan.clone(),
        target.clone(),
        append.clone(),
        progress.clone(),
        vec![0],
    )
    .await?;
    let population = Population::new(&plan, &target.credentials)?;
    let local = |user: u32| {
        population
            .address(user)
            .map(|a| a.split('@').next().unwrap_or_default().to_owned())
    };
    let source = local(0)?;
    let mut users = HashMap::new();
    for user in 1..plan.users() {
        users.insert(local(user)?, user);
    }
    let targets: Vec<String> = (1..plan.users()).filter_map(|u| local(u).ok()).collect();
    let key = clone_key(&plan);
    let copy_started = Instant::now();
    let (from, on_disk) = (source.clone(), homes.clone());
    let done = progress.clone();
    let copied = tokio::task::spawn_blocking(move || {
        clone_mailbox(&on_disk, &from, &targets, &key, CLONE_THREADS, &|| {
            done.users_done.fetch_add(1, Ordering::Relaxed);
        })
    })
    .await
    .map_err(|_| InitError::Panicked {
        user: source.clone(),
    })??;
    let per_user = messages_per_user(&plan);
    let summary = CloneSummary {
        source,
        cloned: copied.cloned,
        already_cloned: copied.already_filled,
        completed_over_imap: copied.holding_mail.len() as u32,
        redone: copied.redone,
        files: copied.files,
        bytes: copied.bytes,
        seconds: copy_started.elapsed().as_secs_f64(),
    };
    let holding: Vec<u32> = copied
        .holding_mail
        .iter()
        .filter_map(|name| users.get(name).copied())
        .collect();
    let rest = fill_mailboxes(plan.clone(), target, append, progress, holding).await?;
    let cloned_messages = u64::from(copied.cloned) * per_user;
    report.users += summary.cloned + summary.already_cloned + rest.users;
    report.wanted += u64::from(summary.cloned + summary.already_cloned) * per_user + rest.wanted;
    report.already_there += u64::from(summary.already_cloned) * per_user + rest.already_there;
    report.added += cloned_messages + rest.added;
    report.bytes += copied.bytes + rest.bytes;
    report.elapsed = started.elapsed();
    report.cloned = Some(summary);
    Ok(report)
}
