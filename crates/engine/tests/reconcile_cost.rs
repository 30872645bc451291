//! What the reconciliation after the drain costs the server (issue 16): it
//! searches only the mailboxes that still wait for a copy, several at a
//! time, with one session and one search per mailbox when the copies are
//! in the Inbox. On tokio's paused clock against the fake servers.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use peakhour_engine::{RunResult, SEARCH_TASKS, run_with};
use peakhour_workload::Plan;
use support::{FakeMail, Seen, fake_mail, plan, settings, target};
use tokio::sync::watch;
use tokio::time::Instant;

const SECOND: Duration = Duration::from_secs(1);

/// Users who send about one message each in the run's minute, to one other
/// user, and keep no copy: some users receive nothing.
const FEW_SENDERS: &str = "[actions.send]\nper_day = 1\nsave_copy = false";

async fn run_fake(plan: &Arc<Plan>, mail: &FakeMail) -> RunResult {
    let (_stop_tx, stop) = watch::channel(false);
    let mut seen = Seen::default();
    run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings(10, 60, 10),
        stop,
        &mut seen,
    )
    .await
    .unwrap()
}

/// Commands (name, login) the IMAP server received at or after `from`,
/// counted.
fn commands_since(mail: &FakeMail, from: Instant) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for (at, login, command) in &mail.store().log {
        if *at >= from {
            *counts.entry((command.clone(), login.clone())).or_insert(0) += 1;
        }
    }
    counts
}

fn total(counts: &BTreeMap<(String, String), usize>, command: &str) -> usize {
    counts
        .iter()
        .filter(|((c, _), _)| c == command)
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test(start_paused = true)]
async fn issue_16_reconciliation_searches_only_waiting_mailboxes_in_parallel_one_search_each() {
    let plan = plan(40, FEW_SENDERS);
    let mail = fake_mail(&plan);
    // Every copy arrives when the reconciliation starts, after the users
    // have gone: each recipient's mailbox waits for its copies, the others
    // for nothing. A login then takes a second, so searches done one after
    // the other would take a second per mailbox.
    let start = Instant::now() + (10 + 60 + 10) * SECOND;
    mail.store().delivery = Box::new(move |_, _| Some(start));
    mail.store().delay = Box::new(move |command, _| {
        if command == "LOGIN" && Instant::now() >= start {
            SECOND
        } else {
            Duration::ZERO
        }
    });
    let result = run_fake(&plan, &mail).await;
    let ended = Instant::now();
    assert_eq!(result.outcome.clock.steady_end + 10 * SECOND, start);

    let outcome = &result.outcome;
    assert!(outcome.reconciled && !outcome.interrupted);
    assert!(outcome.submitted_recipients >= 20, "{outcome:?}");
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    assert!(outcome.lost.is_empty());

    let waiting: BTreeSet<String> = mail
        .store()
        .mailboxes
        .iter()
        .filter(|(_, mailbox)| mailbox.folder("INBOX").is_some_and(|f| !f.is_empty()))
        .map(|(address, _)| address.clone())
        .collect();
    assert!(
        waiting.len() > SEARCH_TASKS && waiting.len() < plan.users() as usize,
        "{} of {} mailboxes received mail: the test needs some that did not, and more than one batch",
        waiting.len(),
        plan.users()
    );

    let since = commands_since(&mail, start);
    // Only the waiting mailboxes, each in one session.
    let logged_in: BTreeSet<String> = since
        .iter()
        .filter(|((command, _), _)| command == "LOGGED IN")
        .map(|((_, login), n)| {
            assert_eq!(*n, 1, "{login} logged in {n} times");
            login.clone()
        })
        .collect();
    assert_eq!(logged_in, waiting);
    // One search per mailbox: the copies were in the Inbox, so no other
    // folder was listed, opened or searched.
    assert_eq!(total(&since, "UID SEARCH"), waiting.len());
    assert_eq!(total(&since, "EXAMINE"), waiting.len());
    assert_eq!(total(&since, "LIST"), 0);
    // In parallel: the first SEARCH_TASKS logins all started at once, and
    // the whole round took a second per batch of mailboxes, not one each.
    let logins_at_start = mail
        .command_times("LOGIN")
        .into_iter()
        .filter(|at| *at == start)
        .count();
    assert_eq!(logins_at_start, SEARCH_TASKS);
    let batches = waiting.len().div_ceil(SEARCH_TASKS) as u32;
    assert!(
        ended - start <= batches * SECOND + SECOND,
        "{:?} for {} mailboxes",
        ended - start,
        waiting.len()
    );
}

#[tokio::test(start_paused = true)]
async fn issue_16_a_copy_outside_the_inbox_is_still_found_by_searching_the_other_folders() {
    // The Inbox holds nothing of this run: the mailbox still waits after
    // its search, so its other folders are listed and searched (all but Sent).
    let plan = plan(2, FEW_SENDERS);
    let mail = fake_mail(&plan);
    let start = Instant::now() + (10 + 60 + 10) * SECOND;
    mail.store().delivery = Box::new(move |_, _| Some(start));
    mail.store().delivery_folder = "Archive".into();
    let result = run_fake(&plan, &mail).await;

    let outcome = &result.outcome;
    assert!(outcome.submitted_recipients > 0);
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    let since = commands_since(&mail, start);
    let mailboxes = total(&since, "LOGGED IN");
    assert_eq!(total(&since, "LIST"), mailboxes);
    assert!(total(&since, "UID SEARCH") >= mailboxes);
}
