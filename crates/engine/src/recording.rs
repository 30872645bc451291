//! A mail run's record: the delivery books, the completion of a fixed-count
//! profile and the metadata of its plan, added to what the run core's
//! [`RunRecorder`] measured.

use std::time::SystemTime;

use peakhour_analysis::{
    AnalysisError, Completion, DeliveryRecorder, PhaseLengths, QosThresholds, RunMeta, RunRecord,
    WindowPlan,
};
use peakhour_workload::{Mode, Plan, Window};

use crate::core::meta::RunShape;
use crate::core::recorder::RunRecorder;
use crate::population::Population;
use crate::run::{RunOutcome, RunSettings};

impl RunRecorder {
    /// Ends the recording: the intervals, the deliveries reconciled by
    /// `outcome` (lost copies named by their `population` address), and the
    /// metadata from `plan` and `settings`.
    ///
    /// The delivery books balance: every recipient of a submission is
    /// submitted, and is then delivered, failed (refused at submission) or
    /// lost; a refused recipient is never also waiting.
    pub fn finish(
        mut self,
        plan: &Plan,
        population: &Population,
        settings: &RunSettings,
        outcome: &RunOutcome,
    ) -> Result<RunRecord, AnalysisError> {
        let mut meta = run_meta(plan, settings, outcome.started_at, outcome.interrupted);
        if plan.mode() == Mode::Fixed {
            meta.completion = Some(Completion {
                users_finished: self.finished_users,
                time_to_finish: self.last_finish,
            });
        }
        let mut delivery = std::mem::replace(&mut self.delivery, DeliveryRecorder::new());
        delivery.submitted(outcome.submitted_recipients + self.refused);
        delivery.failed(self.refused);
        for lost in &outcome.lost {
            let address = population
                .address(lost.user)
                .unwrap_or_else(|_| format!("user #{}", lost.user));
            delivery.lost(&lost.message_id, address);
        }
        delivery.lost_not_listed(outcome.lost_total.saturating_sub(outcome.lost.len() as u64));
        delivery.lost_unsearched(outcome.lost_unsearched);
        let error_examples = std::mem::take(&mut self.error_examples);
        let intervals = self.intervals()?;
        let mut record = RunRecord::new(meta, intervals, delivery.finish()?);
        record.server.error_examples = error_examples;
        Ok(record)
    }
}

/// The QoS limits a run is judged by (the one rule, `peakhour_analysis::qos`):
/// the weighted p95 within `override_ms` when given, else within the
/// profile's `qos.p95_ms`; and the actions with a limit of their own in the
/// profile (`[qos.actions]`) within it, unless `override_ms` replaces every limit.
pub fn qos_thresholds(plan: &Plan, override_ms: Option<f64>) -> QosThresholds {
    let mut qos = QosThresholds::default();
    if let Some(ms) = override_ms {
        qos.default_p95_ms = ms;
        return qos;
    }
    qos.default_p95_ms = plan.qos_weighted_p95_ms();
    for kind in plan.actions() {
        if let Some(ms) = plan.qos_action_limit_ms(kind) {
            qos.p95_ms.insert(kind.name().to_owned(), ms);
        }
    }
    qos
}

/// What describes the run in its record: identity, shape, and scoring rules.
pub(crate) fn run_meta(
    plan: &Plan,
    settings: &RunSettings,
    started_at: SystemTime,
    interrupted: bool,
) -> RunMeta {
    let mut meta = crate::core::meta::run_meta(RunShape {
        run_id: &settings.run_id,
        name: plan.name(),
        users: plan.users(),
        seed: plan.seed(),
        started_at,
        interval: settings.interval,
        phases: PhaseLengths {
            logon: settings.ramp_up,
            steady: settings.duration,
            drain: settings.drain,
        },
        interrupted,
    });
    meta.day = plan.day();
    meta.speed = plan.speed();
    meta.action_weights = plan
        .rates()
        .iter()
        .map(|r| (r.kind.name().to_owned(), r.per_day))
        .collect();
    meta.qos = qos_thresholds(plan, settings.qos_p95_ms);
    meta.window = window_plan(plan);
    meta.clients = Some(plan.client_mix().describe());
    meta
}

/// The window the run measures and the rates it drives, for the record.
fn window_plan(plan: &Plan) -> Option<WindowPlan> {
    let shape = plan.day_shape();
    Some(WindowPlan {
        window: plan.window().as_str().to_owned(),
        actions_per_user_hour: plan.actions_per_user_hour()?,
        peak_actions_per_user_hour: plan.peak_actions_per_user_hour(),
        peak_factor: shape.map(|s| s.peak_factor),
        connected_at_peak: shape.map(|s| s.connected_at_peak),
        connections_per_user: shape.map(|s| s.connections_per_user),
        logons_per_second: plan.logons_per_second(),
        first_actions: match plan.window() {
            Window::Morning => shape.map_or_else(Vec::new, |s| {
                s.first_actions
                    .iter()
                    .map(|k| k.name().to_owned())
                    .collect()
            }),
            _ => Vec::new(),
        },
    })
}
