//! `merge_shards`: two halves of a run add up to the run, exactly.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, CrossCopy, CrossShardDeliveries, DeliveryRecorder, IntervalRecorder,
    LatencyHistogram, MergeError, Outcome, Phase, RecorderConfig, RunMeta, RunRecord, ShardMark,
    Summary, merge_shards,
};

/// One sample: (user, action, end offset in µs, latency in µs).
type Sample = (u32, &'static str, u64, u64);

/// Deterministic pseudo-random samples over a 10 s logon, 60 s steady and
/// 10 s drain, with latencies spread over four orders of magnitude.
fn samples() -> Vec<Sample> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out: Vec<Sample> = (0..20_000)
        .map(|_| {
            let user = (next() % 40) as u32;
            let action = ["read", "send", "check_inbox"][(next() % 3) as usize];
            let end_us = 1_000_000 + next() % 78_000_000;
            let latency_us = 200 + (next() % 1_000) * (next() % 2_000);
            (user, action, end_us, latency_us.min(end_us))
        })
        .collect();
    out.sort_by_key(|s| s.2);
    out
}

/// The record of the samples whose user `keep` accepts, the drain cut at
/// `finish_s` (shards end their drains at different times).
fn record(
    samples: &[Sample],
    keep: impl Fn(u32) -> bool,
    finish_s: u64,
    shard: Option<u32>,
) -> RunRecord {
    record_shifted(samples, keep, finish_s, shard, Duration::ZERO)
}

/// [`record`] with the steady and drain phases entered `shift` after their
/// planned boundaries, as records made before the grid was anchored at the
/// boundaries have them (the first event after the boundary opened the phase).
fn record_shifted(
    samples: &[Sample],
    keep: impl Fn(u32) -> bool,
    finish_s: u64,
    shard: Option<u32>,
    shift: Duration,
) -> RunRecord {
    let mut rec = IntervalRecorder::new(RecorderConfig::default()).unwrap();
    let mut phase = Phase::Logon;
    for &(user, action, end_us, latency_us) in samples.iter().filter(|s| keep(s.0)) {
        let end = Duration::from_micros(end_us);
        for (next, at) in [(Phase::Steady, 10), (Phase::Drain, 70)] {
            let at = Duration::from_secs(at) + shift;
            if phase < next && end >= at {
                rec.enter_phase(next, at);
                phase = next;
            }
        }
        let start = end - Duration::from_micros(latency_us);
        let timing = ActionTiming {
            intended_start: start,
            actual_start: start,
            end,
        };
        let outcome = if user % 7 == 0 && latency_us % 5 == 0 {
            Outcome::Error("timeout")
        } else {
            Outcome::Ok
        };
        rec.record_action(action, timing, outcome);
        rec.count(end, "message_opens", 1);
    }
    let intervals = rec.finish(Duration::from_secs(finish_s));
    let mut meta = RunMeta::new("run-m", "mmb-medium", 40, 7, "2026-05-01T12:00:00Z");
    if let Some(index) = shard {
        meta.shards = vec![ShardMark {
            index,
            count: 2,
            users: 20,
            start_at: Some("2026-05-01T12:00:00Z".into()),
            started_late_ms: None,
            interrupted: false,
        }];
    }
    let mut delivery = DeliveryRecorder::new().finish().unwrap();
    if shard.is_some() {
        delivery.cross_shard = Some(CrossShardDeliveries::default());
    }
    RunRecord::new(meta, intervals, delivery)
}

#[test]
fn two_merged_halves_have_the_percentiles_of_all_samples() {
    let all = samples();
    let whole = record(&all, |_| true, 80, None);
    let even = record(&all, |u| u % 2 == 0, 79, Some(1));
    let odd = record(&all, |u| u % 2 == 1, 80, Some(2));
    let merged = merge_shards(&[odd, even]).unwrap();
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert_eq!(merged.record.intervals.len(), whole.intervals.len());

    let expected = Summary::compute(&whole).unwrap();
    let got = Summary::compute(&merged.record).unwrap();
    assert_eq!(got.actions.len(), 3);
    for (name, want) in &expected.actions {
        let have = &got.actions[name];
        assert_eq!(have.count, want.count, "{name}");
        assert_eq!(have.errors, want.errors, "{name}");
        for (q, a, b) in [
            ("p50", have.p50_ms, want.p50_ms),
            ("p95", have.p95_ms, want.p95_ms),
            ("p99", have.p99_ms, want.p99_ms),
            ("max", have.max_ms, want.max_ms),
        ] {
            assert_eq!(a, b, "{name} {q}");
        }
    }
    assert_eq!(got.score, expected.score);
    assert_eq!(got.counters, expected.counters);
    // Interval by interval too: each merged histogram is the whole run's.
    for (m, w) in merged.record.intervals.iter().zip(&whole.intervals) {
        assert_eq!((m.start, m.phase), (w.start, w.phase));
        for (name, action) in &w.actions {
            let mine = m.actions[name].latency.decode().unwrap();
            let theirs = action.latency.decode().unwrap();
            assert_eq!(mine.as_hdr(), theirs.as_hdr(), "{name} at {:?}", w.start);
        }
    }
}

/// An average of the halves' p95s is not the p95 of the whole: the reason
/// to merge histograms, shown on numbers where it matters.
#[test]
fn averaging_percentiles_would_be_wrong_where_merging_is_right() {
    let mut fast = LatencyHistogram::new();
    let mut slow = LatencyHistogram::new();
    (0..900).for_each(|_| fast.record_us(10_000));
    (0..100).for_each(|_| slow.record_us(2_000_000));
    let average = (fast.quantile_us(0.95) + slow.quantile_us(0.95)) / 2;
    let mut both = fast.clone();
    both.add(&slow).unwrap();
    assert_ne!(both.quantile_us(0.95), average);
    assert_eq!(both.quantile_ms(0.95), slow.quantile_ms(0.95));
}

#[test]
fn crossed_copies_are_joined_and_the_unseen_ones_lost() {
    let all = samples();
    let mut a = record(&all, |u| u % 2 == 0, 80, Some(1));
    let mut b = record(&all, |u| u % 2 == 1, 80, Some(2));
    let copy = |id: &str, to: &str, at| CrossCopy {
        message_id: id.into(),
        recipient: to.into(),
        at_unix_us: at,
    };
    a.delivery.submitted_recipients = 3;
    a.delivery.cross_shard = Some(CrossShardDeliveries {
        sent: vec![
            copy("s0.0.run-m@bench.test", "user1@bench.test", 1_000_000),
            copy("s0.0.run-m@bench.test", "user3@bench.test", 1_000_000),
        ],
        noticed: vec![copy("s1.0.run-m@bench.test", "user0@bench.test", 5_250_000)],
    });
    a.delivery.delivered_recipients = 1; // one copy to itself
    b.delivery.submitted_recipients = 1;
    b.delivery.cross_shard = Some(CrossShardDeliveries {
        sent: vec![copy("s1.0.run-m@bench.test", "user0@bench.test", 5_000_000)],
        noticed: vec![copy("s0.0.run-m@bench.test", "user1@bench.test", 1_400_000)],
    });
    let before = Summary::compute(&a).unwrap();
    assert_eq!(before.delivery.awaiting_merge, 2);
    assert!(
        before.delivery.reconciled,
        "a shard balances with what it hands on"
    );

    let merged = merge_shards(&[a, b]).unwrap();
    let summary = Summary::compute(&merged.record).unwrap();
    let d = &summary.delivery;
    assert_eq!(d.submitted_recipients, 4);
    assert_eq!(d.delivered_recipients, 3);
    assert_eq!(d.lost, 1);
    assert_eq!(d.lost_recipients[0].recipient, "user3@bench.test");
    assert_eq!(d.awaiting_merge, 0);
    assert!(d.reconciled);
    // Latencies 400 ms and 250 ms crossed; the copy to itself had none recorded.
    assert_eq!(d.max_ms, Some(400.0));
}

#[test]
fn merge_marks_late_missing_and_foreign_shards() {
    let all = samples();
    let mut late = record(&all, |u| u % 2 == 0, 80, Some(1));
    late.meta.shards[0].started_late_ms = Some(2_500);
    let merged = merge_shards(std::slice::from_ref(&late)).unwrap();
    assert!(merged.record.meta.merged && merged.record.meta.interrupted);
    let text = merged.warnings.join("\n");
    assert!(text.contains("2500 ms after --start-at"), "{text}");
    assert!(text.contains("shards 2/2 are missing"), "{text}");

    let whole = record(&all, |_| true, 80, None);
    assert!(matches!(
        merge_shards(&[whole]),
        Err(MergeError::NotAShard { .. })
    ));
    let mut other = record(&all, |u| u % 2 == 1, 80, Some(2));
    other.meta.seed = 8;
    assert!(matches!(
        merge_shards(&[late.clone(), other]),
        Err(MergeError::Mismatch { what: "seed", .. })
    ));
    assert!(matches!(
        merge_shards(&[late.clone(), late]),
        Err(MergeError::Duplicate { index: 1, .. })
    ));
}

#[test]
fn issue_31_item_4_a_shard_numbered_from_zero_is_refused_and_missing_ones_are_named() {
    let all = samples();
    let mut old = record(&all, |u| u % 2 == 0, 80, Some(1));
    old.meta.shards[0].index = 0;
    let refused = merge_shards(&[old]).unwrap_err();
    assert!(matches!(
        refused,
        MergeError::NumberedFromZero { count: 2, .. }
    ));
    assert!(
        refused.to_string().contains("numbered from 1 to 2"),
        "{refused}"
    );

    let mut second_of_three = record(&all, |u| u % 3 == 1, 80, Some(2));
    second_of_three.meta.shards[0].count = 3;
    let merged = merge_shards(&[second_of_three]).unwrap();
    let text = merged.warnings.join("\n");
    assert!(text.contains("shards 1/3, 3/3 are missing"), "{text}");
    assert!(merged.record.meta.interrupted);
}

/// Issue 26, item 10: two 30-second shards merged into "60 s in 6
/// intervals" at the average of their throughputs, because intervals were
/// matched on their exact start and the shards' steady phases began 1.859 ms
/// and 3.217 ms after the boundary. Matched by their place in the phase, the
/// merged steady phase has each shard's length and interval count, and its
/// throughput is the sum of theirs.
#[test]
fn issue_26_item_10_shards_whose_phases_began_apart_merge_into_their_sum() {
    let all = samples();
    let even = record_shifted(
        &all,
        |u| u % 2 == 0,
        80,
        Some(1),
        Duration::from_micros(1_859),
    );
    let odd = record_shifted(
        &all,
        |u| u % 2 == 1,
        80,
        Some(2),
        Duration::from_micros(3_217),
    );
    let shard_summaries = [&even, &odd].map(|r| Summary::compute(r).unwrap());
    let merged = merge_shards(&[even.clone(), odd.clone()]).unwrap();
    let got = Summary::compute(&merged.record).unwrap();

    let steady_count = |r: &RunRecord| {
        r.intervals
            .iter()
            .filter(|i| i.phase == Phase::Steady)
            .count()
    };
    assert_eq!(steady_count(&merged.record), steady_count(&even));
    assert_eq!(steady_count(&even), steady_count(&odd));
    let lengths = shard_summaries
        .each_ref()
        .map(|s| s.throughput.steady_seconds);
    assert!(
        (got.throughput.steady_seconds - lengths[0].max(lengths[1])).abs() < 0.01,
        "merged steady {} s, shards {lengths:?}",
        got.throughput.steady_seconds
    );
    let sum: f64 = shard_summaries
        .iter()
        .map(|s| s.throughput.actions_per_second)
        .sum();
    assert!(
        // Rates are rounded to 3 significant digits; an average would be half.
        (got.throughput.actions_per_second - sum).abs() <= sum * 0.01,
        "merged {} actions/s, shards' sum {sum}",
        got.throughput.actions_per_second
    );
}
