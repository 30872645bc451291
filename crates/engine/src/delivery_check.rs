//! The delivery checks (`run --check-state`, issue 27 item 4): after the
//! reconciliation, every submission the ledger kept (its header section and
//! size, [`DeliveryTracker::submitted_content`]) is looked for in each of its
//! recipients' mailboxes, and each copy found is compared with it
//! (peakhour-state-check's `check_delivery`): it appears once, with the
//! submitted Message-ID, Subject and tracking headers, and the submitted
//! size plus only the trace fields a mail system adds.
//!
//! The search is the reconciliation's (a header search for the run's
//! `X-Peakhour-Run` in every folder but Sent), fetching what the checks
//! need: `UID FLAGS RFC822.SIZE BODY.PEEK[HEADER]`. It runs after the
//! drain, when no user changes a mailbox any more, so a copy a user moved
//! is found once in its new folder, and one a user deleted is in Trash. A
//! copy marked `\Deleted` (a move by COPY and EXPUNGE cut short) is not
//! counted. A copy never found is not checked here: the reconciliation
//! reports it lost. Mailboxes are searched by [`SEARCH_TASKS`] tasks, each
//! mailbox within [`MAILBOX_SEARCH_LIMIT`]; one that cannot be searched is
//! not checked, and counted as a reconciliation error of kind
//! `imap:delivery-check` (errors.csv).

use std::sync::{Arc, Mutex, PoisonError};

use peakhour_imap::{BodySection, FetchItem, ImapConnection, ImapError};
use peakhour_state_check::{DeliveryOptions, FoundCopy, SubmittedMessage, check_delivery_as};
use peakhour_workload::ActionKind;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::connector::{Connector, open_imap};
use crate::delivery::bare_message_id;
use crate::folders::discover;
use crate::reconcile::{MAILBOX_SEARCH_LIMIT, Reconciliation, SEARCH_TASKS};
use crate::state_checks::StateCheckHub;
use crate::target::{Target, imap_deadline};

/// One recipient's mailbox and the submissions to look for in it.
struct Mailbox {
    user: u32,
    address: String,
    submitted: Vec<(String, SubmittedMessage)>,
}

/// What one task needs, shared by every task.
struct Shared<C> {
    connector: Arc<C>,
    target: Arc<Target>,
    hub: Arc<StateCheckHub>,
    run_id: String,
    sent_folder: String,
    timeout: std::time::Duration,
    command_timeout: std::time::Duration,
    queue: Mutex<Vec<Mailbox>>,
    /// How the mailboxes were used: by one session each, or shared.
    options: DeliveryOptions,
}

/// Checks every kept submission's copies in its recipients' mailboxes;
/// returns the mailboxes that could not be searched. Ends early when
/// `stop` is raised.
pub(crate) async fn check_deliveries<C: Connector>(
    parts: &Reconciliation<'_, C>,
    hub: &Arc<StateCheckHub>,
    stop: &mut watch::Receiver<bool>,
) -> u64 {
    // POP3 users download and delete their mail: nothing to look for.
    if parts.plan.actions().contains(&ActionKind::DownloadMail) {
        return 0;
    }
    let (by_user, _) = parts.delivery.content_checks();
    let mailboxes: Vec<Mailbox> = by_user
        .into_iter()
        .filter_map(|(user, submitted)| {
            let address = parts.population.address(user).ok()?;
            Some(Mailbox {
                user,
                address,
                submitted,
            })
        })
        .collect();
    let tasks = SEARCH_TASKS.min(mailboxes.len());
    let shared = Arc::new(Shared {
        connector: parts.connector.clone(),
        target: parts.target.clone(),
        hub: hub.clone(),
        run_id: parts.settings.run_id.clone(),
        sent_folder: parts.plan.params().sent_folder.clone(),
        timeout: parts.settings.connect_timeout,
        command_timeout: parts.settings.action_timeout,
        queue: Mutex::new(mailboxes),
        // Two sessions of a shared account moving one message at once may
        // each leave a copy in its target: only Inbox copies are duplicates.
        options: DeliveryOptions {
            sole_mover: parts.plan.sessions_per_account() == 1,
        },
    });
    let mut searches = JoinSet::new();
    for _ in 0..tasks {
        searches.spawn(search_task(shared.clone()));
    }
    let mut unsearched = 0;
    loop {
        tokio::select! {
            joined = searches.join_next() => match joined {
                Some(Ok(failed)) => unsearched += failed,
                Some(Err(_)) => unsearched += 1,
                None => return unsearched,
            },
            _ = stop.wait_for(|stopped| *stopped) => {
                searches.abort_all();
                return unsearched;
            }
        }
    }
}

/// One task: the next mailbox until none is left; the mailboxes it could
/// not search.
async fn search_task<C: Connector>(shared: Arc<Shared<C>>) -> u64 {
    let mut failed = 0;
    loop {
        let next = shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let Some(mailbox) = next else {
            return failed;
        };
        let search = copies_in(&shared, &mailbox);
        match imap_deadline(MAILBOX_SEARCH_LIMIT, "SEARCH", search).await {
            Ok(found) => check_mailbox(&shared.hub, &mailbox, &found, shared.options),
            Err(_) => failed += 1,
        }
    }
}

/// Compares each submission to `mailbox`'s copies of it.
fn check_mailbox(
    hub: &StateCheckHub,
    mailbox: &Mailbox,
    found: &[(String, FoundCopy)],
    options: DeliveryOptions,
) {
    for (id, submitted) in &mailbox.submitted {
        let copies: Vec<FoundCopy> = found
            .iter()
            .filter(|(copy_id, _)| copy_id == id)
            .map(|(_, copy)| copy.clone())
            .collect();
        let outcome = check_delivery_as(&mailbox.address, submitted, &copies, options);
        hub.add_checked(&outcome.checks, outcome.violations);
    }
}

/// Every copy of this run's messages in the mailbox, every folder but Sent,
/// with its bare Message-ID.
async fn copies_in<C: Connector>(
    shared: &Shared<C>,
    mailbox: &Mailbox,
) -> Result<Vec<(String, FoundCopy)>, ImapError> {
    let target = &shared.target;
    let mut imap = open_imap(
        &*shared.connector,
        target,
        shared.timeout,
        shared.command_timeout,
    )
    .await?;
    let (login, password) = target.login(mailbox.user, &mailbox.address);
    imap.login(login, password).await?;
    let prefix = target.options.folder_prefix.as_deref();
    let (server, listing) = discover(&mut imap, prefix, |_, _| {}).await?;
    let sent = server
        .sent
        .clone()
        .unwrap_or_else(|| server.name(&shared.sent_folder));
    let mut found = Vec::new();
    for entry in listing {
        let no_select = entry
            .attributes
            .iter()
            .any(|a| a.eq_ignore_ascii_case("\\Noselect"));
        if no_select || entry.name.eq_ignore_ascii_case(&sent) {
            continue;
        }
        copies_in_folder(&mut imap, &shared.run_id, &entry.name, &mut found).await?;
    }
    let _ = imap.logout().await;
    Ok(found)
}

async fn copies_in_folder<S>(
    imap: &mut ImapConnection<S>,
    run_id: &str,
    folder: &str,
    found: &mut Vec<(String, FoundCopy)>,
) -> Result<(), ImapError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let Some(set) = crate::reconcile::run_messages_in(imap, folder, run_id).await? else {
        return Ok(());
    };
    let items = [
        FetchItem::Uid,
        FetchItem::Flags,
        FetchItem::Size,
        FetchItem::Body {
            section: BodySection::Header,
            peek: true,
        },
    ];
    for message in imap.fetch(&set, &items, true).await?.value {
        let deleted = (message.flags.iter().flatten()).any(|f| f.eq_ignore_ascii_case("\\Deleted"));
        let (Some(size), Some(header)) = (message.size, message.section(&BodySection::Header))
        else {
            continue;
        };
        let Some(id) = SubmittedMessage::from_header(header, 0).message_id() else {
            continue;
        };
        if deleted {
            continue;
        }
        found.push((
            bare_message_id(&id).to_owned(),
            FoundCopy {
                folder: folder.to_owned(),
                uid: message.uid,
                size: u64::from(size),
                header: header.to_vec(),
            },
        ));
    }
    Ok(())
}
