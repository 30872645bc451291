//! `peakhour capacity`'s answer (`answer.json`, schema
//! `schemas/answer.schema.json`) and its one statement (issue 25, item 4).
//! Pure: built from the steps' summaries by the caller.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The format of `answer.json`.
pub const ANSWER_FORMAT_VERSION: u32 = 1;

/// The answer: how many real users the server carries through its peak
/// hour and its morning, with the steps that measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// [`ANSWER_FORMAT_VERSION`].
    pub format_version: u32,
    /// The profile.
    pub profile: String,
    /// `lab` or `explicit`.
    pub target: String,
    /// The answer: the largest measured number of users within QoS in every
    /// window, below the smallest that failed (`users_low`); `None` when even
    /// the smallest step failed or no step finished.
    pub users: Option<u32>,
    /// The bracket's lower end: the largest passing step.
    pub users_low: Option<u32>,
    /// The bracket's upper end: the smallest failing step; `None` when every
    /// step passed (the answer is then "at least").
    pub users_high: Option<u32>,
    /// The window that limits (`peak-hour` or `morning`).
    pub window: String,
    /// The bracket of each window on its own.
    pub windows: BTreeMap<String, WindowBracket>,
    /// The profile's busiest hour, actions per user.
    pub peak_actions_per_user_hour: Option<f64>,
    /// The same for `users` users together.
    pub peak_actions_per_hour: Option<f64>,
    /// The server's settings that decide how many sessions it holds, as read
    /// (a lab's Dovecot process and client limits); empty where unreadable.
    pub server_settings: BTreeMap<String, u64>,
    /// What ran out first just above the answer.
    pub first_exhausted: FirstExhausted,
    /// The planner's prediction beside the measurement.
    pub model: ModelComparison,
    /// Every measured step and window, in the order they ran.
    pub steps: Vec<AnswerStep>,
    /// The bracket is within the precision asked for.
    pub complete: bool,
    /// Why the search ended.
    pub ended: String,
    /// The precision asked for (share of the answer).
    pub precision: f64,
    /// Budget, seconds.
    pub budget_s: f64,
    /// Time the steps took, seconds (resumed searches included).
    pub elapsed_s: f64,
    /// The answer in sentences ([`Answer::statement`]).
    pub statement: Vec<String>,
}

/// One window's bracket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowBracket {
    /// Its largest passing step below its smallest failing one.
    pub users_low: Option<u32>,
    /// Its smallest failing step.
    pub users_high: Option<u32>,
}

/// What ran out first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstExhausted {
    /// The resource (`CPU`, `memory`, `sessions`, ... from the monitor or
    /// the QoS failures), or `none measured`.
    pub resource: String,
    /// The step it was seen at (the smallest failing one).
    pub users: Option<u32>,
    /// The evidence, in words with figures.
    pub evidence: String,
}

/// The model's prediction and the measured answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelComparison {
    /// The model's users at QoS, when a model was given.
    pub users: Option<u32>,
    /// Where it came from (the plan.json).
    pub source: Option<String>,
    /// (model - measured) / measured, in percent.
    pub difference_pct: Option<f64>,
}

/// One measured step in one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnswerStep {
    /// Real users.
    pub users: u32,
    /// The window (`peak-hour`, `morning`).
    pub window: String,
    /// The step's run directory, relative to the output directory.
    pub run_dir: String,
    /// Sessions held at once, as counted on the server's side (the
    /// monitor's `dovecot_connections`, its largest value in the window).
    pub sessions_held: Option<u32>,
    /// `server` when `sessions_held` was counted by the monitor on the
    /// server's ports; `none` when it could not be.
    pub sessions_source: String,
    /// The weighted p95, ms.
    pub weighted_p95_ms: Option<f64>,
    /// The one QoS rule held ([`crate::qos`]).
    pub qos_pass: bool,
    /// Every failed check, as `subject: reason`.
    pub qos_failures: Vec<String>,
    /// Each action's p95, ms.
    pub action_p95_ms: BTreeMap<String, Option<f64>>,
    /// The monitor's bottleneck resource.
    pub bottleneck: Option<String>,
    /// The figures behind it.
    pub bottleneck_evidence: Option<String>,
    /// A server cap the step reached (a shaped lab's memory at its limit),
    /// with the figures; the monitor's bottleneck may name another resource.
    /// (Absent from a state saved before it existed.)
    #[serde(default)]
    pub at_cap: Option<String>,
    /// The morning's logons per second, measured.
    pub logons_per_second: Option<f64>,
    /// The morning's logon p95, ms.
    pub logon_p95_ms: Option<f64>,
    /// Wall-clock seconds the step took.
    pub wall_s: f64,
    /// The lab's health check found it unhealthy after this step, and the
    /// search restarted it (same settings, mail kept) before the next step.
    /// (Absent from a state saved before it existed.)
    #[serde(default)]
    pub lab_restarted: bool,
    /// What that health check found (servers not running, endpoints not
    /// answering); `None` when the lab was healthy or not checked.
    #[serde(default)]
    pub lab_unhealthy: Option<String>,
}

impl Answer {
    /// The steps at `users` users.
    pub fn steps_at(&self, users: u32) -> impl Iterator<Item = &AnswerStep> {
        self.steps.iter().filter(move |s| s.users == users)
    }

    /// The one statement: N users (the bracket), the peak-hour rate that
    /// means, the server settings that decide it, the p95s at N, what ran
    /// out first just above N, and the model beside the measurement.
    pub fn statement(&self) -> Vec<String> {
        let mut out = vec![self.headline()];
        if let (Some(n), Some(rate)) = (self.users, self.peak_actions_per_user_hour) {
            out.push(format!(
                "At {n} users the peak hour is {rate:.1} actions per user, {:.0} actions per hour in all ({:.1} per second).",
                rate * f64::from(n),
                rate * f64::from(n) / 3600.0
            ));
        }
        if !self.server_settings.is_empty() {
            let settings: Vec<String> = self
                .server_settings
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            out.push(format!(
                "The server's settings that decide the sessions it holds: {}.",
                settings.join(", ")
            ));
        }
        if let Some(n) = self.users {
            for s in self.steps_at(n) {
                let sessions = s
                    .sessions_held
                    .map(|h| format!(", {h} sessions held (counted on the server)"))
                    .unwrap_or_default();
                out.push(format!(
                    "At {n} users, {}: weighted p95 {}{sessions}.",
                    s.window,
                    ms(s.weighted_p95_ms)
                ));
            }
        }
        let f = &self.first_exhausted;
        if let Some(at) = f.users {
            out.push(format!(
                "Just above, at {at} users, {} ran out first: {}.",
                f.resource, f.evidence
            ));
        }
        out.push(self.model_sentence());
        out
    }

    fn headline(&self) -> String {
        let window = &self.window;
        match (self.users_low, self.users_high) {
            (Some(low), Some(high)) => format!(
                "This server carries {low} real users of profile {} through the {window} window within QoS (bracket {low}-{high}: {high} failed){}.",
                self.profile,
                if self.complete {
                    ""
                } else {
                    "; the bracket is wider than asked, the search ended early"
                }
            ),
            (Some(low), None) => format!(
                "This server carries at least {low} real users of profile {} within QoS: every step passed ({}).",
                self.profile, self.ended
            ),
            (None, Some(high)) => format!(
                "This server did not hold QoS even at {high} users of profile {}, the smallest step ({}).",
                self.profile, self.ended
            ),
            (None, None) => format!("No step finished ({}).", self.ended),
        }
    }

    fn model_sentence(&self) -> String {
        match (self.model.users, self.users, self.model.difference_pct) {
            (Some(m), Some(n), Some(d)) => format!(
                "The planner's model predicted {m} users; measured {n}: the model is {d:+.0}% off{}.",
                if d.abs() > 15.0 {
                    ", more than 15%: trust the measurement, which held real sessions at the real rate"
                } else {
                    ""
                }
            ),
            (Some(m), _, _) => format!("The planner's model predicted {m} users."),
            _ => "No model was given (--model PLAN_JSON from `peakhour plan`), so nothing to compare the measurement with.".to_owned(),
        }
    }
}

/// The limiting window: the one whose own bracket is lowest (the first
/// window that failed at the smallest failing step); with no failure, the
/// one with the highest weighted p95 at the answer.
pub fn limiting_window(
    windows: &BTreeMap<String, WindowBracket>,
    steps: &[AnswerStep],
    answer: Option<u32>,
) -> Option<String> {
    let failing = windows
        .iter()
        .filter_map(|(w, b)| b.users_high.map(|h| (h, w)))
        .min_by_key(|(h, _)| *h);
    if let Some((_, w)) = failing {
        return Some(w.clone());
    }
    let n = answer?;
    steps
        .iter()
        .filter(|s| s.users == n)
        .max_by(|a, b| {
            a.weighted_p95_ms
                .unwrap_or(0.0)
                .total_cmp(&b.weighted_p95_ms.unwrap_or(0.0))
        })
        .map(|s| s.window.clone())
}

fn ms(x: Option<f64>) -> String {
    x.map_or_else(|| "not measured".to_owned(), |v| format!("{v} ms"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn step(users: u32, window: &str, p95: f64, pass: bool) -> AnswerStep {
        AnswerStep {
            users,
            window: window.into(),
            run_dir: format!("step-{users}u-{window}"),
            sessions_held: Some(users),
            sessions_source: "server".into(),
            weighted_p95_ms: Some(p95),
            qos_pass: pass,
            qos_failures: vec![],
            action_p95_ms: BTreeMap::new(),
            bottleneck: None,
            bottleneck_evidence: None,
            at_cap: None,
            lab_restarted: false,
            lab_unhealthy: None,
            logons_per_second: None,
            logon_p95_ms: None,
            wall_s: 1.0,
        }
    }

    #[test]
    fn issue_25_item_4_the_limiting_window_is_the_one_that_failed_first() {
        let windows: BTreeMap<String, WindowBracket> = [
            (
                "peak-hour".to_string(),
                WindowBracket {
                    users_low: Some(200),
                    users_high: None,
                },
            ),
            (
                "morning".to_string(),
                WindowBracket {
                    users_low: Some(100),
                    users_high: Some(200),
                },
            ),
        ]
        .into();
        assert_eq!(
            limiting_window(&windows, &[], Some(100)).as_deref(),
            Some("morning")
        );
        let passing: BTreeMap<String, WindowBracket> = [
            ("peak-hour".to_string(), WindowBracket::default()),
            ("morning".to_string(), WindowBracket::default()),
        ]
        .into();
        let steps = [
            step(100, "peak-hour", 300.0, true),
            step(100, "morning", 500.0, true),
        ];
        assert_eq!(
            limiting_window(&passing, &steps, Some(100)).as_deref(),
            Some("morning")
        );
    }

    #[test]
    fn issue_25_item_4_the_statement_names_the_bracket_the_rate_the_settings_and_the_model() {
        let answer = Answer {
            format_version: ANSWER_FORMAT_VERSION,
            profile: "mmb-medium".into(),
            target: "lab".into(),
            users: Some(200),
            users_low: Some(200),
            users_high: Some(210),
            window: "peak-hour".into(),
            windows: BTreeMap::new(),
            peak_actions_per_user_hour: Some(30.0),
            peak_actions_per_hour: Some(6000.0),
            server_settings: [("imap process_limit".to_string(), 1000)].into(),
            first_exhausted: FirstExhausted {
                resource: "CPU".into(),
                users: Some(210),
                evidence: "97% busy".into(),
            },
            model: ModelComparison {
                users: Some(150),
                source: Some("plan.json".into()),
                difference_pct: Some(-25.0),
            },
            steps: vec![step(200, "peak-hour", 800.0, true)],
            complete: true,
            ended: "bracketed".into(),
            precision: 0.1,
            budget_s: 7200.0,
            elapsed_s: 3000.0,
            statement: vec![],
        };
        let text = answer.statement().join("\n");
        assert!(text.contains("carries 200 real users"), "{text}");
        assert!(text.contains("bracket 200-210"), "{text}");
        assert!(text.contains("6000 actions per hour"), "{text}");
        assert!(text.contains("imap process_limit = 1000"), "{text}");
        assert!(
            text.contains("weighted p95 800 ms, 200 sessions held"),
            "{text}"
        );
        assert!(
            text.contains("at 210 users, CPU ran out first: 97% busy"),
            "{text}"
        );
        assert!(text.contains("-25% off, more than 15%"), "{text}");
    }
}
