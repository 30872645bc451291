//! `peakhour init`: bring every mailbox to the profile's starting state —
//! its folders, and in each the profile's number of messages from its mix.
//!
//! * **Idempotent and resumable.** Each user's folders are counted first
//!   (IMAP STATUS), and only the missing messages are added, in order, so a
//!   second run adds nothing and an interrupted run continues where it stopped.
//! * **Fast where it can be.** Into the lab, messages go straight to Dovecot
//!   over LMTP (`user+Folder@domain`, with `lmtp_save_to_detail_mailbox`);
//!   elsewhere with IMAP APPEND. Users are initialized in parallel.
//! * **Deterministic.** Message bytes come from the plan's seed, so two labs
//!   initialized with the same profile and seed hold the same mail.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use peakhour_imap::{ImapError, StatusItem};
use peakhour_smtp::{Flavor, SmtpError};
use peakhour_workload::{InitialMessage, MessageGenerator, MessageSpec, Plan};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::date::rfc5322;
use crate::target::Target;

/// How messages get into the mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// LMTP straight into the store (the lab).
    Lmtp,
    /// IMAP APPEND (any server).
    ImapAppend,
}

/// Settings of an init.
#[derive(Debug, Clone)]
pub struct InitSettings {
    /// How messages are written.
    pub via: Via,
    /// Users initialized at once (each holds one connection for delivery).
    pub parallel: usize,
    /// Connect timeout.
    pub timeout: Duration,
}

/// What an init did.
#[derive(Debug, Clone, Default)]
pub struct InitReport {
    /// Users whose mailboxes were checked.
    pub users: u32,
    /// Messages the profile asks for, over all users.
    pub wanted: u64,
    /// Messages that were already there.
    pub already_there: u64,
    /// Messages added now.
    pub added: u64,
    /// Bytes added.
    pub bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl InitReport {
    /// Messages added per second.
    pub fn messages_per_second(&self) -> f64 {
        self.added as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Why an init failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// An IMAP step failed for a user.
    #[error("{user}: IMAP: {source}")]
    Imap {
        /// The user.
        user: String,
        /// The error.
        source: ImapError,
    },
    /// An LMTP step failed for a user.
    #[error("{user}: LMTP: {source}")]
    Lmtp {
        /// The user.
        user: String,
        /// The error.
        source: SmtpError,
    },
    /// LMTP refused a message.
    #[error("{user}: LMTP refused the message for {folder}: {reply}")]
    Refused {
        /// The user.
        user: String,
        /// The folder.
        folder: String,
        /// The server's reply.
        reply: String,
    },
    /// LMTP was asked for but the target has no LMTP endpoint.
    #[error(
        "LMTP delivery needs an LMTP endpoint (the lab has one); use IMAP APPEND for other servers"
    )]
    NoLmtp,
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

/// Initializes every mailbox of `plan` on `target`.
pub async fn init(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    if settings.via == Via::Lmtp && target.lmtp.is_none() {
        return Err(InitError::NoLmtp);
    }
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(settings.parallel.max(1)));
    let mut tasks = JoinSet::new();
    for user in 0..plan.users() {
        let (plan, target, settings, progress, permits) = (
            plan.clone(),
            target.clone(),
            settings.clone(),
            progress.clone(),
            permits.clone(),
        );
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = init_user(&plan, &target, &settings, &progress, user).await;
            progress.users_done.fetch_add(1, Ordering::Relaxed);
            result
        });
    }
    let mut report = InitReport {
        users: plan.users(),
        ..InitReport::default()
    };
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(user)) => {
                report.wanted += user.wanted;
                report.already_there += user.already_there;
                report.added += user.added;
                report.bytes += user.bytes;
            }
            Ok(Err(error)) => {
                // Stop at the first failure: what was added stays (init resumes).
                first_error.get_or_insert(error);
                tasks.abort_all();
            }
            Err(_) => {}
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

#[derive(Debug, Default)]
struct UserReport {
    wanted: u64,
    already_there: u64,
    added: u64,
    bytes: u64,
}

/// A plausible date for an initial message: spread over the weeks before a
/// fixed day, so that the bytes (and hence a seed's mailboxes) never depend on
/// when init ran.
fn initial_date(message: &InitialMessage) -> String {
    const BASE: u64 = 1_767_603_600; // Mon, 05 Jan 2026 09:00 UTC
    let hours_back = u64::from(message.position) * 7 + message.folder as u64 * 3;
    rfc5322(BASE - hours_back * 3600)
}

async fn init_user(
    plan: &Plan,
    target: &Target,
    settings: &InitSettings,
    progress: &Progress,
    user: u32,
) -> Result<UserReport, InitError> {
    let address = plan.address(user);
    let imap_error = |source| InitError::Imap {
        user: address.clone(),
        source,
    };
    let (login, password) = target.login(user, &address);
    let mut imap = target
        .connect_imap(settings.timeout)
        .await
        .map_err(imap_error)?;
    imap.login(login, password).await.map_err(imap_error)?;

    // Count what is there; create what is missing.
    let existing: Vec<String> = imap
        .list("", "*")
        .await
        .map_err(imap_error)?
        .value
        .into_iter()
        .map(|e| e.name)
        .collect();
    let folders = plan.folders();
    let mut present = Vec::with_capacity(folders.len());
    for folder in folders {
        if !existing
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&folder.name))
        {
            imap.create(&folder.name).await.map_err(imap_error)?;
            present.push(0);
            continue;
        }
        let status = imap
            .status(&folder.name, &[StatusItem::Messages])
            .await
            .map_err(imap_error)?
            .value;
        present.push(status.messages.unwrap_or(0));
    }
    let wanted = plan.initial_messages(user);
    let missing: Vec<&InitialMessage> = wanted
        .iter()
        .filter(|m| m.position >= present[m.folder])
        .collect();
    let mut report = UserReport {
        wanted: wanted.len() as u64,
        already_there: (wanted.len() - missing.len()) as u64,
        ..UserReport::default()
    };
    progress
        .to_add
        .fetch_add(missing.len() as u64, Ordering::Relaxed);
    if missing.is_empty() {
        let _ = imap.logout().await;
        return Ok(report);
    }

    let generator = MessageGenerator::new(plan.seed());
    let run_id = format!("init-{}", plan.seed());
    let mut buffer = Vec::new();
    let mut lmtp = match (settings.via, &target.lmtp) {
        (Via::Lmtp, Some(endpoint)) => Some(
            target
                .connect_smtp(endpoint, Flavor::Lmtp, "init.peakhour", settings.timeout)
                .await
                .map_err(|source| InitError::Lmtp {
                    user: address.clone(),
                    source,
                })?,
        ),
        _ => None,
    };
    for message in missing {
        let folder = &folders[message.folder].name;
        let to = [address.clone()];
        let from = plan.address(message.from);
        let date = initial_date(message);
        buffer.clear();
        generator.write(
            &MessageSpec {
                run_id: &run_id,
                id: &message.id,
                from: &from,
                to: &to,
                date: &date,
                kind: &plan.mix()[message.mix],
            },
            &mut buffer,
        );
        match lmtp.as_mut() {
            Some(lmtp) => {
                // Dovecot saves `user+Folder@domain` into Folder (lmtp_save_to_detail_mailbox).
                let recipient = if folder.eq_ignore_ascii_case("INBOX") {
                    address.clone()
                } else {
                    let (local, domain) = address.split_once('@').unwrap_or((&address, ""));
                    format!("{local}+{folder}@{domain}")
                };
                let outcome = lmtp
                    .send_mail(&from, std::slice::from_ref(&recipient), &buffer)
                    .await
                    .map_err(|source| InitError::Lmtp {
                        user: address.clone(),
                        source,
                    })?
                    .value;
                if !outcome.all_delivered() {
                    let reply = outcome
                        .recipients
                        .first()
                        .map(|r| {
                            r.delivery
                                .as_ref()
                                .map_or(&r.rcpt.value, |d| &d.value)
                                .text()
                        })
                        .unwrap_or_default();
                    return Err(InitError::Refused {
                        user: address.clone(),
                        folder: folder.clone(),
                        reply,
                    });
                }
            }
            None => {
                imap.append(folder, &["\\Seen"], None, &buffer)
                    .await
                    .map_err(imap_error)?;
            }
        }
        report.added += 1;
        report.bytes += buffer.len() as u64;
        progress.added.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(lmtp) = lmtp {
        let _ = lmtp.quit().await;
    }
    let _ = imap.logout().await;
    Ok(report)
}
