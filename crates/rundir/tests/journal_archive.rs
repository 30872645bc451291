//! Issue 11 (the soak's memory): the run's journal is where closed intervals
//! live once they are on disk. The recorder holds only those the journal has
//! not synced yet, and the record read back at the end is exactly the one a
//! recorder holding everything in memory produces.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalArchive, IntervalRecord, IntervalRecorder, Outcome,
    Phase, RecorderConfig, RunMeta, RunRecord, Summary,
};
use peakhour_engine::Observer as _;
use peakhour_rundir::RunDir;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn meta() -> RunMeta {
    let mut meta = RunMeta::new("r-archive", "mmb-medium", 10, 7, "2026-05-01T12:00:00Z");
    meta.interval = s(5);
    meta
}

fn recorder() -> IntervalRecorder {
    IntervalRecorder::new(RecorderConfig {
        interval: s(5),
        late_start_threshold: Duration::from_millis(50),
    })
    .unwrap()
}

/// 600 s: a logon minute, steady, a drain from 540 s; a read or a send every
/// 500 ms with varied latencies, errors and late starts, commands, counters,
/// lag and CPU samples whose means are not round in binary.
fn feed(rec: &mut IntervalRecorder, mut each_step: impl FnMut(&mut IntervalRecorder)) {
    for i in 1..=1_200_u64 {
        let end = Duration::from_millis(500 * i);
        if i == 120 {
            rec.enter_phase(Phase::Steady, s(60));
        }
        if i == 1_080 {
            rec.enter_phase(Phase::Drain, s(540));
        }
        let latency = Duration::from_micros(3_000 + (i * 7_919) % 400_000);
        let late = Duration::from_millis(if i % 13 == 0 { 120 } else { 1 });
        let timing = ActionTiming {
            intended_start: end - latency,
            actual_start: end - latency + late,
            end,
        };
        let outcome = if i % 17 == 0 {
            Outcome::Error("imap.NO")
        } else {
            Outcome::Ok
        };
        rec.record_action(if i % 2 == 0 { "read" } else { "send" }, timing, outcome);
        rec.record_command(end, "imap.FETCH", latency / 3);
        rec.count(end, "recipients_submitted", i % 3);
        rec.set_users_logged_on(end, 10);
        rec.record_scheduling_lag(end, Duration::from_micros(200 + i % 91));
        rec.record_client_cpu(end, 0.1 + 1.0 / (i as f64));
        each_step(rec);
    }
}

fn summary(intervals: Vec<IntervalRecord>) -> Summary {
    let record = RunRecord::new(meta(), intervals, DeliveryRecorder::new().finish().unwrap());
    Summary::compute(&record).unwrap()
}

/// Waits (at most 30 s) until the journal has synced `count` intervals.
fn wait_stored(archive: &dyn IntervalArchive, count: usize) {
    let deadline = Instant::now() + s(30);
    while archive.stored() < count {
        assert!(
            Instant::now() < deadline,
            "the journal stored {} of {count}",
            archive.stored()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn issue_11_closed_intervals_leave_memory_once_journaled_and_the_record_read_back_is_the_same() {
    let mut held = recorder();
    feed(&mut held, |_| {});
    let expected = held.finish(s(601));

    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("run")).unwrap();
    let mut journal = dir.journal().unwrap();
    let archive = journal.interval_archive().unwrap();
    journal.started(&meta());
    let mut rec = recorder();
    let mut handed = 0;
    let mut most_held = 0;
    feed(&mut rec, |rec| {
        for interval in rec.closed_since(handed) {
            journal.interval_closed(interval);
        }
        handed = rec.closed_count();
        // The journal keeps up (here it is waited for; in a run it is a
        // thread of its own that syncs within milliseconds of a close).
        wait_stored(archive.as_ref(), handed);
        rec.release_stored(archive.stored());
        most_held = most_held.max(rec.held());
    });
    assert_eq!(rec.closed_count(), 120);
    assert_eq!(rec.released(), 120);
    assert_eq!(
        most_held, 0,
        "an interval stayed in memory after the journal had it"
    );

    let rebuilt = rec.finish_from(s(601), archive.as_ref()).unwrap();
    journal.finish().unwrap();
    assert_eq!(rebuilt.len(), expected.len());
    assert_eq!(rebuilt, expected);
    assert_eq!(summary(rebuilt), summary(expected));
}

#[test]
fn issue_11_a_journal_that_cannot_write_stores_nothing_so_the_recorder_keeps_every_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("run")).unwrap();
    // The journal's file cannot be created: a directory stands in its name.
    std::fs::create_dir(dir.file(peakhour_rundir::RunFile::Journal)).unwrap();
    let mut journal = dir.journal().unwrap();
    let archive = journal.interval_archive().unwrap();
    journal.started(&meta());
    let mut rec = recorder();
    let mut handed = 0;
    feed(&mut rec, |rec| {
        for interval in rec.closed_since(handed) {
            journal.interval_closed(interval);
        }
        handed = rec.closed_count();
        rec.release_stored(archive.stored());
    });
    assert!(journal.finish().is_err());
    assert_eq!(archive.stored(), 0);
    assert_eq!(rec.held(), 120);
    let mut held = recorder();
    feed(&mut held, |_| {});
    assert_eq!(
        rec.finish_from(s(601), archive.as_ref()).unwrap(),
        held.finish(s(601))
    );
}
