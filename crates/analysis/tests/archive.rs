//! Issue 11: closed intervals leave memory once an archive (the run's journal)
//! has them, and the record at the end is the same as when all were held.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, AnalysisError, DeliveryRecorder, IntervalArchive, IntervalRecord,
    IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta, RunRecord, Summary, counters,
};

/// An archive in memory that stores what it is handed, up to `fails_after`
/// intervals (then it is a full disk: nothing more is stored).
#[derive(Debug, Default)]
struct Shelf {
    stored: Mutex<Vec<IntervalRecord>>,
    fails_after: Option<usize>,
}

impl Shelf {
    fn hand(&self, interval: &IntervalRecord) {
        let mut stored = self.stored.lock().unwrap();
        if self.fails_after.is_none_or(|n| stored.len() < n) {
            stored.push(interval.clone());
        }
    }
}

impl IntervalArchive for Shelf {
    fn stored(&self) -> usize {
        self.stored.lock().unwrap().len()
    }

    fn read_back(&self, count: usize) -> Result<Vec<IntervalRecord>, AnalysisError> {
        Ok(self.stored.lock().unwrap()[..count].to_vec())
    }
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// Two hours of 10-s intervals: a few actions, commands, counters, lag and
/// CPU in each, so every interval carries histograms.
fn feed(rec: &mut IntervalRecorder, mut after_each_second: impl FnMut(&mut IntervalRecorder)) {
    rec.set_users_logged_on(s(1), 50);
    for second in 0..7_200_u64 {
        if second == 60 {
            rec.enter_phase(Phase::Steady, s(60));
        }
        if second == 7_000 {
            rec.enter_phase(Phase::Drain, s(7_000));
        }
        let end = s(second) + Duration::from_millis(900);
        let latency = Duration::from_millis(10 + (second * 37) % 400);
        let timing = ActionTiming {
            intended_start: end - latency,
            actual_start: end - latency + Duration::from_millis(second % 3),
            end,
        };
        let outcome = if second % 97 == 0 {
            Outcome::Error("timeout")
        } else {
            Outcome::Ok
        };
        let action = ["read", "send", "move"][(second % 3) as usize];
        rec.record_action(action, timing, outcome);
        rec.record_command(end, "imap.FETCH", latency / 2);
        rec.count(end, counters::MESSAGE_OPENS, 1);
        rec.record_scheduling_lag(end, Duration::from_micros(300 + second % 50));
        rec.record_client_cpu(end, 1.0 / 3.0 + (second % 7) as f64 * 0.1);
        after_each_second(rec);
    }
}

fn summary(intervals: Vec<IntervalRecord>) -> Summary {
    let meta = RunMeta::new("run-1", "mmb-medium", 50, 42, "2026-05-01T12:00:00Z");
    let delivery = DeliveryRecorder::new().finish().unwrap();
    Summary::compute(&RunRecord::new(meta, intervals, delivery)).unwrap()
}

/// Hands every newly closed interval to the shelf and releases what it stored,
/// as the engine does with the run's journal; returns the most held at once.
fn feed_archived(rec: &mut IntervalRecorder, shelf: &Shelf) -> usize {
    let mut handed = 0;
    let mut most_held = 0;
    feed(rec, |rec| {
        for interval in rec.closed_since(handed) {
            shelf.hand(interval);
        }
        handed = rec.closed_count();
        rec.release_stored(shelf.stored());
        most_held = most_held.max(rec.held());
    });
    most_held
}

fn config() -> RecorderConfig {
    RecorderConfig {
        interval: s(10),
        ..RecorderConfig::default()
    }
}

#[test]
fn issue_11_the_recorder_holds_a_bounded_number_of_intervals_while_the_archive_keeps_up() {
    let shelf = Shelf::default();
    let mut rec = IntervalRecorder::new(config()).unwrap();
    let most_held = feed_archived(&mut rec, &shelf);
    assert!(rec.closed_count() >= 719, "{}", rec.closed_count());
    assert!(most_held <= 1, "held {most_held} closed intervals at once");
    assert_eq!(rec.released(), rec.closed_count());
    assert!(rec.closed().is_empty());
}

#[test]
fn issue_11_the_record_rebuilt_from_the_archive_equals_the_one_held_in_memory() {
    let mut held = IntervalRecorder::new(config()).unwrap();
    feed(&mut held, |_| {});
    let expected = held.finish(s(7_205));

    let shelf = Shelf::default();
    let mut rec = IntervalRecorder::new(config()).unwrap();
    feed_archived(&mut rec, &shelf);
    let rebuilt = rec.finish_from(s(7_205), &shelf).unwrap();

    assert_eq!(rebuilt.len(), expected.len());
    assert_eq!(rebuilt, expected);
    assert_eq!(summary(rebuilt), summary(expected));
}

#[test]
fn issue_11_after_the_archive_fails_every_later_interval_stays_in_memory() {
    let mut held = IntervalRecorder::new(config()).unwrap();
    feed(&mut held, |_| {});
    let expected = held.finish(s(7_205));

    let shelf = Shelf {
        fails_after: Some(100),
        ..Shelf::default()
    };
    let mut rec = IntervalRecorder::new(config()).unwrap();
    feed_archived(&mut rec, &shelf);
    assert_eq!(rec.released(), 100);
    assert_eq!(rec.held(), rec.closed_count() - 100);
    assert_eq!(rec.finish_from(s(7_205), &shelf).unwrap(), expected);
}

#[test]
fn issue_11_an_archive_that_gives_back_too_few_intervals_is_an_error_not_a_short_record() {
    #[derive(Debug)]
    struct Forgetful;
    impl IntervalArchive for Forgetful {
        fn stored(&self) -> usize {
            usize::MAX
        }
        fn read_back(&self, _: usize) -> Result<Vec<IntervalRecord>, AnalysisError> {
            Ok(Vec::new())
        }
    }
    let mut rec = IntervalRecorder::new(config()).unwrap();
    feed(&mut rec, |_| {});
    rec.release_stored(Forgetful.stored());
    assert!(matches!(
        rec.finish_from(s(7_205), &Forgetful),
        Err(AnalysisError::Archive(_))
    ));
}
