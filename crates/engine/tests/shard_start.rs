//! A shard's synchronized start (issue 17, seed 001's PALM): cancelled while
//! it waits for `--start-at`, it ends interrupted and empty without a single
//! connection; started after `--start-at` has passed, it records by how much.
//!
//! `--start-at` is wall-clock time, so these runs set it far in the future
//! or in the past by a known margin, and assert only that bound (never an
//! exact time); the rest runs on tokio's paused clock.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_analysis::Summary;
use peakhour_engine::{Both, Event, RunSettings, Shard, StartNotice, run_with};
use support::{Seen, fake_mail, plan, settings, target};
use tokio::sync::watch;

const ACTIONS: &str = "[actions.check_inbox]\nper_day = 240\n[actions.send]\nper_day = 60";

/// Shard 1 of 2, starting at `start_at`.
fn shard_settings(start_at: SystemTime) -> RunSettings {
    RunSettings {
        shard: Shard::new(1, 2).unwrap(),
        start_at: Some(start_at),
        ..settings(2, 20, 5)
    }
}

#[tokio::test(start_paused = true)]
async fn issue_17_a_shard_cancelled_before_its_start_is_interrupted_empty_and_never_connected() {
    let plan = plan(4, ACTIONS);
    let mail = fake_mail(&plan);
    // An hour ahead: only the stop can end the wait.
    let settings = shard_settings(SystemTime::now() + Duration::from_secs(3_600));
    let mut said = Vec::new();
    let notice = StartNotice::new(|text: &str| said.push(text.to_owned()));
    let (stop_tx, stop) = watch::channel(false);
    stop_tx.send(true).unwrap();
    let mut seen = Seen::default();
    let result = run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings,
        stop,
        &mut Both(&mut { notice }, &mut seen),
    )
    .await
    .unwrap();

    assert!(result.outcome.interrupted);
    assert!(!result.outcome.reconciled);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("waiting "), "{said:?}");
    let store = mail.store();
    assert!(store.imap_connects.is_empty(), "{:?}", store.imap_connects);
    assert_eq!(store.accepted, 0);
    assert!(store.log.is_empty(), "commands were sent: {:?}", store.log);
    drop(store);
    assert!(
        !seen.events.iter().any(|(_, e)| matches!(
            e,
            Event::Action { .. } | Event::LoggedOn(_) | Event::SessionError(_)
        )),
        "{:?}",
        seen.events
    );
    let record = &result.record;
    assert!(record.meta.interrupted);
    let [mark] = record.meta.shards.as_slice() else {
        panic!("one shard mark: {:?}", record.meta.shards);
    };
    assert!(mark.interrupted && mark.start_at.is_some() && mark.started_late_ms.is_none());
    assert_eq!(record.delivery.submitted_recipients, 0);
    let summary = Summary::compute(record).unwrap();
    assert!(summary.interrupted);
    let actions: u64 = summary.actions.values().map(|a| a.count + a.errors).sum();
    assert_eq!(actions, 0, "{:?}", summary.actions);
}

#[tokio::test(start_paused = true)]
async fn issue_17_a_shard_started_after_its_start_records_how_late_at_least() {
    const MARGIN: Duration = Duration::from_secs(30);
    let plan = plan(2, ACTIONS);
    let mail = fake_mail(&plan);
    let settings = shard_settings(SystemTime::now() - MARGIN);
    let mut said = Vec::new();
    let notice = StartNotice::new(|text: &str| said.push(text.to_owned()));
    let (_stop_tx, stop) = watch::channel(false);
    let result = run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings,
        stop,
        &mut Both(&mut { notice }, &mut Seen::default()),
    )
    .await
    .unwrap();

    assert!(!result.outcome.interrupted);
    let mark = &result.record.meta.shards[0];
    let late = mark.started_late_ms.unwrap();
    assert!(late >= MARGIN.as_millis() as u64, "{late} ms");
    // Late, but whole: it ran its users.
    assert!(!mark.interrupted);
    assert!(!mail.store().imap_connects.is_empty());
    // It said so, at once, and not that it waited.
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("warning: shard 1/2 began its logon phase "),
        "{said:?}"
    );
}
