//! NetBench's throughput in the summary (issue 15): the bytes read and written in the
//! steady phase, per second, and in seed 004's megabits.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta,
    RunRecord, Summary, counters,
};

fn t(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn bytes_moved_in_the_steady_phase_are_the_throughput() {
    let mut rec = IntervalRecorder::new(RecorderConfig {
        interval: t(1000),
        ..RecorderConfig::default()
    })
    .unwrap();
    // Before the steady phase: not counted.
    rec.count(t(500), counters::BYTES_READ, 999_999);
    rec.enter_phase(Phase::Steady, t(1000));
    let timing = ActionTiming {
        intended_start: t(1100),
        actual_start: t(1100),
        end: t(1105),
    };
    rec.record_action("file.read", timing, Outcome::Ok);
    // 480,154 bytes/s for 2 s: seed 004's one client, 3.7 Mbits/s.
    rec.count(t(1105), counters::BYTES_READ, 600_000);
    rec.count(t(2500), counters::BYTES_WRITTEN, 360_308);
    rec.enter_phase(Phase::Drain, t(3000));
    rec.count(t(3500), counters::BYTES_WRITTEN, 999_999);
    let intervals = rec.finish(t(4000));
    let meta = RunMeta::new("r", "netbench-disk-mix", 1, 1, "2026-11-22T00:00:00Z");
    let record = RunRecord::new(meta, intervals, DeliveryRecorder::new().finish().unwrap());
    let s = Summary::compute(&record).unwrap();
    assert_eq!(s.throughput.steady_seconds, 2.0);
    assert_eq!(s.throughput.bytes_per_second, Some(480_154.0));
    assert_eq!(s.throughput.megabits_per_second, Some(3.663));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["throughput"]["bytes_per_second"], 480_154.0);
}

#[test]
fn a_mail_run_has_no_byte_throughput() {
    let mut rec = IntervalRecorder::new(RecorderConfig::default()).unwrap();
    rec.enter_phase(Phase::Steady, t(0));
    let intervals = rec.finish(t(10_000));
    let meta = RunMeta::new("r", "mmb-medium", 1, 1, "2026-11-22T00:00:00Z");
    let record = RunRecord::new(meta, intervals, DeliveryRecorder::new().finish().unwrap());
    let s = Summary::compute(&record).unwrap();
    assert_eq!(s.throughput.bytes_per_second, None);
    let json = serde_json::to_value(&s).unwrap();
    assert!(json["throughput"].get("bytes_per_second").is_none());
}
