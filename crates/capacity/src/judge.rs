//! One step judged: the run's verdict (the one QoS rule, whose growth check
//! the run made on the monitor's series it recorded), the sessions the
//! server held (from those series), and what ran out.

use std::path::Path;

use peakhour_analysis::Summary;
use peakhour_analysis::capacity::answer::{AnswerStep, FirstExhausted, ModelComparison};
use peakhour_analysis::monitor::columns::DOVECOT_CONNECTIONS;
use peakhour_rundir::RunDir;

use crate::state::StateSettings;
use crate::{CapacityError, StepRequest};

/// Fewer actions than this in a window make its p95 a guess: say so.
const FEW_SAMPLES: u64 = 20;

/// The step of `request` as the answer keeps it.
pub(crate) fn step(
    request: &StepRequest,
    out: &Path,
    summary: &Summary,
    wall_s: f64,
) -> Result<AnswerStep, CapacityError> {
    let dir = RunDir::new(&request.out);
    let monitor = dir.read_monitor()?;
    let (start, end) = (
        summary.steady.start_s,
        summary.steady.start_s + summary.steady.length_s,
    );
    let series = |name: &str| -> Vec<(f64, f64)> {
        let Some(table) = &monitor else {
            return Vec::new();
        };
        let Some(values) = table.column(name) else {
            return Vec::new();
        };
        table
            .times()
            .iter()
            .copied()
            .zip(values)
            .filter(|(t, v)| *t >= start && *t <= end && v.is_finite())
            .collect()
    };
    let samples: u64 = summary.actions.values().map(|a| a.count + a.errors).sum();
    if samples < FEW_SAMPLES {
        eprintln!(
            "capacity: warning: the {} window at {} users held only {samples} actions: at real users' rates a short window says little; lengthen --duration",
            request.window, request.users
        );
    }
    // The step's verdict is the run's: the one QoS rule, its growth check
    // included (the run judged the monitor's series it recorded), and the
    // checks the rule does not see (delivery, panics, a run with no sample).
    let mut qos_failures: Vec<String> = summary
        .qos
        .failures
        .iter()
        .map(|f| format!("{}: {}", f.subject, f.reason))
        .collect();
    if summary.qos.growth_checked.is_empty() {
        eprintln!(
            "capacity: warning: the {} window at {} users was not checked for a queue or memory still growing (no monitor series; see its monitor.csv)",
            request.window, request.users
        );
    }
    qos_failures.dedup();
    let sessions = series(DOVECOT_CONNECTIONS)
        .iter()
        .map(|p| p.1)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let run_dir = request
        .out
        .strip_prefix(out)
        .unwrap_or(&request.out)
        .display()
        .to_string();
    Ok(AnswerStep {
        users: request.users,
        window: request.window.to_string(),
        run_dir,
        sessions_held: sessions.map(|s| s as u32),
        sessions_source: if sessions.is_some() { "server" } else { "none" }.into(),
        weighted_p95_ms: summary.score.weighted_p95_ms,
        qos_pass: qos_failures.is_empty(),
        qos_failures,
        action_p95_ms: summary
            .actions
            .iter()
            .map(|(k, a)| (k.clone(), a.p95_ms))
            .collect(),
        bottleneck: summary.bottleneck.as_ref().map(|b| b.resource.clone()),
        bottleneck_evidence: summary.bottleneck.as_ref().map(|b| b.evidence.clone()),
        at_cap: {
            use peakhour_analysis::monitor::columns::{LAB_MEMORY_KB, LAB_MEMORY_NO_CACHE_KB};
            let no_cache = series(LAB_MEMORY_NO_CACHE_KB);
            if no_cache.is_empty() {
                memory_at_cap(summary, &series(LAB_MEMORY_KB), LAB_MEMORY_KB)
            } else {
                memory_at_cap(summary, &no_cache, LAB_MEMORY_NO_CACHE_KB)
            }
        },
        logons_per_second: summary.logon_storm.as_ref().map(|l| l.logons_per_second),
        logon_p95_ms: summary.logon_storm.as_ref().and_then(|l| l.p95_ms),
        wall_s,
        lab_restarted: false,
        lab_unhealthy: None,
    })
}

/// A shaped lab whose memory reached its cap (within 2%) in the window: the
/// figures, since the monitor's bottleneck looks at the host's memory.
/// `column` is what `memory_kb` is: the charge without page cache where the
/// monitor recorded it (the page cache fills any cap with the mail `init`
/// wrote, so the whole charge sits at the cap from the smallest step on and
/// says nothing), else the whole charge.
fn memory_at_cap(summary: &Summary, memory_kb: &[(f64, f64)], column: &str) -> Option<String> {
    let cap = summary.limits.and_then(|l| l.memory_bytes)? as f64;
    let peak = memory_kb.iter().map(|p| p.1).fold(0.0, f64::max) * 1024.0;
    (peak >= 0.98 * cap).then(|| {
        format!(
            "the lab's memory reached {:.0} MiB of its {:.0} MiB cap (monitor.csv {column})",
            peak / 1_048_576.0,
            cap / 1_048_576.0
        )
    })
}

/// One line of progress for a finished step.
pub(crate) fn step_line(s: &AnswerStep) -> String {
    format!(
        "{} users, {}: weighted p95 {}, sessions held {}, QoS {}{}",
        s.users,
        s.window,
        s.weighted_p95_ms
            .map_or_else(|| "-".to_owned(), |v| format!("{v} ms")),
        s.sessions_held
            .map_or_else(|| "not counted".to_owned(), |n| n.to_string()),
        if s.qos_pass { "pass" } else { "fail" },
        if s.qos_failures.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.qos_failures.join("; "))
        }
    )
}

/// The profile's busiest-hour actions per user, from a step's summary.
pub(crate) fn peak_per_user_hour(out: &Path, step: &AnswerStep) -> Option<f64> {
    RunDir::new(out.join(&step.run_dir))
        .read_summary()
        .ok()?
        .peak_actions_per_user_hour
}

/// What ran out at a failing step: the monitor's saturated resource, else
/// sessions the server did not hold, else what the QoS failures name.
pub(crate) fn exhausted(s: &AnswerStep) -> FirstExhausted {
    let evidence = |head: String| {
        let mut parts = vec![head];
        parts.extend(s.qos_failures.iter().cloned());
        parts.join("; ")
    };
    if let Some(cap) = &s.at_cap {
        return FirstExhausted {
            resource: "memory".into(),
            users: Some(s.users),
            evidence: evidence(format!(
                "{cap}; the monitor's bottleneck: {}",
                s.bottleneck_evidence.as_deref().unwrap_or("none")
            )),
        };
    }
    // Memory whose trend reaches the cap within the hour is named before the
    // monitor's bottleneck, which reads the host's CPU (busy with neighbours
    // on a shared machine) and not the lab's cgroup.
    if let Some(f) = s
        .qos_failures
        .iter()
        .find(|f| f.starts_with("lab_memory") && f.contains("reaches its cap"))
    {
        return FirstExhausted {
            resource: "memory".into(),
            users: Some(s.users),
            evidence: evidence(format!(
                "the lab's memory (without page cache) rises toward its cap within the hour ({}); the monitor's bottleneck: {}",
                f.split(':').next().unwrap_or(f),
                s.bottleneck_evidence.as_deref().unwrap_or("none")
            )),
        };
    }
    let saturated = s.bottleneck.as_deref().filter(|r| *r != "none");
    if let Some(resource) = saturated {
        return FirstExhausted {
            resource: resource.to_owned(),
            users: Some(s.users),
            evidence: evidence(s.bottleneck_evidence.clone().unwrap_or_default()),
        };
    }
    if let Some(held) = s.sessions_held
        && held < s.users
    {
        return FirstExhausted {
            resource: "sessions".into(),
            users: Some(s.users),
            evidence: evidence(format!(
                "the server held {held} sessions for {} users",
                s.users
            )),
        };
    }
    let growing = s
        .qos_failures
        .iter()
        .find(|f| f.starts_with("postfix_queue_") || f.starts_with("lab_memory"));
    let resource = match growing {
        Some(f) if f.starts_with("lab_memory") => "memory",
        Some(_) => "mail queue",
        None => "response time (no saturated resource named by the monitor)",
    };
    FirstExhausted {
        resource: resource.into(),
        users: Some(s.users),
        evidence: evidence(
            s.bottleneck_evidence
                .clone()
                .unwrap_or_else(|| "no monitor figures".into()),
        ),
    }
}

/// The planner's users at QoS (else where its first resource runs out)
/// from a `plan.json`.
pub(crate) fn model_users(path: &Path) -> Result<ModelComparison, CapacityError> {
    let text = std::fs::read_to_string(path).map_err(|e| CapacityError::Io(path.into(), e))?;
    let plan: peakhour_analysis::plan::Plan = serde_json::from_str(&text).map_err(|e| {
        CapacityError::Usage(format!(
            "--model {}: not a plan.json from `peakhour plan` ({e})",
            path.display()
        ))
    })?;
    let users = plan
        .max_users_at_qos
        .as_ref()
        .map(|q| q.users)
        .or(plan.first_exhausted.as_ref().map(|e| e.users));
    Ok(ModelComparison {
        users: users.map(|u| u32::try_from(u).unwrap_or(u32::MAX)),
        source: Some(path.display().to_string()),
        difference_pct: None,
    })
}

/// Which setting differs between a saved search and this one.
pub(crate) fn settings_difference(saved: &StateSettings, now: &StateSettings) -> String {
    let mut out = Vec::new();
    let mut differ = |name: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{name}: {a} there, {b} now"));
        }
    };
    differ("profile", saved.profile.clone(), now.profile.clone());
    differ("target", saved.target.clone(), now.target.clone());
    differ("windows", saved.windows.join(","), now.windows.join(","));
    differ("seed", saved.seed.to_string(), now.seed.to_string());
    differ(
        "duration",
        format!("{:?}", saved.duration_s),
        format!("{:?}", now.duration_s),
    );
    differ(
        "ramp-up",
        saved.ramp_up_s.to_string(),
        now.ramp_up_s.to_string(),
    );
    differ(
        "qos-p95-ms",
        format!("{:?}", saved.qos_p95_ms),
        format!("{:?}", now.qos_p95_ms),
    );
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Issue 25 (the answer), item 1: a step failed by memory on course to
    /// the lab's cap names memory, though the monitor's bottleneck (the
    /// host's CPU, busy with neighbours) names CPU; without that failure
    /// the bottleneck is what ran out.
    #[test]
    fn issue_25_item_1_memory_on_course_to_its_cap_is_what_ran_out_before_the_hosts_cpu() {
        let mut s = AnswerStep {
            users: 850,
            window: "peak-hour".into(),
            run_dir: "step-850u-peak-hour".into(),
            sessions_held: Some(850),
            sessions_source: "server".into(),
            weighted_p95_ms: Some(19.8),
            qos_pass: false,
            qos_failures: vec![
                "lab_memory_no_cache_kb: lab memory no cache kb rose 0.29 MiB per second over the window's last half (625.6 -> 638.4 MiB): at that rate it reaches its cap of 1024 MiB 1341 s after the window, within the 3510 s left of the hour the window stands for".into(),
            ],
            action_p95_ms: BTreeMap::new(),
            bottleneck: Some("cpu".into()),
            bottleneck_evidence: Some("97% busy".into()),
            at_cap: None,
            logons_per_second: None,
            logon_p95_ms: None,
            wall_s: 120.0,
            lab_restarted: false,
            lab_unhealthy: None,
        };
        let found = exhausted(&s);
        assert_eq!(found.resource, "memory");
        assert!(
            found.evidence.contains("1341 s after the window"),
            "{}",
            found.evidence
        );
        assert!(found.evidence.contains("97% busy"), "{}", found.evidence);
        s.qos_failures = vec!["score: weighted p95 1500 ms is above the 1000 ms limit".into()];
        assert_eq!(exhausted(&s).resource, "cpu");
    }
}
