//! The one QoS definition: what "within QoS" means for a run's verdict, a
//! sweep's steps and `peakhour capacity`'s answer alike (issue 25, item 4).
//!
//! A window holds QoS when
//!
//! 1. its **weighted p95** (the score, seed 002's "weighted 95th percentile
//!    response-time score") is within the limit, 1000 ms by default;
//! 2. every action with a **limit of its own** (a profile's
//!    `[qos.actions]`) has its p95 within that limit; actions without one
//!    are judged through the weighted p95 only, as seed 002 judged them;
//! 3. every action's **error ratio** is within the ceiling;
//! 4. every weighted action has at least the **minimum number of samples**
//!    (0 by default for a run, so a short run that misses a rare action is
//!    not failed for it; `capacity` asks for more, since a p95 of a handful
//!    of samples decides nothing);
//! 5. no **queue or memory is still growing** at the end of the window
//!    ([`still_growing`]): a server that keeps up only by piling work up
//!    does not carry its load, whatever its p95 says.
//!
//! [`QosRule::judge`] applies the rule to a [`QosMeasure`] and returns
//! every failed check; [`crate::Summary::compute`] calls it for the run's
//! verdict (checks 1-4), and the run adds check 5 once its monitor has
//! finished ([`crate::Summary::judge_growth`] with [`growth_in`] over the
//! steady window of the series it recorded), so the sweep and `capacity`
//! read one verdict that holds all five.

use std::collections::BTreeMap;

use crate::{QosFailure, QosThresholds, Summary};

/// The subject of the weighted-p95 failure (`score`).
pub const SCORE_SUBJECT: &str = "score";

/// The rule a window is held to.
#[derive(Clone, Debug, PartialEq)]
pub struct QosRule {
    /// The weighted p95's limit, ms.
    pub weighted_p95_ms: f64,
    /// Per-action p95 limits (ms), only for actions that have one of their own.
    pub action_p95_ms: BTreeMap<String, f64>,
    /// Largest errors / attempts of any action.
    pub max_error_ratio: f64,
    /// Fewest samples a weighted action must have (0: not checked).
    pub min_samples_per_action: u64,
}

impl QosRule {
    /// The rule of a run's recorded thresholds.
    pub fn from_thresholds(q: &QosThresholds) -> Self {
        Self {
            weighted_p95_ms: q.default_p95_ms,
            action_p95_ms: q.p95_ms.clone(),
            max_error_ratio: q.max_error_ratio,
            min_samples_per_action: q.min_samples_per_action,
        }
    }

    /// The p95 limit an action is held to, when it has its own.
    pub fn action_limit_ms(&self, action: &str) -> Option<f64> {
        self.action_p95_ms.get(action).copied()
    }

    /// Every check of the rule that `m` fails, each naming its subject (an
    /// action, `score`, or the growing metric) with the figures.
    pub fn judge(&self, m: &QosMeasure) -> Vec<QosFailure> {
        let mut out = Vec::new();
        if let Some(p95) = m.weighted_p95_ms
            && p95 > self.weighted_p95_ms
        {
            out.push(QosFailure {
                subject: SCORE_SUBJECT.to_owned(),
                reason: format!(
                    "weighted p95 {p95} ms is above the {} ms limit",
                    self.weighted_p95_ms
                ),
            });
        }
        for a in &m.actions {
            out.extend(self.judge_action(a));
        }
        for g in &m.growing {
            let reason = match &g.toward_cap {
                None => format!(
                    "{} was still growing at the end of the window ({:.1} -> {:.1} over its last half)",
                    g.label, g.from, g.to
                ),
                Some(c) => {
                    // Memory columns are KiB: said in MiB, as the lab's cap is.
                    let (unit, scale) = if g.metric.ends_with("_kb") {
                        (" MiB", 1024.0)
                    } else {
                        ("", 1.0)
                    };
                    format!(
                        "{} rose {:.2}{unit} per second over the window's last half ({:.1} -> {:.1}{unit}): at that rate it reaches its cap of {:.0}{unit} {:.0} s after the window, within the {:.0} s left of the hour the window stands for",
                        g.label,
                        c.per_second / scale,
                        g.from / scale,
                        g.to / scale,
                        c.cap / scale,
                        c.after_s,
                        c.horizon_s
                    )
                }
            };
            out.push(QosFailure {
                subject: g.metric.clone(),
                reason,
            });
        }
        out
    }

    fn judge_action(&self, a: &ActionMeasure) -> Vec<QosFailure> {
        let mut out = Vec::new();
        let fail = |reason: String| QosFailure {
            subject: a.name.clone(),
            reason,
        };
        if let (Some(limit), Some(p95)) = (self.action_limit_ms(&a.name), a.p95_ms)
            && p95 > limit
        {
            out.push(fail(format!("p95 {p95} ms is above the {limit} ms limit")));
        }
        let attempts = a.count + a.errors;
        if attempts > 0 {
            let ratio = a.errors as f64 / attempts as f64;
            if ratio > self.max_error_ratio {
                out.push(fail(format!(
                    "{} of {attempts} attempts failed ({:.2}%), above the {:.2}% limit",
                    a.errors,
                    ratio * 100.0,
                    self.max_error_ratio * 100.0
                )));
            }
        }
        if a.weighted && a.count < self.min_samples_per_action {
            out.push(fail(format!(
                "{} samples, fewer than the {} a p95 needs here",
                a.count, self.min_samples_per_action
            )));
        }
        out
    }
}

/// What the rule looks at in one window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QosMeasure {
    /// The score's weighted p95, ms.
    pub weighted_p95_ms: Option<f64>,
    /// Each action's figures.
    pub actions: Vec<ActionMeasure>,
    /// Queues and memory still growing at the end ([`still_growing`]).
    pub growing: Vec<Growth>,
}

impl QosMeasure {
    /// The measure of a run's summary; `growing` from its monitor series
    /// (the caller's, since the summary keeps no series).
    pub fn of_summary(s: &Summary, growing: Vec<Growth>) -> Self {
        Self::of_parts(&s.meta, &s.actions, &s.score, growing)
    }

    /// The measure of a run's steady-state actions and score (what
    /// [`Summary::compute`] judges before the summary exists).
    pub fn of_parts(
        meta: &crate::RunMeta,
        actions: &std::collections::BTreeMap<String, crate::ActionSummary>,
        score: &crate::Score,
        growing: Vec<Growth>,
    ) -> Self {
        Self {
            weighted_p95_ms: score.weighted_p95_ms,
            actions: actions
                .iter()
                .map(|(name, a)| ActionMeasure {
                    name: name.clone(),
                    count: a.count,
                    errors: a.errors,
                    p95_ms: a.p95_ms,
                    weighted: meta.action_weights.contains_key(name),
                })
                .collect(),
            growing,
        }
    }
}

/// One action in a window.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionMeasure {
    /// The action's name.
    pub name: String,
    /// Successful samples.
    pub count: u64,
    /// Failed attempts.
    pub errors: u64,
    /// Its p95, ms.
    pub p95_ms: Option<f64>,
    /// The profile weighs it in the score (so the sample minimum applies).
    pub weighted: bool,
}

/// A metric still growing at the end of the window.
#[derive(Clone, Debug, PartialEq)]
pub struct Growth {
    /// The `monitor.csv` column.
    pub metric: String,
    /// What it is, for people.
    pub label: String,
    /// The fitted value at the start of the window's last half.
    pub from: f64,
    /// The fitted value at the end.
    pub to: f64,
    /// Set when the metric has a cap (a shaped lab's memory) that its
    /// trend reaches within the horizon ([`reaches_cap`]); `None` when it
    /// fails as plain growth ([`still_growing`]).
    pub toward_cap: Option<CapReach>,
}

/// A trend that reaches its metric's cap within the horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct CapReach {
    /// The cap, in the metric's unit.
    pub cap: f64,
    /// The fitted rise per second over the window's last half.
    pub per_second: f64,
    /// Seconds after the window's end at which the trend reaches the cap
    /// (0 when the fitted end is already there).
    pub after_s: f64,
    /// The horizon judged, seconds after the window's end.
    pub horizon_s: f64,
}

/// Fewest samples in the last half of a window for [`still_growing`] to judge.
pub const GROWTH_MIN_SAMPLES: usize = 6;

/// A rise over the window's last half below this share of the level is
/// not growth (a queue of 10 that ends at 10.4 is flat).
pub const GROWTH_MIN_RISE: f64 = 0.10;

/// The monitor columns that must not still be growing at the end of a
/// window, of those `names` holds: Postfix's queues, and a shaped lab's
/// memory without its page cache (`lab_memory_no_cache_kb`; the page cache
/// grows with the mail written and is given back under pressure), or the
/// whole charge (`lab_memory_kb`) where a monitor did not record that.
pub fn growth_columns(names: &[String]) -> Vec<String> {
    use crate::monitor::columns::{LAB_MEMORY_KB, LAB_MEMORY_NO_CACHE_KB};
    let has = |c: &str| names.iter().any(|n| n == c);
    let memory = if has(LAB_MEMORY_NO_CACHE_KB) {
        Some(LAB_MEMORY_NO_CACHE_KB)
    } else if has(LAB_MEMORY_KB) {
        Some(LAB_MEMORY_KB)
    } else {
        None
    };
    names
        .iter()
        .filter(|n| n.starts_with("postfix_queue_"))
        .cloned()
        .chain(memory.map(str::to_owned))
        .collect()
}

/// The hour a measured window stands for, seconds: the peak hour (or the
/// morning's first hour) whose steady load the window samples.
pub const WINDOW_STANDS_FOR_S: f64 = 3600.0;

/// The horizon over which a capped metric's trend must stay below its cap:
/// the rest of the hour a window of `window_s` seconds stands for (the
/// window is its start; a window of an hour or more needs no projection).
pub fn cap_horizon_s(window_s: f64) -> f64 {
    (WINDOW_STANDS_FOR_S - window_s).max(0.0)
}

/// What is still growing at the end of `window` in `table`
/// ([`growth_columns`], each judged by [`still_growing`] with
/// [`GROWTH_MIN_RISE`]), and the columns judged (those with enough samples).
/// `memory_cap_kb` is a shaped lab's memory cap: the memory column then
/// also fails when its trend reaches the cap within [`cap_horizon_s`] of
/// the window ([`reaches_cap`]).
pub fn growth_in(
    table: &crate::monitor::MetricTable,
    window: crate::monitor::TimeWindow,
    memory_cap_kb: Option<f64>,
) -> (Vec<Growth>, Vec<String>) {
    use crate::monitor::columns::{LAB_MEMORY_KB, LAB_MEMORY_NO_CACHE_KB};
    let mut growing = Vec::new();
    let mut judged = Vec::new();
    let horizon = cap_horizon_s(window.end_s - window.start_s);
    for name in growth_columns(table.names()) {
        let Some(values) = table.column(&name) else {
            continue;
        };
        let series = crate::monitor::server::finite_samples_in(table, &values, window);
        let Some((from, to, grows)) = still_growing(&series, GROWTH_MIN_RISE) else {
            continue;
        };
        let is_memory = name == LAB_MEMORY_NO_CACHE_KB || name == LAB_MEMORY_KB;
        let toward_cap = memory_cap_kb
            .filter(|_| is_memory)
            .and_then(|cap| reaches_cap(&series, cap, horizon));
        if grows || toward_cap.is_some() {
            growing.push(Growth {
                metric: name.clone(),
                label: name.replace('_', " "),
                from,
                to,
                toward_cap,
            });
        }
        judged.push(name);
    }
    (growing, judged)
}

/// The least-squares line over the last half of a window's series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// Rise per second.
    pub slope: f64,
    /// The slope's standard error.
    pub slope_se: f64,
    /// The fitted value at the start of the last half.
    pub from: f64,
    /// The fitted value at the end.
    pub to: f64,
    /// The mean of the last half.
    pub mean: f64,
}

impl Trend {
    /// The rise per second where it is real (above three standard errors),
    /// else 0: a flat level's wobble is no trend.
    pub fn real_rise_per_s(&self) -> f64 {
        if self.slope > 0.0 && self.slope > 3.0 * self.slope_se {
            self.slope
        } else {
            0.0
        }
    }
}

/// The least-squares line over the last half of `series` (time in seconds,
/// value): the window's steady part, after what the sessions' start moved.
/// `None` with fewer than [`GROWTH_MIN_SAMPLES`] samples there.
pub fn last_half_trend(series: &[(f64, f64)]) -> Option<Trend> {
    let (start, end) = (series.first()?.0, series.last()?.0);
    let half = start + (end - start) / 2.0;
    let tail: Vec<(f64, f64)> = series.iter().copied().filter(|p| p.0 >= half).collect();
    if tail.len() < GROWTH_MIN_SAMPLES {
        return None;
    }
    let n = tail.len() as f64;
    let (mt, mv) = (
        tail.iter().map(|p| p.0).sum::<f64>() / n,
        tail.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = tail.iter().map(|p| (p.0 - mt).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = tail.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum::<f64>() / sxx;
    let residual: f64 = tail
        .iter()
        .map(|p| (p.1 - (mv + slope * (p.0 - mt))).powi(2))
        .sum();
    Some(Trend {
        slope,
        slope_se: (residual / (n - 2.0) / sxx).sqrt(),
        from: mv + slope * (half - mt),
        to: mv + slope * (end - mt),
        mean: mv,
    })
}

/// Whether the trend of `series` over the window's last half, held for
/// `horizon_s` seconds after its end, reaches `cap`: the fitted rise must
/// be real (above three standard errors, so the noise of a flat level near
/// its cap does not fail it) and the fitted end plus the rise over the
/// horizon at or above the cap. A linear trend is the cautious reading of
/// memory whose rise slows (caches filling): it fails some windows whose
/// memory would have levelled off below the cap, and none that would have
/// reached it. `None` when it does not reach the cap, or too few samples.
pub fn reaches_cap(series: &[(f64, f64)], cap: f64, horizon_s: f64) -> Option<CapReach> {
    let trend = last_half_trend(series)?;
    let slope = trend.real_rise_per_s();
    if slope <= 0.0 {
        return None;
    }
    let after_s = ((cap - trend.to) / slope).max(0.0);
    (after_s <= horizon_s).then_some(CapReach {
        cap,
        per_second: slope,
        after_s,
        horizon_s,
    })
}

/// Whether `series` (time in seconds, value) is still growing at the end of
/// its window: the least-squares line over the window's last half rises by
/// more than `min_rise` of the mean and by more than three standard
/// errors of that rise. A level that stepped up early and stays flat is not
/// growing; a queue that rises to the end is. `None` with too few samples.
pub fn still_growing(series: &[(f64, f64)], min_rise: f64) -> Option<(f64, f64, bool)> {
    let t = last_half_trend(series)?;
    let span = series.last()?.0 - (series.first()?.0 + series.last()?.0) / 2.0;
    let rise = t.slope * span;
    let growing = rise > min_rise * t.mean.abs().max(1.0) && rise > 3.0 * t.slope_se * span;
    Some((t.from, t.to, growing))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn rule() -> QosRule {
        QosRule {
            weighted_p95_ms: 1000.0,
            action_p95_ms: BTreeMap::new(),
            max_error_ratio: 0.01,
            min_samples_per_action: 0,
        }
    }

    fn action(name: &str, p95: f64, count: u64, errors: u64) -> ActionMeasure {
        ActionMeasure {
            name: name.into(),
            count,
            errors,
            p95_ms: Some(p95),
            weighted: true,
        }
    }

    #[test]
    fn issue_25_item_4_one_slow_action_without_a_limit_of_its_own_is_judged_through_the_weighted_p95()
     {
        // The sweep of issue 25: weighted p95 977 ms, one action above 1000 ms.
        let m = QosMeasure {
            weighted_p95_ms: Some(977.0),
            actions: vec![action("read", 900.0, 500, 0), action("move", 1300.0, 40, 0)],
            growing: vec![],
        };
        assert!(rule().judge(&m).is_empty());
        let mut strict = rule();
        strict.action_p95_ms.insert("move".into(), 1000.0);
        let failures = strict.judge(&m);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].subject, "move");
    }

    #[test]
    fn issue_25_item_4_each_check_of_the_rule_fails_on_its_own() {
        let r = QosRule {
            min_samples_per_action: 20,
            ..rule()
        };
        let slow = QosMeasure {
            weighted_p95_ms: Some(1001.0),
            actions: vec![action("read", 1001.0, 100, 0)],
            growing: vec![],
        };
        assert_eq!(r.judge(&slow)[0].subject, SCORE_SUBJECT);
        let errors = QosMeasure {
            weighted_p95_ms: Some(10.0),
            actions: vec![action("read", 10.0, 98, 2)],
            growing: vec![],
        };
        assert!(r.judge(&errors)[0].reason.contains("2 of 100 attempts"));
        let few = QosMeasure {
            weighted_p95_ms: Some(10.0),
            actions: vec![action("read", 10.0, 19, 0)],
            growing: vec![],
        };
        assert!(r.judge(&few)[0].reason.contains("19 samples"));
        let growing = QosMeasure {
            weighted_p95_ms: Some(10.0),
            actions: vec![action("read", 10.0, 100, 0)],
            growing: vec![Growth {
                metric: "queue_active".into(),
                label: "mail queue".into(),
                from: 10.0,
                to: 200.0,
                toward_cap: None,
            }],
        };
        assert_eq!(r.judge(&growing)[0].subject, "queue_active");
        let fine = QosMeasure {
            weighted_p95_ms: Some(1000.0),
            actions: vec![action("read", 1000.0, 20, 0)],
            growing: vec![],
        };
        assert!(r.judge(&fine).is_empty(), "limits are inclusive");
    }

    #[test]
    fn a_queue_rising_to_the_end_is_growing_and_a_level_that_stepped_up_early_is_not() {
        let rising: Vec<(f64, f64)> = (0..40)
            .map(|i| (f64::from(i), f64::from(i) * 5.0))
            .collect();
        assert!(still_growing(&rising, 0.05).unwrap().2);
        let stepped: Vec<(f64, f64)> = (0..40)
            .map(|i| {
                (
                    f64::from(i),
                    if i < 5 {
                        10.0
                    } else {
                        100.0 + f64::from(i % 3)
                    },
                )
            })
            .collect();
        assert!(!still_growing(&stepped, 0.05).unwrap().2);
        assert!(
            still_growing(&rising[..8], 0.05).is_none(),
            "too few samples"
        );
    }

    /// A monitor table: a queue rising to the end, the lab's page cache
    /// rising with it, the lab's memory without page cache flat.
    fn monitor_table() -> crate::monitor::MetricTable {
        let mut csv = String::from(
            "time_s,postfix_queue_active,postfix_queue_deferred,lab_memory_kb,lab_memory_no_cache_kb\n",
        );
        for t in 0..40 {
            let t = f64::from(t);
            let flat = 100_000.0 + (t % 3.0);
            csv.push_str(&format!(
                "{t},{},0,{},{flat}\n",
                t * 5.0,
                200_000.0 + t * 10_000.0
            ));
        }
        crate::monitor::MetricTable::from_csv(csv.as_bytes(), 100).unwrap()
    }

    /// Issue 25 (c): the run's verdict makes the growth check itself, on the
    /// monitor's series, so that `capacity` never fails a step the run passed.
    #[test]
    fn issue_25_a_queue_still_growing_fails_the_runs_own_verdict_and_page_cache_does_not() {
        let table = monitor_table();
        let (growing, judged) = growth_in(&table, crate::monitor::TimeWindow::new(0.0, 40.0), None);
        assert_eq!(
            judged,
            [
                "postfix_queue_active",
                "postfix_queue_deferred",
                "lab_memory_no_cache_kb"
            ]
        );
        let names: Vec<&str> = growing.iter().map(|g| g.metric.as_str()).collect();
        assert_eq!(names, ["postfix_queue_active"]);

        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../report/tests/fixtures/run-small/summary.json"
        );
        let mut summary: Summary =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(summary.verdict, crate::Verdict::Pass);
        summary.judge_growth(growing, judged.clone());
        assert_eq!(summary.verdict, crate::Verdict::Fail);
        assert_eq!(summary.qos.failures.len(), 1);
        assert_eq!(summary.qos.failures[0].subject, "postfix_queue_active");
        assert!(summary.qos.failures[0].reason.contains("still growing"));
        assert_eq!(summary.qos.growth_checked, judged);

        // Without the column that leaves the page cache out, the whole charge.
        assert_eq!(
            growth_columns(&["lab_memory_kb".to_owned()]),
            ["lab_memory_kb"]
        );
    }

    /// A window's memory in KiB: `level` at its start, rising `per_s` KiB a
    /// second, with a wobble of a few KiB (one sample a second).
    fn memory_series(seconds: u32, level: f64, per_s: f64) -> Vec<(f64, f64)> {
        (0..seconds)
            .map(|i| {
                let t = f64::from(i);
                (t, level + per_s * t + f64::from(i % 4) * 300.0)
            })
            .collect()
    }

    const MIB: f64 = 1024.0;

    #[test]
    fn issue_25_item_1_memory_rising_slowly_toward_its_cap_fails_within_the_hour() {
        // The 1,340-user step on the 1 GiB lab: 923 -> 977 MiB over 90 s,
        // a 2% rise over the last half, which plain growth lets pass.
        let series = memory_series(90, 923.0 * MIB, 0.6 * MIB);
        let (_, _, grows) = still_growing(&series, GROWTH_MIN_RISE).unwrap();
        assert!(!grows, "too small a rise for the plain growth check");
        let reach = reaches_cap(&series, 1024.0 * MIB, cap_horizon_s(90.0)).unwrap();
        assert!(
            (reach.per_second - 0.6 * MIB).abs() < 0.05 * MIB,
            "{reach:?}"
        );
        // (1024 - 923 - 0.6 * 89) MiB left at 0.6 MiB/s: about 79 s.
        assert!((reach.after_s - 79.0).abs() < 5.0, "{reach:?}");
        assert_eq!(reach.horizon_s, 3510.0);

        // The same rise with more room: at 500 MiB, 0.02 MiB/s adds 70 MiB
        // in the hour, far from the cap.
        let slow = memory_series(90, 500.0 * MIB, 0.02 * MIB);
        assert!(reaches_cap(&slow, 1024.0 * MIB, 3510.0).is_none());
        // Reaching the cap only after the horizon passes; within it fails.
        let late = memory_series(600, 700.0 * MIB, 0.05 * MIB);
        let at = reaches_cap(&late, 1024.0 * MIB, 1.0e6).unwrap().after_s;
        assert!(reaches_cap(&late, 1024.0 * MIB, at - 60.0).is_none());
        assert!(reaches_cap(&late, 1024.0 * MIB, at + 60.0).is_some());
    }

    #[test]
    fn issue_25_item_1_a_flat_level_near_its_cap_or_a_falling_one_does_not_reach_it() {
        // Flat at 1,000 of 1,024 MiB, with only its wobble: no real rise.
        let flat = memory_series(90, 1000.0 * MIB, 0.0);
        assert!(reaches_cap(&flat, 1024.0 * MIB, 3510.0).is_none());
        let falling = memory_series(90, 1000.0 * MIB, -0.5 * MIB);
        assert!(reaches_cap(&falling, 1024.0 * MIB, 3510.0).is_none());
        assert!(reaches_cap(&flat[..5], 1024.0 * MIB, 3510.0).is_none());
        // A window of an hour or more projects nothing beyond itself.
        assert_eq!(cap_horizon_s(600.0), 3000.0);
        assert_eq!(cap_horizon_s(7200.0), 0.0);
    }

    #[test]
    fn issue_25_item_1_the_runs_verdict_fails_a_shaped_labs_memory_on_course_to_its_cap() {
        let mut csv = String::from("time_s,lab_memory_kb,lab_memory_no_cache_kb\n");
        for (t, v) in memory_series(90, 923.0 * MIB, 0.6 * MIB) {
            csv.push_str(&format!("{t},{},{v}\n", 1024.0 * MIB));
        }
        let table = crate::monitor::MetricTable::from_csv(csv.as_bytes(), 100).unwrap();
        let window = crate::monitor::TimeWindow::new(0.0, 90.0);
        let (uncapped, judged) = growth_in(&table, window, None);
        assert!(uncapped.is_empty(), "{uncapped:?}");
        assert_eq!(judged, ["lab_memory_no_cache_kb"]);
        let (growing, _) = growth_in(&table, window, Some(1024.0 * MIB));
        assert_eq!(growing.len(), 1);
        assert!(growing[0].toward_cap.is_some());
        let failures = rule().judge(&QosMeasure {
            growing,
            ..QosMeasure::default()
        });
        assert_eq!(failures[0].subject, "lab_memory_no_cache_kb");
        assert!(
            failures[0].reason.contains("rose 0.60 MiB per second")
                && failures[0].reason.contains("reaches its cap of 1024 MiB")
                && failures[0]
                    .reason
                    .contains("within the 3510 s left of the hour"),
            "{}",
            failures[0].reason
        );
    }
}
