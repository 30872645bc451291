//! One user's part of an init: its folders counted (and made), then the
//! messages it lacks added over IMAP APPEND (MULTIAPPEND batches when
//! offered) or LMTP.

use std::sync::atomic::Ordering;

use peakhour_imap::{ImapConnection, ImapError, SearchKey, StatusItem};
use peakhour_smtp::{Flavor, SmtpConnection};
use peakhour_workload::{InitialMessage, MessageGenerator, MessageSpec, Plan};

use super::{InitError, InitSettings, Progress, Via};
use crate::folders::{discover, listed};
use crate::population::Population;
use crate::sessions::rfc5322;
use crate::target::Target;

#[derive(Debug, Default)]
pub(super) struct UserReport {
    pub(super) wanted: u64,
    pub(super) already_there: u64,
    pub(super) added: u64,
    pub(super) bytes: u64,
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
pub(super) struct UserJob<'a> {
    pub(super) plan: &'a Plan,
    pub(super) population: &'a Population,
    pub(super) target: &'a Target,
    pub(super) settings: &'a InitSettings,
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
                let (count, selected) = own_messages(&mut imap, &name, ANY_INIT)
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
    /// Counting looks for any init's messages ([`ANY_INIT`]), not only this
    /// seed's.
    fn run_id(&self) -> String {
        format!("init-{}", self.plan.seed())
    }

    /// Brings `user`'s mailbox to the starting state.
    pub(super) async fn run(
        &self,
        progress: &Progress,
        user: u32,
    ) -> Result<UserReport, InitError> {
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

/// What every init's run id starts with. The mailboxes are the server's
/// state, not the load's randomness: an init with another seed (a second
/// `capacity --seed`, a `run --seed` on a lab filled before) must find the
/// starting state there and add nothing, or every mailbox doubles and the
/// next search measures another server (issue 25: a second seed's search
/// found "0 already there" and appended 82,000 messages). IMAP's SEARCH HEADER
/// matches a substring (RFC 3501 §6.4.4), so this prefix finds every seed's
/// messages (and `init-1` no longer also counts `init-12`'s).
const ANY_INIT: &str = "init-";

/// How many messages of an init (`X-Peakhour-Run` containing `run_id`) `folder`
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
