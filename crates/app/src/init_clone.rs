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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use peakhour_engine::init::{
    CloneSummary, InitError, InitReport, InitSettings, Progress, Via, fill_everyone,
    fill_mailboxes, init_with,
};
use peakhour_engine::{Population, Target};
use peakhour_lab::{
    CloneKey, LabError, LabStatus, MailServer, clear_half_clone, clone_mailbox, is_cloned,
    message_files,
};
use peakhour_workload::Plan;
use tokio::time::Instant;

use crate::messages_per_user;

/// Initializes every mailbox of `plan` on `target` (the engine's
/// [`peakhour_engine::init::init`]), cloning on the lab's disk when
/// `settings.via` is [`Via::Clone`].
pub async fn init(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    init_with(
        plan,
        target,
        settings,
        progress,
        |plan, target, settings, progress| async move {
            if settings.via == Via::Clone {
                fill_by_clone(plan, target, settings, progress).await
            } else {
                fill_everyone(plan, target, settings, progress).await
            }
        },
    )
    .await
}

/// The lab's error as the engine's init reports it.
fn clone_error(error: LabError) -> InitError {
    InitError::Clone(Box::new(error))
}

/// Above this many users, `init` on a Dovecot lab clones unless `--via`
/// says otherwise: below it, the IMAP path is about as fast.
pub const CLONE_ABOVE_USERS: u32 = 8;

/// Files copied at once: the copy waits on the disk more than the CPU.
const CLONE_THREADS: usize = 4;

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

/// The lab's users sorted for a clone of `key`, half-done clones cleared.
fn sort_homes(
    plan: &Plan,
    population: &Population,
    homes: &Path,
    key: &CloneKey,
) -> Result<SortedHomes, InitError> {
    let (mut empty, mut cloned, mut holding, mut redone) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for user in 0..plan.users() {
        let address = population.address(user)?;
        let local = address.split('@').next().unwrap_or_default().to_owned();
        redone += u32::from(clear_half_clone(homes, &local).map_err(clone_error)?);
        let home = homes.join(&local);
        // A marked clone is not walked: a re-run of thousands stays quick.
        if is_cloned(&home, key) {
            cloned.push((user, local));
        } else if message_files(&home).map_err(clone_error)? == 0 {
            empty.push((user, local));
        } else {
            holding.push((user, local));
        }
    }
    Ok(SortedHomes {
        empty,
        cloned,
        holding,
        redone,
    })
}

/// The lab's users by what their homes hold, by population index and
/// home name.
struct SortedHomes {
    /// No mail: to copy onto.
    empty: Vec<(u32, String)>,
    /// This init's clone already.
    cloned: Vec<(u32, String)>,
    /// Other mail: to check and complete over IMAP.
    holding: Vec<(u32, String)>,
    /// Half-done clones cleared.
    redone: u32,
}

/// [`Via::Clone`]: the first user that holds no mail is filled over IMAP
/// APPEND (so the source is the profile's starting state, never a mailbox a
/// run has changed), its home is copied for every other user that holds no
/// mail, and users holding other mail are completed over IMAP.
async fn fill_by_clone(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    let homes = settings.homes.clone().ok_or_else(|| {
        clone_error(LabError::BadConfig(
            "--via clone needs the lab's mail directory".into(),
        ))
    })?;
    let started = Instant::now();
    let append = InitSettings {
        via: Via::ImapAppend,
        ..settings
    };
    let population = Population::new(&plan, &target.credentials)?;
    let key = clone_key(&plan);
    let SortedHomes {
        empty,
        cloned: cloned_before,
        holding,
        redone,
    } = sort_homes(&plan, &population, &homes, &key)?;
    // Marked clones need no IMAP check; the others holding mail get one.
    let mut imap_users: Vec<u32> = holding.iter().map(|(user, _)| *user).collect();
    let mut summary = CloneSummary {
        already_cloned: cloned_before.len() as u32,
        redone,
        ..CloneSummary::default()
    };
    progress
        .users_done
        .fetch_add(cloned_before.len() as u64, Ordering::Relaxed);
    let copied = match empty.split_first() {
        Some(((source_user, source), targets)) => {
            let source_only = vec![*source_user];
            let filled = fill_mailboxes(
                plan.clone(),
                target.clone(),
                append.clone(),
                progress.clone(),
                source_only,
            )
            .await?;
            summary.source = source.clone();
            let copy_started = Instant::now();
            let targets: Vec<String> = targets.iter().map(|(_, local)| local.clone()).collect();
            let (from, on_disk, done, key) = (source.clone(), homes, progress.clone(), key);
            let copied = tokio::task::spawn_blocking(move || {
                clone_mailbox(&on_disk, &from, &targets, &key, CLONE_THREADS, &|| {
                    done.users_done.fetch_add(1, Ordering::Relaxed);
                })
            })
            .await
            .map_err(|_| InitError::Panicked {
                user: source.clone(),
            })?
            .map_err(clone_error)?;
            summary.seconds = copy_started.elapsed().as_secs_f64();
            Some((filled, copied))
        }
        None => None,
    };
    let mut report = InitReport::default();
    if let Some((filled, copied)) = copied {
        let per_user = messages_per_user(&plan);
        summary.cloned = copied.cloned;
        summary.already_cloned += copied.already_filled;
        summary.redone += copied.redone;
        summary.files = copied.files;
        summary.bytes = copied.bytes;
        // Filled between the sort and the copy: completed over IMAP too.
        let index: HashMap<&str, u32> = empty.iter().map(|(u, l)| (l.as_str(), *u)).collect();
        imap_users.extend(
            copied
                .holding_mail
                .iter()
                .filter_map(|l| index.get(l.as_str())),
        );
        report = filled;
        report.users += copied.cloned;
        report.wanted += u64::from(copied.cloned) * per_user;
        report.added += u64::from(copied.cloned) * per_user;
        report.bytes += copied.bytes;
    }
    let per_user = messages_per_user(&plan);
    let already = u64::from(summary.already_cloned) * per_user;
    report.users += summary.already_cloned;
    report.wanted += already;
    report.already_there += already;
    summary.completed_over_imap = imap_users.len() as u32;
    imap_users.sort_unstable();
    let rest = fill_mailboxes(plan.clone(), target, append, progress, imap_users).await?;
    report.users += rest.users;
    report.wanted += rest.wanted;
    report.already_there += rest.already_there;
    report.added += rest.added;
    report.bytes += rest.bytes;
    report.elapsed = started.elapsed();
    report.cloned = Some(summary);
    Ok(report)
}
