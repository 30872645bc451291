//! A lab that a failed step left unhealthy, restarted so that the search can
//! go on (issue 25).
//!
//! On a shaped lab the step that fails is often the one whose sessions took
//! the cgroup's memory: the kernel's OOM killer then kills Dovecot's master,
//! or Postfix's, and every later step would be refused by the run's
//! preflight, ending the search with a bracket as wide as the growth factor.
//! After a failed step the search asks the lab's own health check (`lab
//! status`: every server running, every endpoint answering) and, if it
//! fails, restarts the lab with the settings it was started with (`lab
//! down`, `lab up` of the same directory: mail, users and password kept, a
//! fresh cgroup) before the next step, saying so in the progress and in the
//! step (`lab_restarted`, `lab_unhealthy`).

use std::time::Instant;

use peakhour_analysis::capacity::answer::AnswerStep;

use crate::CapacityError;
use crate::runner::Steps;

/// Why the lab must be restarted after `step`, if it must: a step that
/// failed QoS on a lab whose health check found `problems`. A passing step
/// is never followed by a restart (nothing it did can have broken the lab
/// without failing it), nor is a step already followed by one, nor a target
/// that is no lab (`problems` is `None`).
pub(crate) fn restart_reason(step: &AnswerStep, problems: Option<&[String]>) -> Option<String> {
    if step.qos_pass || step.lab_restarted {
        return None;
    }
    let problems = problems.filter(|p| !p.is_empty())?;
    Some(problems.join("; "))
}

/// Checks the lab after the failed `step` and restarts it if it is
/// unhealthy, marking the step; the seconds it took, for the budget.
pub(crate) fn restart_if_unhealthy(
    step: &mut AnswerStep,
    steps: &mut dyn Steps,
) -> Result<f64, CapacityError> {
    if step.qos_pass || step.lab_restarted {
        return Ok(0.0);
    }
    let started = Instant::now();
    let problems = steps.lab_problems()?;
    let Some(why) = restart_reason(step, problems.as_deref()) else {
        return Ok(started.elapsed().as_secs_f64());
    };
    eprintln!(
        "capacity: the lab is unhealthy after the step at {} users ({why}): restarting it (lab down, lab up; mail, users and password kept)",
        step.users
    );
    steps.restart_lab()?;
    let again = steps.lab_problems()?.unwrap_or_default();
    if !again.is_empty() {
        return Err(CapacityError::Child(format!(
            "the lab is still unhealthy after its restart: {}",
            again.join("; ")
        )));
    }
    let took = started.elapsed().as_secs_f64();
    eprintln!("capacity: the lab is healthy again ({took:.0} s)");
    step.lab_restarted = true;
    step.lab_unhealthy = Some(why);
    Ok(took)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn step(pass: bool) -> AnswerStep {
        AnswerStep {
            users: 3000,
            window: "peak-hour".into(),
            run_dir: "step-3000u-peak-hour".into(),
            sessions_held: Some(2900),
            sessions_source: "server".into(),
            weighted_p95_ms: Some(2500.0),
            qos_pass: pass,
            qos_failures: Vec::new(),
            action_p95_ms: BTreeMap::new(),
            bottleneck: None,
            bottleneck_evidence: None,
            at_cap: None,
            logons_per_second: None,
            logon_p95_ms: None,
            wall_s: 1.0,
            lab_restarted: false,
            lab_unhealthy: None,
        }
    }

    #[test]
    fn issue_25_a_failed_step_on_an_unhealthy_lab_restarts_it_and_nothing_else_does() {
        let dead = vec![
            "dovecot is not running".to_owned(),
            "imap 127.0.0.1:45143 does not answer (connection refused)".to_owned(),
        ];
        assert_eq!(
            restart_reason(&step(false), Some(&dead)).as_deref(),
            Some(
                "dovecot is not running; imap 127.0.0.1:45143 does not answer (connection refused)"
            )
        );
        assert_eq!(restart_reason(&step(false), Some(&[])), None, "healthy");
        assert_eq!(restart_reason(&step(false), None), None, "no lab");
        assert_eq!(restart_reason(&step(true), Some(&dead)), None, "passed");
        let mut done = step(false);
        done.lab_restarted = true;
        assert_eq!(restart_reason(&done, Some(&dead)), None, "restarted once");
    }
}
