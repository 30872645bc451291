//! `peakhour init`: bring every mailbox to the profile's starting state —
//! its folders, and in each the profile's number of messages from its mix.
//!
//! * **Idempotent and resumable.** Each user's folders are counted first
//!   (IMAP STATUS), and only the missing messages are added, in order, so a
//!   second run adds nothing and an interrupted run continues where it stopped.
//! * **Fast where it can be.** Messages go in with IMAP APPEND, each folder's
//!   in MULTIAPPEND batches (RFC 3502) when the server offers it: one command
//!   and one mailbox transaction for many messages. Into the lab that is about
//!   four times faster than LMTP delivery, which opens the mailbox, updates
//!   its indexes and syncs once per message (docs/PERFORMANCE.md). LMTP
//!   (`user+Folder@domain`, with `lmtp_save_to_detail_mailbox`) remains a
//!   choice. Users are initialized in parallel.
//! * **Deterministic.** Message bytes come from the plan's seed, so two labs
//!   initialized with the same profile and seed hold the same mail.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use peakhour_imap::{ImapConnection, ImapError, SearchKey, StatusItem};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};
use peakhour_workload::{InitialMessage, MessageGenerator, MessageSpec, Plan};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::folders::{discover, listed};
use crate::population::{Population, PopulationError};
use crate::sessions::rfc5322;
use crate::target::Target;

/// How messages get into the mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// LMTP straight into the store (the lab).
    Lmtp,
    /// IMAP APPEND (any server), batched with MULTIAPPEND when offered.
    ImapAppend,
    /// The lab only: the first user filled with IMAP APPEND, then its home
    /// copied on disk for every user that holds no mail
    /// ([`crate::init_clone`]).
    Clone,
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
    /// Wall time (of the mailboxes; the calendars keep their own).
    pub elapsed: Duration,
    /// The calendars made over CalDAV, when the profile keeps a calendar
    /// and the target has a CalDAV server.
    pub calendars: Option<crate::CalendarInitReport>,
    /// What the clone on disk did, for [`Via::Clone`].
    pub cloned: Option<crate::init_clone::CloneSummary>,
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
    /// An IMAP step failed for a user. The error carries the command and
    /// the server's text; `login` is the login actually sent, and `folder`
    /// the folder the command was about (as the server names it).
    #[error("{login}: {error}{}", folder_suffix(.folder))]
    Imap {
        /// The login sent (from the users file, or the address).
        login: String,
        /// The folder the failing command named, if any.
        folder: Option<String>,
        /// The error (not a `source`: its text is already in this one's,
        /// and a chain would print it twice).
        error: ImapError,
    },
    /// An LMTP step failed for a user.
    #[error("{user}: LMTP: {error}")]
    Lmtp {
        /// The user's address (LMTP delivers to addresses).
        user: String,
        /// The error.
        error: SmtpError,
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
    /// A user's task panicked (a bug in peakhour).
    #[error("{user}: the task initializing this mailbox panicked (a bug in peakhour)")]
    Panicked {
        /// The user.
        user: String,
    },
    /// The population is unusable (see [`Population::new`]).
    #[error(transparent)]
    Population(#[from] PopulationError),
    /// LMTP was asked for but the target has no LMTP endpoint.
    #[error(
        "LMTP delivery needs an LMTP endpoint (the lab has one); use IMAP APPEND for other servers"
    )]
    NoLmtp,
    /// The calendars could not be made (see [`crate::init_calendars`]).
    #[error(transparent)]
    Calendar(#[from] crate::CalendarInitError),
    /// The clone on disk failed (see [`Via::Clone`]).
    #[error("cloning the first mailbox on disk: {0}")]
    Clone(#[from] peakhour_lab::LabError),
    /// A step failed and what the server said held a password of the run
    /// (a refusal quoting the command): the error's text with the
    /// passwords taken out by the run's redaction (issue 26).
    #[error("{0}")]
    Redacted(String),
}

impl InitError {
    /// This error, or its text redacted when the text holds a password.
    fn redacted(self, redactor: &peakhour_analysis::Redactor) -> Self {
        let text = self.to_string();
        let clean = redactor.redact(&text);
        if clean == text {
            self
        } else {
            Self::Redacted(clean)
        }
    }
}

fn folder_suffix(folder: &Option<String>) -> String {
    folder
        .as_ref()
        .map(|f| format!(" (folder {f:?})"))
        .unwrap_or_default()
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

/// Initializes every mailbox of `plan` on `target`. Every wait has a
/// deadline (see [`InitSettings`]); the first user that fails or panics
/// ends the init with its error, and what was added stays (init resumes).
/// The error has passed the run's redaction ([`Target::redactor`]).
pub async fn init(
    plan: Arc<Plan>,
    target: Arc<Target>,
    settings: InitSettings,
    progress: Arc<Progress>,
) -> Result<InitReport, InitError> {
    let redactor = target.redactor();
    let filled = if settings.via == Via::Clone {
        crate::init_clone::fill_by_clone(plan.clone(), target.clone(), settings.clone(), progress)
            .await
    } else {
        let everyone = (0..plan.users()).collect();
        fill_mailboxes(
            plan.clone(),
            target.clone(),
            settings.clone(),
            progress,
            everyone,
        )
        .await
    };
    let mut report = filled.map_err(|e| e.redacted(&redactor))?;
    let population = Arc::new(Population::new(&plan, &target.credentials)?);
    report.calendars = crate::calendar_init::init_calendars(&plan, &target, &population, &settings)
        .await
        .map_err(|e| InitError::from(e).redacted(&redactor))?;
    Ok(report)
}

/// Fills the mailboxes of `users` (indexes into the population), each over
/// its own connection (`settings.via` is LMTP or IMAP APPEND).
pub(crate) async fn fill_mailboxes(
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
    const BASE: i64 = 1_767_603_600; // Mon, 05 Jan 2026 09:00 UTC
    let hours_back = i64::from(message.position) * 7 + message.folder as i64 * 3;
    let at = chrono::DateTime::from_timestamp(BASE - hours_back * 3600, 0).unwrap_or_default();
    rfc5322(at)
}

/// A mailbox being initialized: what its folders hold already, and (for
/// IMAP APPEND) the session that adds the rest.
struct Mailbox {
    address: String,
    /// The login sent, for errors.
    login: String,
    /// The server's name of each of [`Plan::folders`].
    names: Vec<String>,
    /// Messages in each of [`Plan::folders`] before this init.
    present: Vec<u32>,
    imap: Option<ImapConnection>,
}

impl Mailbox {
    /// Whether `message` still has to be added. Messages go into a folder in
    /// position order, so a count says which are there.
    fn lacks(&self, message: &InitialMessage) -> bool {
        message.position >= self.present[message.folder]
    }
}

/// One user's part of an init.
struct UserJob<'a> {
    plan: &'a Plan,
    population: &'a Population,
    target: &'a Target,
    settings: &'a InitSettings,
}

impl UserJob<'_> {
    /// Logs on as `user`, creates the folders it lacks and counts the
    /// messages of this init the others hold.
    async fn count_folders(&self, user: u32) -> Result<Mailbox, InitError> {
        let UserJob {
            plan,
            population,
            target,
            settings,
        } = *self;
        let address = population.address(user)?;
        let (login, password) = target.login(user, &address);
        let failed = |folder: Option<&str>| {
            let login = login.to_owned();
            let folder = folder.map(str::to_owned);
            move |error| InitError::Imap {
                login,
                folder,
                error,
            }
        };
        let log_on = || async {
            let mut imap = target
                .connect_imap(settings.timeout, settings.command_timeout)
                .await?;
            imap.login(login, password).await?;
            Ok(imap)
        };
        let mut imap = log_on().await.map_err(failed(None))?;
        let prefix = target.options.folder_prefix.as_deref();
        let (server, listing) = discover(&mut imap, prefix, |_, _| {})
            .await
            .map_err(failed(None))?;
        let existing: Vec<String> = listing.into_iter().map(|e| e.name).collect();
        let mut names = Vec::with_capacity(plan.folders().len());
        let mut present = Vec::with_capacity(plan.folders().len());
        let mut examined = false;
        for folder in plan.folders() {
            let name = server.initial_folder(plan.params(), &folder.name);
            let count = if listed(&existing, &name) {
                let (count, selected) = own_messages(&mut imap, &name, &self.run_id())
                    .await
                    .map_err(failed(Some(&name)))?;
                examined |= selected;
                count
            } else {
                imap.create(&name).await.map_err(failed(Some(&name)))?;
                0
            };
            present.push(count);
            names.push(name);
        }
        let imap = if settings.via == Via::ImapAppend && examined {
            // A server may refuse an APPEND to the mailbox the session has
            // EXAMINEd (`NO Current box is selected READ-ONLY`, issue 26):
            // the appends go through a fresh session with none selected,
            // which every server accepts (CLOSE and UNSELECT are not offered
            // everywhere, and a SELECT would clear the user's \Recent flags).
            let _ = imap.logout().await;
            Some(log_on().await.map_err(failed(None))?)
        } else if settings.via == Via::ImapAppend {
            Some(imap)
        } else {
            let _ = imap.logout().await;
            None
        };
        Ok(Mailbox {
            login: login.to_owned(),
            address: address.clone(),
            names,
            present,
            imap,
        })
    }

    /// The run id every message of this init carries (`X-Peakhour-Run`).
    fn run_id(&self) -> String {
        format!("init-{}", self.plan.seed())
    }

    /// Brings `user`'s mailbox to the starting state.
    async fn run(&self, progress: &Progress, user: u32) -> Result<UserReport, InitError> {
        let UserJob {
            plan,
            population,
            target,
            settings,
        } = *self;
        let mut mailbox = self.count_folders(user).await?;
        let wanted = plan.initial_messages(user);
        let missing: Vec<&InitialMessage> = wanted.iter().filter(|m| mailbox.lacks(m)).collect();
        let mut report = UserReport {
            wanted: wanted.len() as u64,
            already_there: (wanted.len() - missing.len()) as u64,
            ..UserReport::default()
        };
        progress
            .to_add
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        let writer = Writer {
            plan,
            population,
            generator: MessageGenerator::new(plan.seed()),
            run_id: self.run_id(),
            to: vec![mailbox.address.clone()],
        };
        let written = match (missing.is_empty(), settings.via, &target.lmtp) {
            (true, _, _) => Ok(()),
            (false, Via::Lmtp, Some(endpoint)) => {
                match target
                    .connect_smtp(
                        endpoint,
                        Flavor::Lmtp,
                        "init.peakhour",
                        settings.timeout.max(settings.command_timeout),
                    )
                    .await
                {
                    Ok(lmtp) => {
                        writer
                            .deliver(lmtp, &mailbox, &missing, progress, &mut report)
                            .await
                    }
                    Err(error) => Err(InitError::Lmtp {
                        user: mailbox.address.clone(),
                        error,
                    }),
                }
            }
            (false, _, _) => {
                writer
                    .append(&mut mailbox, &missing, progress, &mut report)
                    .await
            }
        };
        if let Some(imap) = mailbox.imap {
            let _ = imap.logout().await;
        }
        progress.users_done.fetch_add(1, Ordering::Relaxed);
        written.map(|()| report)
    }
}

/// MULTIAPPEND batches stay below these, so that a command stays modest.
const APPEND_BATCH_MESSAGES: usize = 64;
const APPEND_BATCH_BYTES: usize = 4 << 20;

/// Writes one mailbox's initial messages.
struct Writer<'a> {
    plan: &'a Plan,
    population: &'a Population,
    generator: MessageGenerator,
    run_id: String,
    to: Vec<String>,
}

impl Writer<'_> {
    /// The population member `message` appears to come from.
    fn sender(&self, message: &InitialMessage) -> String {
        self.population
            .address(message.from)
            .unwrap_or_else(|_| self.to[0].clone())
    }

    /// The bytes of `message`, deterministic from the seed.
    fn render(&self, message: &InitialMessage) -> Vec<u8> {
        let from = self.sender(message);
        let date = initial_date(message);
        let mut buffer = Vec::new();
        self.generator.write(
            &MessageSpec {
                run_id: &self.run_id,
                id: &message.id,
                from: &from,
                to: &self.to,
                date: &date,
                kind: &self.plan.mix()[message.mix],
            },
            &mut buffer,
        );
        buffer
    }

    /// Over LMTP, one transaction per message, to `user+Folder@domain`.
    async fn deliver(
        &self,
        mut lmtp: SmtpConnection,
        mailbox: &Mailbox,
        missing: &[&InitialMessage],
        progress: &Progress,
        report: &mut UserReport,
    ) -> Result<(), InitError> {
        for message in missing {
            let folder = &mailbox.names[message.folder];
            let from = self.sender(message);
            let bytes = self.render(message);
            let recipient = detail_address(&mailbox.address, folder);
            let outcome = lmtp
                .send_mail(&from, std::slice::from_ref(&recipient), &bytes)
                .await
                .map_err(|error| InitError::Lmtp {
                    user: mailbox.address.clone(),
                    error,
                })?
                .value;
            if let Some(refused) = outcome.recipients.iter().find(|r| !r.delivered()) {
                let reply = refused
                    .delivery
                    .as_ref()
                    .map_or(&refused.rcpt.value, |d| &d.value)
                    .text();
                return Err(InitError::Refused {
                    user: mailbox.address.clone(),
                    folder: folder.clone(),
                    reply,
                });
            }
            report.added += 1;
            report.bytes += bytes.len() as u64;
            progress.added.fetch_add(1, Ordering::Relaxed);
        }
        let _ = lmtp.quit().await;
        Ok(())
    }

    /// Over IMAP, a folder's missing messages go in MULTIAPPEND batches when
    /// the server offers it (one command and one mailbox transaction per
    /// batch), otherwise one APPEND each. Inbox mail arrives unread; filed
    /// mail has been read.
    async fn append(
        &self,
        mailbox: &mut Mailbox,
        missing: &[&InitialMessage],
        progress: &Progress,
        report: &mut UserReport,
    ) -> Result<(), InitError> {
        let login = mailbox.login.clone();
        let failed = |folder: &str| {
            let login = login.clone();
            let folder = Some(folder.to_owned());
            move |error| InitError::Imap {
                login,
                folder,
                error,
            }
        };
        let Some(imap) = mailbox.imap.as_mut() else {
            return Err(failed("INBOX")(ImapError::Closed { bye: None }));
        };
        let multi = imap.capabilities().has("MULTIAPPEND");
        // Messages come folder by folder, in position order.
        for in_folder in missing.chunk_by(|a, b| a.folder == b.folder) {
            let folder = &mailbox.names[in_folder[0].folder];
            let flags: &[&str] = if folder.eq_ignore_ascii_case("INBOX") {
                &[]
            } else {
                &["\\Seen"]
            };
            let mut batch: Vec<Vec<u8>> = Vec::new();
            let mut batch_bytes = 0;
            for (i, message) in in_folder.iter().enumerate() {
                let bytes = self.render(message);
                batch_bytes += bytes.len();
                batch.push(bytes);
                let last = i + 1 == in_folder.len();
                let full =
                    batch.len() >= APPEND_BATCH_MESSAGES || batch_bytes >= APPEND_BATCH_BYTES;
                if !(last || full || !multi) {
                    continue;
                }
                let count = batch.len() as u64;
                if multi && batch.len() > 1 {
                    imap.multi_append(folder, flags, std::mem::take(&mut batch))
                        .await
                        .map_err(failed(folder))?;
                } else {
                    for bytes in batch.drain(..) {
                        imap.append(folder, flags, None, &bytes)
                            .await
                            .map_err(failed(folder))?;
                    }
                }
                report.added += count;
                report.bytes += batch_bytes as u64;
                progress.added.fetch_add(count, Ordering::Relaxed);
                batch_bytes = 0;
            }
        }
        Ok(())
    }
}

/// How many messages of this init (`X-Peakhour-Run: run_id`) `folder`
/// holds: whatever else it holds is not counted, so a mailbox with mail of
/// its own still gets all of the profile's messages. The flag says whether
/// `folder` was EXAMINEd to count them (it stays selected, read-only).
async fn own_messages(
    imap: &mut ImapConnection,
    folder: &str,
    run_id: &str,
) -> Result<(u32, bool), ImapError> {
    let status = imap.status(folder, &[StatusItem::Messages]).await?.value;
    if status.messages.unwrap_or(0) == 0 {
        return Ok((0, false));
    }
    imap.examine(folder).await?;
    let found = imap
        .search(
            &SearchKey::Header("X-Peakhour-Run".into(), run_id.into()),
            true,
        )
        .await?
        .value;
    Ok((u32::try_from(found.len()).unwrap_or(u32::MAX), true))
}

/// Dovecot saves `user+Folder@domain` into Folder (`lmtp_save_to_detail_mailbox`).
fn detail_address(address: &str, folder: &str) -> String {
    if folder.eq_ignore_ascii_case("INBOX") {
        return address.to_owned();
    }
    let (local, domain) = address.split_once('@').unwrap_or((address, ""));
    format!("{local}+{folder}@{domain}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_26_item_3_an_init_error_quoting_a_password_is_redacted() {
        let redactor = peakhour_analysis::Redactor::new(["hunter2"]);
        let quoting = InitError::Refused {
            user: "u@bench.test".into(),
            folder: "INBOX".into(),
            reply: "550 not for u@bench.test hunter2".into(),
        };
        assert_eq!(
            quoting.redacted(&redactor).to_string(),
            "u@bench.test: LMTP refused the message for INBOX: 550 not for u@bench.test <redacted>"
        );
        let plain = InitError::NoLmtp.redacted(&redactor);
        assert!(matches!(plain, InitError::NoLmtp));
    }
}
