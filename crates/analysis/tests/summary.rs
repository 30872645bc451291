//! Hand-checked numbers for the recorder and the summary.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta,
    RunRecord, Summary, Verdict, WeightSource, counters, merge_interval_lists,
};

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// An on-time action ending at `end` after `latency`.
fn ok(rec: &mut IntervalRecorder, action: &str, end: Duration, latency: Duration) {
    let start = end - latency;
    let timing = ActionTiming {
        intended_start: start,
        actual_start: start,
        end,
    };
    rec.record_action(action, timing, Outcome::Ok);
}

fn meta() -> RunMeta {
    RunMeta::new("run-1", "mmb-medium", 200, 42, "2026-05-01T12:00:00Z")
}

fn recorder() -> IntervalRecorder {
    IntervalRecorder::new(RecorderConfig::default()).unwrap()
}

/// Logon 0..10 s, steady 10..70 s, drain 70..80 s.
fn phased(f: impl FnOnce(&mut IntervalRecorder)) -> Vec<peakhour_analysis::IntervalRecord> {
    let mut rec = recorder();
    // A terrible logon phase that must not count.
    for i in 0..50 {
        ok(&mut rec, "read", ms(5000 + i * 10), s(5));
    }
    rec.enter_phase(Phase::Steady, s(10));
    f(&mut rec);
    rec.enter_phase(Phase::Drain, s(70));
    ok(&mut rec, "read", s(75), s(60));
    rec.finish(s(80))
}

fn summary(meta: RunMeta, intervals: Vec<peakhour_analysis::IntervalRecord>) -> Summary {
    let delivery = DeliveryRecorder::new().finish().unwrap();
    Summary::compute(&RunRecord::new(meta, intervals, delivery)).unwrap()
}

#[test]
fn recorder_cuts_intervals_at_phase_changes_and_keeps_gaps() {
    let mut rec = recorder();
    rec.set_users_logged_on(s(1), 5);
    ok(&mut rec, "read", s(3), ms(20));
    rec.enter_phase(Phase::Steady, s(15));
    rec.set_users_logged_on(s(15), 200);
    ok(&mut rec, "read", s(50), ms(20));
    let intervals = rec.finish(s(52));
    let shape: Vec<_> = intervals
        .iter()
        .map(|i| (i.start.as_secs(), i.length.as_secs(), i.phase))
        .collect();
    assert_eq!(
        shape,
        vec![
            (0, 10, Phase::Logon),
            (10, 5, Phase::Logon),
            (15, 10, Phase::Steady),
            (25, 10, Phase::Steady),
            (35, 10, Phase::Steady),
            (45, 7, Phase::Steady),
        ]
    );
    assert_eq!(intervals[0].users_logged_on, 5);
    assert_eq!(intervals[2].users_logged_on, 200);
    assert_eq!(intervals[5].users_logged_on, 200);
    assert!(intervals[3].actions.is_empty());
    assert_eq!(
        intervals[5].actions["read"].latency.decode().unwrap().len(),
        1
    );
}

#[test]
fn latency_runs_from_the_intended_start_and_late_starts_are_counted() {
    let mut rec = recorder();
    // Meant to start at 1 s, started at 1.5 s, done at 1.6 s: 600 ms, late.
    let late = ActionTiming {
        intended_start: ms(1000),
        actual_start: ms(1500),
        end: ms(1600),
    };
    // 50 ms late: under the 100 ms threshold.
    let slightly = ActionTiming {
        intended_start: ms(2000),
        actual_start: ms(2050),
        end: ms(2100),
    };
    rec.record_action("send", late, Outcome::Ok);
    rec.record_action("send", slightly, Outcome::Ok);
    rec.record_action("send", late, Outcome::Error("timeout"));
    let intervals = rec.finish(s(10));
    let send = &intervals[0].actions["send"];
    assert_eq!(send.late_starts, 2);
    assert_eq!(send.errors["timeout"], 1);
    let h = send.latency.decode().unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h.max_ms(), Some(600.0));
    assert_eq!(h.quantile_ms(0.0), Some(100.0));
}

#[test]
fn summary_uses_the_steady_phase_only() {
    let intervals = phased(|rec| {
        for i in 0..100 {
            ok(rec, "read", ms(10_000 + i * 500), ms(100 + i));
        }
    });
    let sum = summary(meta(), intervals);
    let read = &sum.actions["read"];
    assert_eq!(read.count, 100);
    assert_eq!(read.p50_ms, Some(149.0));
    assert_eq!(read.p95_ms, Some(194.0));
    assert_eq!(read.p99_ms, Some(198.0));
    assert_eq!(read.max_ms, Some(199.0));
    assert_eq!(sum.steady.intervals, 6);
    assert_eq!(sum.steady.start_s, 10.0);
    assert_eq!(sum.steady.length_s, 60.0);
    assert_eq!(sum.verdict, Verdict::Pass);
}

#[test]
fn weighted_score_uses_profile_frequencies() {
    let intervals = phased(|rec| {
        for i in 0..100 {
            ok(rec, "read", ms(10_000 + i * 100), ms(100));
            ok(rec, "send", ms(10_000 + i * 100), ms(300));
        }
        ok(rec, "logon", s(20), ms(5));
    });
    let mut m = meta();
    m.action_weights.insert("read".into(), 81.3);
    m.action_weights.insert("send".into(), 14.18);
    m.action_weights.insert("update_calendar".into(), 5.0);
    let sum = summary(m, intervals);
    // (81.3 * 100 + 14.18 * 300) / (81.3 + 14.18) = 12384 / 95.48 = 129.7026
    assert_eq!(sum.score.weighted_p95_ms, Some(129.703));
    assert_eq!(sum.score.weight_source, WeightSource::Profile);
    assert_eq!(sum.score.excluded, vec!["logon", "update_calendar"]);
    assert_eq!(sum.qos.unmeasured, vec!["update_calendar"]);
    // Pooled: 201 samples, the 95th-percentile rank (191) is a send.
    assert_eq!(sum.score.pooled_p95_ms, Some(300.0));
}

#[test]
fn weighted_score_falls_back_to_measured_counts() {
    let intervals = phased(|rec| {
        for i in 0..30 {
            ok(rec, "read", ms(10_000 + i * 100), ms(100));
        }
        for i in 0..10 {
            ok(rec, "send", ms(10_000 + i * 100), ms(300));
        }
    });
    let sum = summary(meta(), intervals);
    // (30 * 100 + 10 * 300) / 40 = 150
    assert_eq!(sum.score.weighted_p95_ms, Some(150.0));
    assert_eq!(sum.score.weight_source, WeightSource::Measured);
}

fn verdict_for(latency: Duration) -> Summary {
    let intervals = phased(|rec| {
        for i in 0..20 {
            ok(rec, "read", ms(10_000 + i * 100), latency);
        }
    });
    summary(meta(), intervals)
}

#[test]
fn p95_of_exactly_1000_ms_passes() {
    let sum = verdict_for(ms(1000));
    assert_eq!(sum.actions["read"].p95_ms, Some(1000.0));
    assert_eq!(sum.verdict, Verdict::Pass);
    assert!(sum.qos.failures.is_empty());
}

#[test]
fn p95_above_1000_ms_fails_and_says_why() {
    // One action alone: its p95 is the weighted p95, which the one rule judges.
    let sum = verdict_for(ms(1010));
    assert_eq!(sum.verdict, Verdict::Fail);
    assert_eq!(sum.qos.failures.len(), 1);
    assert_eq!(sum.qos.failures[0].subject, "score");
    assert!(sum.qos.failures[0].reason.contains("1010"), "{:?}", sum.qos);
}

/// 30 reads at 100 ms and 2 searches at 1500 ms: weighted p95 well under 1000 ms.
fn fast_reads_one_slow_search() -> Vec<peakhour_analysis::IntervalRecord> {
    phased(|rec| {
        for i in 0..30 {
            ok(rec, "read", ms(10_000 + i * 100), ms(100));
        }
        ok(rec, "search", s(20), ms(1500));
        ok(rec, "search", s(21), ms(1500));
    })
}

#[test]
fn issue_25_item_4_a_slow_action_without_its_own_limit_passes_when_the_weighted_p95_holds() {
    let sum = summary(meta(), fast_reads_one_slow_search());
    assert!(sum.score.weighted_p95_ms.unwrap() < 1000.0);
    assert_eq!(sum.verdict, Verdict::Pass, "{:?}", sum.qos);
    assert!(sum.actions["search"].qos_pass);
}

#[test]
fn per_action_threshold_holds_that_action_to_its_own_limit() {
    let mut m = meta();
    m.qos.p95_ms.insert("search".into(), 2000.0);
    assert_eq!(
        summary(m, fast_reads_one_slow_search()).verdict,
        Verdict::Pass
    );
    let mut m = meta();
    m.qos.p95_ms.insert("search".into(), 1200.0);
    let sum = summary(m, fast_reads_one_slow_search());
    assert_eq!(sum.verdict, Verdict::Fail);
    assert_eq!(sum.qos.failures[0].subject, "search");
    assert!(!sum.actions["search"].qos_pass);
    assert!(sum.actions["read"].qos_pass);
}

#[test]
fn error_ratio_above_the_limit_fails() {
    let intervals = phased(|rec| {
        for i in 0..98 {
            ok(rec, "read", ms(10_000 + i * 100), ms(50));
        }
        rec.error(s(30), "read", "timeout");
        rec.error(s(31), "read", "imap.NO");
    });
    let sum = summary(meta(), intervals);
    assert_eq!(sum.actions["read"].errors, 2);
    assert_eq!(sum.actions["read"].error_ratio, 0.02);
    assert_eq!(sum.errors_by_kind["timeout"], 1);
    assert_eq!(sum.verdict, Verdict::Fail);
}

#[test]
fn no_steady_measurement_fails() {
    let mut rec = recorder();
    ok(&mut rec, "read", s(1), ms(10));
    let sum = summary(meta(), rec.finish(s(5)));
    assert_eq!(sum.verdict, Verdict::Fail);
    assert_eq!(sum.qos.failures[0].subject, "run");
    assert_eq!(sum.score.weighted_p95_ms, None);
}

#[test]
fn throughput_is_per_steady_wall_clock_time() {
    let intervals = phased(|rec| {
        rec.count(s(20), counters::MESSAGES_SUBMITTED, 30);
        rec.count(s(20), counters::RECIPIENTS_DELIVERED, 141);
        rec.count(s(30), counters::MESSAGE_OPENS, 120);
        rec.count(s(40), counters::FOLDER_OPENS, 45);
        ok(rec, "read", s(20), ms(10));
    });
    let t = summary(meta(), intervals).throughput;
    assert_eq!(t.steady_seconds, 60.0);
    assert_eq!(t.messages_submitted_per_hour, 1800.0);
    assert_eq!(t.recipients_delivered_per_hour, 8460.0);
    assert_eq!(t.message_opens_per_second, 2.0);
    assert_eq!(t.folder_opens_per_second, 0.75);
}

fn client_run(cpu: &[f64], lag: Duration) -> Summary {
    let intervals = phased(|rec| {
        for (i, &p) in cpu.iter().enumerate() {
            rec.record_client_cpu(s(11 + 10 * i as u64), p);
        }
        for i in 0..100 {
            rec.record_scheduling_lag(ms(10_000 + i * 100), lag);
        }
        ok(rec, "read", s(20), ms(10));
    });
    summary(meta(), intervals)
}

#[test]
fn client_bound_when_cpu_is_high_in_more_than_a_tenth_of_intervals() {
    let calm = client_run(&[50.0, 50.0, 90.0, 50.0, 50.0, 50.0], ms(1));
    // 1 of 6 intervals over 80 %: 16.7 % > 10 %.
    assert!(calm.client_bound);
    assert_eq!(calm.client.intervals_over_cpu_limit, 1);
    assert_eq!(calm.client.cpu_percent_max, Some(90.0));

    let fine = client_run(&[50.0, 80.0, 79.0, 10.0, 50.0, 50.0], ms(1));
    assert!(!fine.client_bound, "{:?}", fine.client_bound_reasons);
    assert_eq!(fine.client.cpu_percent_mean, Some(53.167));
}

#[test]
fn client_bound_when_scheduling_lag_p99_is_high() {
    let laggy = client_run(&[10.0], ms(20));
    assert!(laggy.client_bound);
    assert!(laggy.client_bound_reasons[0].contains("scheduling lag"));
    assert!(!client_run(&[10.0], ms(10)).client_bound);
}

#[test]
fn client_cpu_limit_scales_with_cores() {
    let intervals = phased(|rec| {
        rec.record_client_cpu(s(11), 150.0);
        ok(rec, "read", s(20), ms(10));
    });
    let mut m = meta();
    m.client_cores = 2;
    let sum = summary(m, intervals);
    assert_eq!(sum.client.cpu_limit_percent, 160.0);
    assert!(!sum.client_bound);
}

#[test]
fn delivery_counts_lost_recipients_and_fails() {
    let mut d = DeliveryRecorder::new();
    d.submitted(10);
    for v in [100, 200, 300, 400, 500, 600, 700] {
        d.delivered(ms(v));
    }
    d.failed(1);
    d.lost("m-2", "user7@test.invalid");
    d.lost("m-1", "user3@test.invalid");
    let intervals = phased(|rec| ok(rec, "read", s(20), ms(10)));
    let record = RunRecord::new(meta(), intervals, d.finish().unwrap());
    let sum = Summary::compute(&record).unwrap();
    assert_eq!(sum.delivery.lost, 2);
    assert!(sum.delivery.reconciled);
    assert_eq!(sum.delivery.lost_recipients[0].message_id, "m-1");
    assert_eq!(sum.delivery.p50_ms, Some(400.0));
    assert_eq!(sum.delivery.p95_ms, Some(700.0));
    assert_eq!(sum.delivery.max_ms, Some(700.0));
    assert_eq!(sum.verdict, Verdict::Fail);
    assert_eq!(sum.qos.failures[0].subject, "delivery");
}

#[test]
fn worker_recorders_merge_interval_by_interval() {
    let run = |latency: u64, users: u32| {
        let mut rec = recorder();
        rec.set_users_logged_on(s(0), users);
        ok(&mut rec, "read", s(5), ms(latency));
        rec.count(s(5), counters::MESSAGE_OPENS, 1);
        rec.enter_phase(Phase::Steady, s(10));
        ok(&mut rec, "read", s(15), ms(latency));
        rec.finish(s(20))
    };
    let mut all = Vec::new();
    merge_interval_lists(&mut all, &run(10, 100)).unwrap();
    merge_interval_lists(&mut all, &run(30, 100)).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].users_logged_on, 200);
    assert_eq!(all[0].counters[counters::MESSAGE_OPENS], 2);
    let h = all[1].actions["read"].latency.decode().unwrap();
    assert_eq!((h.len(), h.max_ms()), (2, Some(30.0)));

    let mut short = run(10, 1);
    short.pop();
    assert!(merge_interval_lists(&mut all, &short).is_err());
}

#[test]
fn run_record_round_trips_through_json() {
    let intervals = phased(|rec| {
        ok(rec, "read", s(20), ms(10));
        rec.record_command(s(20), "imap.SELECT", ms(3));
        rec.error(s(21), "send", "smtp.451");
    });
    let mut m = meta();
    m.action_weights.insert("read".into(), 81.3);
    let record = RunRecord::new(m, intervals, DeliveryRecorder::new().finish().unwrap());
    let json = serde_json::to_string(&record).unwrap();
    let back: RunRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(back, record);
    assert_eq!(
        Summary::compute(&back).unwrap(),
        Summary::compute(&record).unwrap()
    );
}

#[test]
fn zero_interval_is_rejected() {
    let config = RecorderConfig {
        interval: Duration::ZERO,
        ..RecorderConfig::default()
    };
    assert!(IntervalRecorder::new(config).is_err());
}

#[test]
fn monitor_findings_are_empty_until_set_and_round_trip() {
    let intervals = phased(|rec| ok(rec, "read", s(20), ms(10)));
    let mut summary = summary(meta(), intervals);
    assert_eq!(summary.bottleneck, None);
    assert!(summary.resources.is_empty());

    summary.bottleneck = Some(peakhour_analysis::Bottleneck {
        resource: "CPU".into(),
        evidence: "94% busy, run queue 3.1 per core".into(),
        line: "CPU: 94% busy, run queue 3.1 per core — CPU-bound".into(),
    });
    summary
        .resources
        .push(peakhour_analysis::ResourceHighAverage {
            metric: "cpu_busy_pct".into(),
            label: "CPU busy %".into(),
            mean: 90.0,
            p95: 97.0,
            max: 99.0,
            high_average: 94.0,
            high_average_std_dev: 2.5,
            high_average_window_s: 30.0,
            shorter_than_window: false,
            samples: 60,
        });
    assert!(summary.bottleneck.as_ref().unwrap().is_saturated());
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["bottleneck"]["resource"], "CPU");
    assert_eq!(json["resources"][0]["high_average"], 94.0);
    let back: Summary = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, summary);

    // A summary.json written before the monitor joined still reads.
    let mut old = json;
    let object = old.as_object_mut().unwrap();
    object.remove("bottleneck");
    object.remove("resources");
    let back: Summary = serde_json::from_value(old).unwrap();
    assert_eq!(back.bottleneck, None);
}
