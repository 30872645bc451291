//! Whole runs against fake servers over in-memory streams, on tokio's paused
//! clock: every instant below is exact, and a ten-minute reconciliation
//! takes milliseconds.
//!
//! The three regression tests of the last round's reconciliation fixes are
//! named after what they fix (commits 36c7a6d, 2aae581 and ee6acaf).
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::{Phase as RecordedPhase, RunRecord};
use peakhour_engine::{
    Event, LATE_AFTER, NOT_ATTEMPTED, Outcome, RECONCILE_LIMIT, RunResult, RunSettings, STOP_GRACE,
    run_with,
};
use peakhour_workload::Plan;
use support::{FakeMail, Seen, fake_mail, plan, settings, target};
use tokio::sync::watch;
use tokio::time::Instant;

const SECOND: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// Runs `plan` against `mail`; `stop_at`, if given, raises the stop signal
/// then (as SIGINT does in the binary).
async fn run_fake(
    plan: &Arc<Plan>,
    mail: &FakeMail,
    settings: RunSettings,
    stop_at: Option<Instant>,
    seen: &mut Seen,
) -> RunResult {
    let (stop_tx, stop) = watch::channel(false);
    let stopper = tokio::spawn(async move {
        if let Some(at) = stop_at {
            tokio::time::sleep_until(at).await;
            stop_tx.send(true).unwrap();
        }
        // Keep the sender: a dropped one is not a stop.
        std::future::pending::<()>().await;
    });
    let result = run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings,
        stop,
        seen,
    )
    .await
    .unwrap();
    stopper.abort();
    result
}

fn sum_over_intervals(
    record: &RunRecord,
    f: impl Fn(&peakhour_analysis::IntervalRecord) -> u64,
) -> u64 {
    record.intervals.iter().map(f).sum()
}

fn logon_errors(record: &RunRecord) -> u64 {
    sum_over_intervals(record, |i| {
        i.actions.get("logon").map_or(0, |a| a.error_count())
    })
}

fn late_starts(record: &RunRecord) -> u64 {
    sum_over_intervals(record, |i| i.actions.values().map(|a| a.late_starts).sum())
}

/// Profile of users who only send, one message every 3 s on average, to
/// the other user, and keep no copy.
const SENDERS: &str = "[actions.send]\nper_day = 20\nsave_copy = false";

#[tokio::test(start_paused = true)]
async fn phases_start_and_end_where_the_settings_put_them() {
    let plan = plan(4, "[actions.check_inbox]\nper_day = 240");
    let mail = fake_mail(&plan);
    let mut seen = Seen::default();
    let t0 = Instant::now();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    let clock = result.outcome.clock;
    assert_eq!(clock.t0, t0);
    assert_eq!(clock.steady_start, t0 + 10 * SECOND);
    assert_eq!(clock.steady_end, t0 + 70 * SECOND);
    // Logons are staggered evenly over the ramp-up; everyone logs off when
    // the steady phase ends (no delivery is outstanding), and the run is
    // over then.
    let stagger = Duration::from_millis(2500);
    assert_eq!(
        seen.logged_on(1),
        (0..4).map(|i| t0 + stagger * i).collect::<Vec<_>>()
    );
    assert_eq!(seen.logged_on(-1), vec![clock.steady_end; 4]);
    assert_eq!(Instant::now(), clock.steady_end);

    // Actions are scheduled only inside the steady phase.
    let mut actions = 0;
    for (_, event) in &seen.events {
        if let Event::Action {
            intended, outcome, ..
        } = event
        {
            actions += 1;
            assert!((clock.steady_start..clock.steady_end).contains(intended));
            assert_eq!(*outcome, Outcome::Ok);
        }
    }
    assert!(actions > 100, "{actions} actions");

    // The record's intervals follow the phases: the logon phase, six
    // steady intervals from 10 s to 70 s, then the drain.
    let record = &result.record;
    let phases: Vec<(RecordedPhase, u64, u64)> = record
        .intervals
        .iter()
        .map(|i| (i.phase, i.start.as_secs(), i.length.as_secs()))
        .collect();
    let mut expected = vec![(RecordedPhase::Logon, 0, 10)];
    expected.extend((1..7).map(|i| (RecordedPhase::Steady, i * 10, 10)));
    assert_eq!(phases[..7], expected[..], "{phases:?}");
    assert!(phases[7..].iter().all(|p| p.0 == RecordedPhase::Drain));
    assert!(!record.intervals[0].actions.contains_key("check_inbox"));
    for steady in record.steady_intervals() {
        assert_eq!(steady.users_logged_on, 4);
        assert!(
            !steady.actions["check_inbox"]
                .latency
                .decode()
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(record.meta.phases.steady, 60 * SECOND);
    assert!(!record.meta.interrupted);
}

#[tokio::test(start_paused = true)]
async fn a_refused_logon_is_retried_with_doubling_backoff_up_to_eight_seconds() {
    let plan = plan(1, "[actions.check_inbox]\nper_day = 60");
    let mail = fake_mail(&plan);
    mail.store().refuse_imap_connects = 6;
    let mut seen = Seen::default();
    let t0 = Instant::now();
    let result = run_fake(&plan, &mail, settings(0, 60, 5), None, &mut seen).await;

    // 0.5 s after the first failure, then 1, 2, 4, 8 and 8 s.
    let attempts: Vec<Duration> = mail.store().imap_connects[..7]
        .iter()
        .map(|at| *at - t0)
        .collect();
    let expected: Vec<Duration> = [0, 500, 1500, 3500, 7500, 15_500, 23_500]
        .into_iter()
        .map(Duration::from_millis)
        .collect();
    assert_eq!(attempts, expected);
    assert_eq!(seen.logged_on(1), vec![t0 + expected[6]]);
    assert_eq!(logon_errors(&result.record), 6);
}

#[tokio::test(start_paused = true)]
async fn issue_26_item_15_a_successful_logon_is_counted_as_an_attempt_beside_the_failed_ones() {
    // Three refused connects in the steady phase, then the logon works: the
    // summary says 3 of 4 attempts failed, not "3 of 3".
    let plan = plan(1, "[actions.check_inbox]\nper_day = 60");
    let mail = fake_mail(&plan);
    mail.store().refuse_imap_connects = 3;
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(0, 60, 5), None, &mut seen).await;

    assert_eq!(seen.logged_on(1).len(), 1);
    let summary = peakhour_analysis::Summary::compute(&result.record).unwrap();
    let logon = &summary.actions["logon"];
    assert_eq!((logon.count, logon.errors), (1, 3), "{logon:?}");
    assert!(logon.p95_ms.is_some(), "{logon:?}");
    let said: Vec<&str> = summary
        .qos
        .failures
        .iter()
        .map(|f| f.reason.as_str())
        .collect();
    assert!(
        said.iter().any(|r| r.starts_with("3 of 4 attempts failed")),
        "{said:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_action_that_starts_late_counts_its_lateness_and_is_counted_late() {
    // Every check (a NOOP on the open, empty Inbox) and SELECT takes 3 s, so a check due
    // while the previous one runs starts late: its latency runs from when it was due.
    let slow = 3 * SECOND;
    let plan = plan(1, "[actions.check_inbox]\nper_day = 30");
    let mail = fake_mail(&plan);
    mail.store().delay = Box::new(move |command, _| {
        if command == "SELECT" || command == "NOOP" {
            slow
        } else {
            Duration::ZERO
        }
    });
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 5), None, &mut seen).await;
    let clock = result.outcome.clock;

    // What must happen, from the user's schedule: each check starts when it
    // is due (the timer ends on the next millisecond) or when the previous
    // one ends, whichever is later. One that could not start within the
    // action timeout of when it was due is not attempted; the one still
    // running when the drain is over is abandoned, and it and every check
    // due after it are not attempted either.
    let settings = support::settings(10, 60, 5);
    let abandoned_at = clock.steady_end + settings.drain + settings.action_timeout;
    let mut expected: Vec<(Instant, Option<(Instant, Instant)>)> = Vec::new();
    let mut previous_end = clock.steady_start;
    let mut alive = true;
    for scheduled in plan.schedule(0) {
        let intended = clock.steady_start + scheduled.at;
        if intended >= clock.steady_end {
            break;
        }
        let started = intended.max(previous_end);
        if !alive || started - intended > settings.action_timeout {
            expected.push((intended, None));
            continue;
        }
        if started + slow > abandoned_at {
            alive = false;
            expected.push((intended, None));
            continue;
        }
        previous_end = started + slow;
        expected.push((intended, Some((started, previous_end))));
    }
    let actual: Vec<(Instant, Instant, Instant, Outcome)> = seen
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Action {
                intended,
                started,
                finished,
                outcome,
                ..
            } => Some((*intended, *started, *finished, outcome.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(actual.len(), expected.len());
    let not_attempted = Outcome::Error(NOT_ATTEMPTED.into());
    for (actual, expected) in actual.iter().zip(&expected) {
        assert_eq!(actual.0, expected.0, "intended");
        let Some((started, _)) = expected.1 else {
            assert_eq!(actual.3, not_attempted);
            continue;
        };
        assert_eq!(actual.3, Outcome::Ok);
        assert!(
            actual.1 >= started && actual.1 - started <= MS,
            "started {:?} after the model",
            actual.1 - started
        );
        assert_eq!(
            actual.2 - actual.1,
            slow,
            "the check's delay is the action's time"
        );
    }
    let skipped = expected.iter().filter(|e| e.1.is_none()).count();
    assert!(
        skipped >= 2,
        "the backlog should outgrow the timeout: {skipped}"
    );
    let actual: Vec<(Instant, Instant, Instant)> = actual
        .into_iter()
        .filter(|a| a.3 == Outcome::Ok)
        .map(|(intended, started, finished, _)| (intended, started, finished))
        .collect();

    let late = actual
        .iter()
        .filter(|(intended, started, _)| *started - *intended > LATE_AFTER)
        .count() as u64;
    assert!(
        late >= 3,
        "the schedule should make some checks late: {late}"
    );
    assert_eq!(late_starts(&result.record), late);
    // The longest latency is from the intended start, lateness included.
    let longest = actual
        .iter()
        .map(|(intended, _, finished)| *finished - *intended)
        .max()
        .unwrap();
    assert!(longest > slow + SECOND, "{longest:?}");
    let recorded_max: u64 = result
        .record
        .intervals
        .iter()
        .filter_map(|i| i.actions.get("check_inbox"))
        .filter_map(|a| a.latency.decode().unwrap().max_ms())
        .fold(0.0_f64, f64::max) as u64;
    let longest_ms = longest.as_millis() as u64;
    assert!(
        recorded_max.abs_diff(longest_ms) <= longest_ms / 500,
        "recorded {recorded_max} ms, expected {longest_ms} ms"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_the_steady_phase_ends_the_run_within_two_seconds() {
    let plan = plan(2, "[actions.check_inbox]\nper_day = 240");
    let mail = fake_mail(&plan);
    let t0 = Instant::now();
    let steady_start = t0 + 10 * SECOND;
    // The server stops answering SELECT once the load starts: actions hang.
    mail.store().delay = Box::new(move |command, _| {
        if command == "SELECT" && Instant::now() >= steady_start {
            Duration::from_secs(3600)
        } else {
            Duration::ZERO
        }
    });
    let stop_at = steady_start + 20 * SECOND;
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), Some(stop_at), &mut seen).await;

    let ended = Instant::now();
    assert!(
        ended >= stop_at && ended - stop_at <= STOP_GRACE,
        "{:?}",
        ended - stop_at
    );
    assert!(result.outcome.interrupted);
    assert!(!result.outcome.reconciled);
    assert!(result.record.meta.interrupted);
}

/// Deliveries are held by the fake mail queue until `release`, then go out
/// one every `every`.
fn queue_from(release: Instant, every: Duration) -> support::DeliveryPlan {
    Box::new(move |n, _| Some(release + every * n as u32))
}

/// Where the reconciliation starts: at the end of the drain, since users
/// wait through it for copies still due.
fn reconciliation_start(result: &RunResult, drain: Duration) -> Instant {
    result.outcome.clock.steady_end + drain
}

#[tokio::test(start_paused = true)]
async fn copies_still_arriving_past_the_drain_deadline_are_not_counted_lost() {
    // 36c7a6d: reconciliation stopped at the drain deadline while Postfix's
    // queue was still emptying, and called 2,460 delivered copies lost.
    let plan = plan(2, SENDERS);
    let mail = fake_mail(&plan);
    let drain = 10 * SECOND;
    // The queue holds everything until 5 s into the reconciliation, then
    // delivers a copy every 250 ms: the last ones arrive well past its
    // 10 s deadline.
    let t0 = Instant::now();
    let release = t0 + (10 + 60 + 10 + 5) * SECOND;
    mail.store().delivery = queue_from(release, 250 * MS);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    let start = reconciliation_start(&result, drain);
    // EXAMINE is the reconciliation's (users SELECT).
    assert_eq!(mail.command_times("EXAMINE")[0], start);
    let searches = mail.command_times("UID SEARCH");
    let outcome = &result.outcome;
    let accepted = mail.store().accepted;
    assert!(accepted >= 30, "{accepted} messages");
    let last_arrival = release + 250 * MS * (accepted as u32 - 1);
    assert!(last_arrival > start + drain + 2 * SECOND);
    assert!(*searches.last().unwrap() >= last_arrival);
    assert!(outcome.reconciled && !outcome.interrupted);
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    assert!(outcome.lost.is_empty(), "{:?}", outcome.lost);
    assert!(result.record.delivery.lost.is_empty());
    assert_eq!(
        result.record.delivery.delivered_recipients,
        outcome.submitted_recipients
    );
}

#[tokio::test(start_paused = true)]
async fn reconciliation_stops_at_the_drain_deadline_once_a_round_finds_nothing() {
    let plan = plan(2, SENDERS);
    let mail = fake_mail(&plan);
    mail.store().delivery = Box::new(|_, _| None); // nothing is ever delivered
    let drain = 10 * SECOND;
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    let start = reconciliation_start(&result, drain);
    let ended = Instant::now();
    // Rounds every half second until the deadline, then one more check.
    assert!(
        ended >= start + drain && ended <= start + drain + SECOND,
        "{:?}",
        ended - start
    );
    let outcome = &result.outcome;
    assert!(outcome.reconciled && !outcome.interrupted);
    assert_eq!(outcome.delivered_recipients, 0);
    assert_eq!(outcome.lost.len() as u64, outcome.submitted_recipients);
    assert_eq!(
        result.record.delivery.lost.len() as u64,
        outcome.submitted_recipients
    );
}

#[tokio::test(start_paused = true)]
async fn reconciliation_gives_up_after_ten_minutes_even_while_copies_arrive() {
    let plan = plan(2, "[actions.send]\nper_day = 40\nsave_copy = false");
    let mail = fake_mail(&plan);
    let drain = 10 * SECOND;
    let t0 = Instant::now();
    let start = t0 + (10 + 60 + 10) * SECOND;
    // A slow server (20 s a login once the load is over) whose queue
    // delivers a copy every 15 s from the start of the reconciliation:
    // every round finds something.
    mail.store().delivery = queue_from(start, 15 * SECOND);
    mail.store().delay = Box::new(move |command, _| {
        if command == "LOGIN" && Instant::now() >= start {
            20 * SECOND
        } else {
            Duration::ZERO
        }
    });
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    assert_eq!(reconciliation_start(&result, drain), start);
    let ended = Instant::now();
    // A round is not cut short: the one running at the limit finishes.
    assert!(
        ended >= start + RECONCILE_LIMIT && ended <= start + RECONCILE_LIMIT + 21 * SECOND,
        "{:?}",
        ended - start
    );
    let outcome = &result.outcome;
    assert!(outcome.reconciled && !outcome.interrupted);
    assert!(outcome.delivered_recipients >= 30, "{outcome:?}");
    assert!(
        !outcome.lost.is_empty(),
        "copies due after the limit are lost"
    );
}

#[tokio::test(start_paused = true)]
async fn sigint_during_reconciliation_ends_it_and_marks_the_run_interrupted() {
    // 2aae581: a stop during the reconciliation (minutes past saturation)
    // was not honoured until it finished.
    let plan = plan(2, SENDERS);
    let mail = fake_mail(&plan);
    mail.store().delivery = Box::new(|_, _| None);
    // The reconciliation's EXAMINE hangs: only the stop can end it.
    mail.store().delay = Box::new(|command, _| {
        if command == "EXAMINE" {
            Duration::from_secs(3600)
        } else {
            Duration::ZERO
        }
    });
    let t0 = Instant::now();
    let stop_at = t0 + (10 + 60 + 10 + 3) * SECOND;
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), Some(stop_at), &mut seen).await;

    assert!(!mail.command_times("EXAMINE").is_empty());
    let ended = Instant::now();
    assert!(
        ended >= stop_at && ended - stop_at <= STOP_GRACE,
        "{:?}",
        ended - stop_at
    );
    assert!(result.outcome.interrupted);
    assert!(!result.outcome.reconciled);
    assert!(result.record.meta.interrupted);
}

#[tokio::test(start_paused = true)]
async fn arrivals_listed_at_logon_count_as_delivered() {
    // ee6acaf: mail that arrived while a user was offline joined its known
    // Inbox at logon without being noticed, and could be moved away and
    // called lost.
    let plan = plan(2, SENDERS);
    let mail = fake_mail(&plan);
    let t0 = Instant::now();
    let late_user = plan.address(1);
    mail.store()
        .refuse_login_until
        .insert(late_user.clone(), t0 + 40 * SECOND);
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    let logged_in = mail
        .store()
        .log
        .iter()
        .find(|(_, login, command)| *login == late_user && command == "LOGGED IN")
        .map(|(at, _, _)| *at)
        .unwrap();
    assert!(logged_in >= t0 + 40 * SECOND);
    // Copies sent to the late user before it logged on were noticed at
    // logon, in the listing of its Inbox.
    assert!(seen.delivered().contains(&logged_in));
    let outcome = &result.outcome;
    assert!(outcome.submitted_recipients > 0);
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    assert!(outcome.lost.is_empty());
    assert!(
        mail.command_times("UID SEARCH").is_empty(),
        "every copy was noticed online; nothing was left to reconcile"
    );
}

#[tokio::test(start_paused = true)]
async fn arrivals_listed_on_a_relist_count_as_delivered() {
    // ee6acaf, the other path: when `UID FETCH n:*` does not return an
    // announced message, the Inbox is listed again, and what that listing
    // shows is noticed.
    let plan = plan(2, SENDERS);
    let mail = fake_mail(&plan);
    mail.store().hide_from_uid_fetch = usize::MAX;
    let mut seen = Seen::default();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;

    let outcome = &result.outcome;
    assert!(outcome.submitted_recipients > 10);
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    assert!(mail.command_times("UID SEARCH").is_empty());
    // Noticed as they arrived, in the steady phase, not after it.
    assert!(
        seen.delivered()
            .iter()
            .all(|at| *at < result.outcome.clock.steady_end + 10 * SECOND)
    );
}

#[tokio::test(start_paused = true)]
async fn reconciliation_searches_every_folder_but_sent() {
    // ee6acaf: copies filed away before they were noticed are delivered;
    // a copy in Sent is the sender's and does not count.
    let plan = plan(2, SENDERS);
    let filed = fake_mail(&plan);
    filed.store().delivery_folder = "Archive".into();
    let mut seen = Seen::default();
    let result = run_fake(&plan, &filed, settings(10, 60, 10), None, &mut seen).await;
    let outcome = &result.outcome;
    assert!(!filed.command_times("UID SEARCH").is_empty());
    assert_eq!(outcome.delivered_recipients, outcome.submitted_recipients);
    assert!(outcome.lost.is_empty());

    let in_sent = fake_mail(&plan);
    in_sent.store().delivery_folder = "Sent".into();
    let mut seen = Seen::default();
    let result = run_fake(&plan, &in_sent, settings(10, 60, 10), None, &mut seen).await;
    let outcome = &result.outcome;
    assert_eq!(outcome.delivered_recipients, 0);
    assert_eq!(outcome.lost.len() as u64, outcome.submitted_recipients);
}

/// Keeps what a run's journal is handed: the metadata it starts with and
/// every closed interval.
#[derive(Default)]
struct Journal {
    started: Vec<peakhour_analysis::RunMeta>,
    closed: Vec<peakhour_analysis::IntervalRecord>,
}

impl peakhour_engine::Observer for Journal {
    fn event(&mut self, _: &peakhour_engine::RunClock, _: Instant, _: &Event) {}
    fn lag(&mut self, _: &peakhour_engine::RunClock, _: Instant, _: Duration) {}
    fn tick(&mut self, _: &peakhour_engine::RunClock, _: Instant, _: peakhour_engine::SelfSample) {}
    fn started(&mut self, meta: &peakhour_analysis::RunMeta) {
        self.started.push(meta.clone());
    }
    fn interval_closed(&mut self, interval: &peakhour_analysis::IntervalRecord) {
        self.closed.push(interval.clone());
    }
}

/// Issue 11: what a killed run keeps is what the observers were handed
/// while it ran, so every interval but the last (cut short at the end) must
/// be handed on once, in order, equal to the record's, and the run's
/// metadata before the first (marked interrupted until the record says
/// otherwise).
#[tokio::test(start_paused = true)]
async fn issue_11_every_closed_interval_is_handed_to_the_observers_as_it_closes() {
    let plan = plan(4, "[actions.check_inbox]\nper_day = 240");
    let mail = fake_mail(&plan);
    let mut seen = Seen::default();
    let mut journal = Journal::default();
    let (_stop_tx, stop) = watch::channel(false);
    let result = run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings(10, 60, 10),
        stop,
        &mut peakhour_engine::Both(&mut seen, &mut journal),
    )
    .await
    .unwrap();
    let record = &result.record;
    assert_eq!(journal.started.len(), 1);
    let meta = &journal.started[0];
    assert!(meta.interrupted);
    assert_eq!(
        (meta.run_id.as_str(), meta.started_at.as_str()),
        (record.meta.run_id.as_str(), record.meta.started_at.as_str())
    );
    assert!(!record.meta.interrupted);
    assert!(
        journal.closed.len() >= 6,
        "{} handed on",
        journal.closed.len()
    );
    assert_eq!(
        journal.closed[..],
        record.intervals[..journal.closed.len()],
        "handed on as recorded"
    );
    assert!(
        record.intervals.len() - journal.closed.len() <= 1,
        "only the last is left"
    );
}

/// A test profile with a day shape (issue 25): the busiest hour at twice
/// the day's average, and a morning where every user logs on within 20 s
/// and checks the Inbox first.
fn shaped_plan(users: u32, window: peakhour_workload::Window) -> Arc<Plan> {
    let source = format!(
        r#"
name = "fake-shaped"
description = "a test profile with a day shape"
day = "8h"
speed = {speed}
[users]
count = {users}
[recipients]
average = 1
[actions.check_inbox]
per_day = 240
[actions.read]
per_day = 120
[day_shape]
peak_factor = 2.0
[day_shape.morning]
logon_share = 1.0
logon_within = "20s"
first_actions = ["check_inbox"]
"#,
        // The morning runs at its real rate; the peak hour is compressed.
        speed = if window == peakhour_workload::Window::Morning {
            1.0
        } else {
            480.0
        },
    );
    let profile = peakhour_workload::Profile::parse("shaped.toml", &source).unwrap();
    let overrides = peakhour_workload::Overrides {
        window,
        ..peakhour_workload::Overrides::default()
    };
    Arc::new(Plan::resolve(&profile, &overrides).unwrap())
}

#[tokio::test(start_paused = true)]
async fn issue_25_item_1_a_peak_hour_run_drives_the_peak_rates_after_every_user_logged_on() {
    let plan = shaped_plan(4, peakhour_workload::Window::PeakHour);
    let mail = fake_mail(&plan);
    let mut seen = Seen::default();
    let t0 = Instant::now();
    let result = run_fake(&plan, &mail, settings(10, 60, 10), None, &mut seen).await;
    let clock = result.outcome.clock;
    // The peak hour keeps the ramp-up: every user is on before measuring.
    assert_eq!(clock.steady_start, t0 + 10 * SECOND);
    assert_eq!(clock.steady_end, t0 + 70 * SECOND);
    let stagger = Duration::from_millis(2500);
    assert_eq!(
        seen.logged_on(1),
        (0..4).map(|i| t0 + stagger * i).collect::<Vec<_>>()
    );
    // Every action the schedules hold inside the steady phase was done, at
    // its intended time, and none outside it; no logon is timed.
    let intended: Vec<Instant> = seen
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Action { intended, .. } => Some(*intended),
            _ => None,
        })
        .collect();
    let scheduled: usize = (0..4)
        .map(|u| plan.schedule(u).take_while(|a| a.at < 60 * SECOND).count())
        .sum();
    assert_eq!(intended.len(), scheduled);
    assert!(
        intended
            .iter()
            .all(|at| (clock.steady_start..clock.steady_end).contains(at))
    );
    assert!(
        !seen
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::Logon { .. }))
    );
    // The rates are the peak's: (240 + 120) a day × 480 / 8 h × 2 = 12 actions
    // per user per second; the count is Poisson, so its bound is sqrt-sized.
    let per_user_hour = plan.actions_per_user_hour().unwrap();
    assert!((per_user_hour - 12.0 * 3600.0).abs() < 1e-6);
    let expected = 4.0 * 12.0 * 60.0;
    assert!((scheduled as f64 - expected).abs() < 5.0 * f64::sqrt(expected));
    let summary = peakhour_analysis::Summary::compute(&result.record).unwrap();
    assert_eq!(summary.window, "peak-hour");
    let rates = summary.window_rates.unwrap();
    assert_eq!(rates.planned_actions_per_user_hour, per_user_hour);
    assert_eq!(rates.actions, scheduled as u64);
    assert!(summary.logon_storm.is_none());
}

#[tokio::test(start_paused = true)]
async fn issue_25_item_1_a_morning_run_measures_every_logon_at_the_logon_rate() {
    let plan = shaped_plan(4, peakhour_workload::Window::Morning);
    let mail = fake_mail(&plan);
    let mut seen = Seen::default();
    let t0 = Instant::now();
    let result = run_fake(&plan, &mail, settings(10, 30, 10), None, &mut seen).await;
    let clock = result.outcome.clock;
    // No unmeasured ramp-up: the storm (4 users at 1.0 × 4 / 20 s = 0.2
    // logons/s: 20 s) and then the 30 s asked for are all measured.
    assert_eq!(clock.steady_start, t0);
    assert_eq!(clock.steady_end, t0 + 50 * SECOND);
    let slots: Vec<Instant> = (0..4).map(|i| t0 + 5 * SECOND * i).collect();
    assert_eq!(seen.logged_on(1), slots);
    // Each first logon is timed from its slot, and each user's first action
    // is the morning's first action, due at its logon.
    let logons: Vec<(Instant, bool)> = seen
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Logon { intended, ok, .. } => Some((*intended, *ok)),
            _ => None,
        })
        .collect();
    assert_eq!(logons, slots.iter().map(|s| (*s, true)).collect::<Vec<_>>());
    for slot in &slots {
        assert!(seen.events.iter().any(|(_, e)| matches!(
            e,
            Event::Action { kind: peakhour_workload::ActionKind::CheckInbox, intended, .. }
                if intended == slot
        )));
    }
    let summary = peakhour_analysis::Summary::compute(&result.record).unwrap();
    assert_eq!(summary.window, "morning");
    let storm = summary.logon_storm.unwrap();
    assert_eq!(storm.logons, 4);
    assert_eq!(storm.errors, 0);
    assert!((storm.planned_logons_per_second - 0.2).abs() < 1e-12);
    // Logons at 0, 5, 10 and 15 s fall in the first two 10 s intervals.
    assert_eq!(storm.seconds, 20.0);
    assert!((storm.logons_per_second - 0.2).abs() < 1e-12);
    assert!(storm.p95_ms.is_some());
}
