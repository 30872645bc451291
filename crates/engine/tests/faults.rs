//! Hostile and broken servers, and panicking tasks, on tokio's paused clock
//! (issue 11): every wait has a deadline, the run ends within its limits,
//! every scheduled action is accounted for (done, failed or
//! `not-attempted`), panics are counted, memory stays bounded.
//!
//! No assertion reads the wall clock: instants are the paused clock's, and
//! the rest are counts and outcomes.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::{LOST_LIST_CAP, RunRecord, Summary, Verdict};
use peakhour_engine::{
    Event, LOST_LIST_CAP as ENGINE_LOST_LIST_CAP, MAILBOX_SEARCH_LIMIT, NOT_ATTEMPTED, Outcome,
    PANIC, RECONCILE_LIMIT, RunResult, RunSettings, run_with,
};
use peakhour_imap::Limits;
use peakhour_workload::Plan;
use support::{FakeMail, Seen, fake_mail, plan, settings, target};
use tokio::sync::watch;
use tokio::time::Instant;

const SECOND: Duration = Duration::from_secs(1);

async fn run_fake(
    plan: &Arc<Plan>,
    mail: &FakeMail,
    settings: RunSettings,
    seen: &mut Seen,
) -> RunResult {
    // Kept, never raised: a dropped sender is not a stop.
    let (_stop_tx, stop) = watch::channel(false);
    run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings,
        stop,
        seen,
    )
    .await
    .unwrap()
}

/// Errors of `kind` recorded for `action` over the whole run.
fn errors(record: &RunRecord, action: &str, kind: &str) -> u64 {
    record
        .intervals
        .iter()
        .filter_map(|i| i.actions.get(action))
        .filter_map(|a| a.errors.get(kind))
        .sum()
}

/// The scheduled actions of every user of `plan`, due in the steady phase.
fn scheduled(plan: &Plan, result: &RunResult) -> usize {
    let clock = result.outcome.clock;
    (0..plan.users())
        .map(|user| {
            plan.schedule(user)
                .take_while(|s| clock.steady_start + s.at < clock.steady_end)
                .count()
        })
        .sum()
}

/// The outcomes of every action the run reported, in order.
fn outcomes(seen: &Seen) -> Vec<Outcome> {
    seen.events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Action { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

fn not_attempted(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| **o == Outcome::Error(NOT_ATTEMPTED.into()))
        .count()
}

/// The latest a run without deliveries to wait for may end.
fn end_limit(result: &RunResult, settings: &RunSettings) -> Instant {
    result.outcome.clock.steady_end + settings.drain + settings.action_timeout
}

#[tokio::test(start_paused = true)]
async fn issue_11_an_imap_server_that_never_greets_times_out_and_every_action_is_counted() {
    let plan = plan(1, "[actions.check_inbox]\nper_day = 120");
    let mail = fake_mail(&plan);
    mail.store().silent_imap = true;
    let settings = settings(5, 60, 5);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings.clone(), &mut seen).await;

    assert!(Instant::now() <= end_limit(&result, &settings));
    // Each logon waited for the greeting as long as the connect timeout,
    // no longer: the attempts are that far apart, plus the backoff.
    let connects = mail.store().imap_connects.clone();
    assert!(connects.len() >= 4, "{connects:?}");
    for pair in connects.windows(2).take(2) {
        assert!(
            pair[1] - pair[0] >= settings.connect_timeout,
            "{connects:?}"
        );
    }
    assert!(errors(&result.record, "logon", "imap:timeout") >= 4);
    // Nothing was done, and nothing went missing: every scheduled action is
    // an error.
    let outcomes = outcomes(&seen);
    assert_eq!(outcomes.len(), scheduled(&plan, &result));
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Error(_))));
    assert!(not_attempted(&outcomes) > 0);
}

#[tokio::test(start_paused = true)]
async fn issue_11_an_imap_server_that_stalls_in_done_ends_within_limits_and_counts_missed_actions()
{
    let plan = plan(2, "[actions.check_inbox]\nper_day = 60");
    let mail = fake_mail(&plan);
    mail.store().stall_done = true;
    let settings = settings(5, 120, 5);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings.clone(), &mut seen).await;

    assert!(Instant::now() <= end_limit(&result, &settings));
    // Every DONE timed out after the action timeout and cost the session.
    // DONE rides in one write with the action's first command (so the stall
    // is charged to that action), or goes alone when a session ends between
    // actions (a session error); either way it is counted as a timeout.
    let session_timeouts = seen
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::SessionError(k) if k == "imap:timeout"))
        .count() as u64;
    let action_timeouts = errors(&result.record, "check_inbox", "imap:timeout");
    assert!(
        session_timeouts + action_timeouts >= 2,
        "{session_timeouts} session and {action_timeouts} action timeouts"
    );
    assert_eq!(
        errors(&result.record, "session", "imap:timeout"),
        session_timeouts
    );
    // Every scheduled action is reported once: done, failed with the
    // timeout, or counted not-attempted when the user was held up past the
    // point where it could start (here: a stalled DONE that ran into the end
    // of the steady phase, with no time left to log back on).
    let outcomes = outcomes(&seen);
    assert_eq!(outcomes.len(), scheduled(&plan, &result));
    assert!(not_attempted(&outcomes) > 0, "{outcomes:?}");
    assert!(
        !outcomes.contains(&Outcome::Error("not-logged-on".into())),
        "a user held up by a stall did not try to log on: {outcomes:?}"
    );
    assert!(outcomes.contains(&Outcome::Ok));
    // The stalls are in the measured phase, as errors of the actions they
    // held up (those that ended after it are in the drain's intervals).
    let summary = Summary::compute(&result.record).unwrap();
    let check_inbox = &summary.actions["check_inbox"];
    let measured = check_inbox
        .errors_by_kind
        .get("imap:timeout")
        .copied()
        .unwrap_or(0);
    assert!(
        measured > 0 && measured <= action_timeouts,
        "{measured} of {action_timeouts}: {check_inbox:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn issue_11_endless_fetch_literals_end_the_logon_with_a_clear_error_and_bounded_memory() {
    const CAP: u64 = 256 * 1024;
    let plan = plan(1, "[actions.check_inbox]\nper_day = 60");
    let mail = fake_mail(&plan);
    // Mail in the Inbox makes the logon fetch it; the answer never ends.
    mail.deliver_now(&plan.address(0), "<old@bench.test>", None);
    {
        let mut store = mail.store();
        store.endless_fetch = true;
        store.imap_limits = Limits {
            max_collected_bytes: CAP,
            ..Limits::default()
        };
    }
    let settings = settings(0, 30, 5);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings.clone(), &mut seen).await;

    assert!(Instant::now() <= end_limit(&result, &settings));
    assert!(errors(&result.record, "logon", "imap:malformed") >= 1);
    // The client hung up at its limit: the server got no further than the
    // limit and what was in flight.
    let sent = mail.store().endless_bytes_max;
    assert!(sent > CAP && sent < CAP + 128 * 1024, "{sent}");
    let outcomes = outcomes(&seen);
    assert_eq!(outcomes.len(), scheduled(&plan, &result));
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Error(_))));
}

/// A profile of users who send to one other user every 2 s on average.
const SENDERS: &str = "[actions.send]\nper_day = 30\nsave_copy = false";

#[tokio::test(start_paused = true)]
async fn issue_11_a_reconciliation_search_that_stalls_is_bounded_and_its_copies_are_marked_unsearched()
 {
    let plan = plan(4, SENDERS);
    let mail = fake_mail(&plan);
    let settings = settings(2, 30, 5);
    let reconcile_from = Instant::now() + (2 + 30 + 5) * SECOND;
    {
        let mut store = mail.store();
        // Accepted, never delivered; and once the reconciliation starts,
        // every search hangs for an hour.
        store.delivery = Box::new(|_, _| None);
        store.delay = Box::new(move |command, _| {
            // EXAMINE: only the reconciliation's searches use it.
            if command == "EXAMINE" && Instant::now() >= reconcile_from {
                3600 * SECOND
            } else {
                Duration::ZERO
            }
        });
    }
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings.clone(), &mut seen).await;

    let outcome = &result.outcome;
    assert!(outcome.reconciled);
    // Each search gave up at its command deadline (the action timeout):
    // one round, then the drain time was over and nothing had been found.
    let reconciliation = Instant::now() - reconcile_from;
    assert!(reconciliation < MAILBOX_SEARCH_LIMIT, "{reconciliation:?}");
    assert!(outcome.submitted_recipients > 0);
    assert_eq!(outcome.lost_total, outcome.submitted_recipients);
    assert_eq!(
        outcome.lost_unsearched, outcome.lost_total,
        "said, not silent"
    );
    assert!(errors(&result.record, "reconcile", "imap:timeout") >= 1);
    let summary = Summary::compute(&result.record).unwrap();
    assert_eq!(summary.delivery.lost_unsearched, summary.delivery.lost);
    assert!(summary.delivery.reconciled);
}

#[tokio::test(start_paused = true)]
async fn issue_11_the_ten_minute_reconciliation_limit_holds_inside_a_round() {
    // Enough waiting mailboxes that one round of searches, each taking its
    // whole per-mailbox limit, would last far past the ten minutes.
    let users = 200;
    let plan = plan(users, SENDERS);
    let mail = fake_mail(&plan);
    let mut settings = settings(2, 10, 5);
    settings.action_timeout = 3600 * SECOND; // commands may take an hour...
    let reconcile_from = Instant::now() + (2 + 10 + 5) * SECOND;
    {
        let mut store = mail.store();
        store.delivery = Box::new(|_, _| None);
        store.delay = Box::new(move |command, _| {
            // EXAMINE: only the reconciliation's searches use it.
            if command == "EXAMINE" && Instant::now() >= reconcile_from {
                3600 * SECOND // ... and each search takes that long
            } else {
                Duration::ZERO
            }
        });
    }
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings, &mut seen).await;

    let per_task = users.div_ceil(16);
    assert!(MAILBOX_SEARCH_LIMIT * per_task > RECONCILE_LIMIT);
    let took = Instant::now() - reconcile_from;
    assert!(took >= RECONCILE_LIMIT, "{took:?}");
    assert!(took <= RECONCILE_LIMIT + SECOND, "{took:?}");
    assert!(result.outcome.reconciled);
    assert_eq!(result.outcome.lost_unsearched, result.outcome.lost_total);
}

#[tokio::test(start_paused = true)]
async fn issue_11_a_server_that_accepts_and_never_delivers_keeps_the_lost_list_capped() {
    let plan = plan(10, "[actions.send]\nper_day = 600\nsave_copy = false");
    let mail = fake_mail(&plan);
    mail.store().delivery = Box::new(|_, _| None);
    let settings = settings(1, 30, 2);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings, &mut seen).await;

    let outcome = &result.outcome;
    assert!(
        outcome.lost_total > 2 * LOST_LIST_CAP as u64,
        "{}",
        outcome.lost_total
    );
    assert_eq!(ENGINE_LOST_LIST_CAP, LOST_LIST_CAP);
    // Every copy is lost and counted; only the first thousand are named,
    // wherever the list is copied.
    assert_eq!(outcome.lost_total, outcome.submitted_recipients);
    assert_eq!(outcome.lost.len(), LOST_LIST_CAP);
    let delivery = &result.record.delivery;
    assert_eq!(delivery.lost.len(), LOST_LIST_CAP);
    assert_eq!(delivery.lost_total(), outcome.lost_total);
    let summary = Summary::compute(&result.record).unwrap();
    assert_eq!(summary.delivery.lost_recipients.len(), LOST_LIST_CAP);
    assert_eq!(summary.delivery.lost, outcome.lost_total);
    assert_eq!(
        summary.delivery.lost_not_listed,
        outcome.lost_total - LOST_LIST_CAP as u64
    );
    assert!(summary.delivery.reconciled, "{:?}", summary.delivery);
    assert_eq!(summary.verdict, Verdict::Fail);
    let json = serde_json::to_string(&summary).unwrap();
    assert!(
        json.len() < 200_000,
        "summary.json stays small: {}",
        json.len()
    );
}

#[tokio::test(start_paused = true)]
async fn issue_11_refused_recipients_balance_the_delivery_books() {
    // Every other RCPT is refused by the server (a 550), the rest are
    // delivered: submitted = delivered + failed + lost, refused ones once.
    let plan = plan(3, "[actions.send]\nper_day = 60\nsave_copy = false");
    let mail = fake_mail(&plan);
    mail.store().refuse_every_other_rcpt = true;
    let settings = settings(1, 20, 5);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings, &mut seen).await;

    let d = &result.record.delivery;
    assert!(d.failed_recipients > 0, "{d:?}");
    assert!(d.delivered_recipients > 0, "{d:?}");
    assert_eq!(
        d.submitted_recipients,
        d.delivered_recipients + d.failed_recipients + d.lost_total(),
        "{d:?}"
    );
    let summary = Summary::compute(&result.record).unwrap();
    assert!(summary.delivery.reconciled);
    assert_eq!(summary.delivery.lost, 0);
}

#[tokio::test(start_paused = true)]
async fn issue_11_a_panicking_user_is_counted_its_remaining_actions_are_not_attempted_and_the_verdict_fails()
 {
    let plan = plan(3, "[actions.send]\nper_day = 30\nsave_copy = false");
    let mail = fake_mail(&plan);
    let settings = settings(2, 60, 5);
    let panic_at = Instant::now() + 20 * SECOND;
    mail.store().panic_smtp_connect_at = Some(panic_at);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings, &mut seen).await;

    assert_eq!(result.outcome.panics, 1);
    let panicked: Vec<Instant> = seen
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Panicked { role: "user" }))
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(panicked.len(), 1);
    assert!(panicked[0] >= panic_at);
    // The panicked user's remaining actions are not-attempted errors, each
    // reported when it fell due, in the measured phase; none went missing.
    let clock = result.outcome.clock;
    let owed: Vec<(Instant, Instant)> = seen
        .events
        .iter()
        .filter_map(|(at, e)| match e {
            Event::Action {
                intended, outcome, ..
            } if *outcome == Outcome::Error(NOT_ATTEMPTED.into()) => Some((*at, *intended)),
            _ => None,
        })
        .collect();
    assert!(!owed.is_empty());
    for (reported, intended) in &owed {
        assert!(*intended + SECOND > panic_at && *intended < clock.steady_end);
        assert!(*reported >= *intended && *reported - *intended < SECOND);
    }
    assert_eq!(outcomes(&seen).len(), scheduled(&plan, &result));
    assert_eq!(errors(&result.record, "user", PANIC), 1);
    let summary = Summary::compute(&result.record).unwrap();
    assert_eq!(summary.panics, 1);
    assert_eq!(summary.verdict, Verdict::Fail);
    assert!(
        summary.qos.failures[0].reason.contains("panicked"),
        "{:?}",
        summary.qos.failures
    );
}

#[tokio::test(start_paused = true)]
async fn issue_11_a_panicking_reconciliation_search_is_not_found_nothing() {
    let plan = plan(3, SENDERS);
    let mail = fake_mail(&plan);
    let settings = settings(2, 20, 5);
    let reconcile_from = Instant::now() + (2 + 20 + 5) * SECOND;
    {
        let mut store = mail.store();
        store.delivery = Box::new(|_, _| None);
        store.panic_imap_connects_from = Some(reconcile_from);
    }
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings, &mut seen).await;

    // Every search task of every round panicked: each is counted, and the
    // copies they were to look for are reported as never searched for.
    let outcome = &result.outcome;
    assert!(outcome.panics >= 1);
    assert!(outcome.lost_total > 0);
    assert_eq!(outcome.lost_unsearched, outcome.lost_total, "{outcome:?}");
    assert_eq!(errors(&result.record, "reconcile", PANIC), outcome.panics);
    let summary = Summary::compute(&result.record).unwrap();
    assert_eq!(summary.panics, outcome.panics);
    assert_eq!(summary.delivery.lost_unsearched, summary.delivery.lost);
    assert_eq!(summary.verdict, Verdict::Fail);
}
