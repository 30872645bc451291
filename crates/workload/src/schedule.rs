//! Per-user schedules: when each action of a user is due.
//!
//! In `poisson` mode every action is an independent Poisson process at its per-user rate
//! (exponential inter-arrival times), and the processes are merged in time order. Each
//! (user, action) pair has its own random stream derived from (run seed, user, action), so
//! a user's schedule does not depend on other users or on how many users run.
//!
//! In `fixed` mode (seed 000: "Each client generated 20 messages to three recipients
//! randomly picked by the client") the schedule is the list of actions in order. The
//! seed's automated script gives no think time, so the reading here is a closed loop:
//! each action starts when the previous one ends, plus the profile's `fixed.pause`
//! (default 0). `at` is then only a lower bound: `position × pause`.
//!
//! A `fixed` profile with `fixed.script` is a scripted session instead: each step is due at
//! its own offset, in the script's order, on the user's own clock as a Poisson schedule is
//! (a step whose predecessor overran starts late, and its latency counts from its offset).
//! All users follow the same script, so the same step of every user falls in the same
//! stretch of time: what a measurement of the server's cost per step needs.

use std::time::Duration;

use crate::plan::Plan;
use crate::profile::{ActionKind, Mode, ScriptStep};
use crate::rng::{Rng, domain};

/// One action due for a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduledAction {
    /// Offset from the start of the steady phase (for `fixed` mode, the earliest start).
    pub at: Duration,
    /// What to do.
    pub kind: ActionKind,
    /// Index of this action among all of the user's actions (0-based).
    pub seq: u64,
    /// Index of this action among the user's actions of the same kind (0-based); for a
    /// send, pass it to [`Plan::send_choice`].
    pub nth: u64,
}

struct Arrivals {
    kind: ActionKind,
    rng: Rng,
    /// Mean inter-arrival time in nanoseconds.
    mean_ns: f64,
    next_ns: u64,
    nth: u64,
}

enum Source {
    Poisson(Vec<Arrivals>),
    Fixed {
        counts: Vec<(ActionKind, u64)>,
        kind_index: usize,
        nth: u64,
        pause: Duration,
    },
    Script {
        steps: Vec<ScriptStep>,
        next: usize,
        /// How many steps of each kind came before (`nth`), by [`ActionKind::index`].
        done: [u64; ActionKind::ALL.len()],
    },
}

/// The actions a user does first, all due at its morning logon.
struct FirstActions {
    at_ns: u64,
    kinds: Vec<ActionKind>,
    next: usize,
}

/// The endless (`poisson`) or finite (`fixed`) stream of a user's actions, in time order.
/// Take from it while `at` is inside the steady phase.
///
/// In the morning window ([`crate::Window::Morning`]) the stream begins at the user's
/// logon instead of the steady phase's start: first the profile's `first_actions`, all
/// due at the logon, then the Poisson arrivals from there.
pub struct Schedule {
    source: Source,
    first: Option<FirstActions>,
    seq: u64,
}

impl Schedule {
    pub(crate) fn new(plan: &Plan, user: u32) -> Schedule {
        let (origin, first_kinds) = plan
            .morning_start(user)
            .map_or((0, &[][..]), |(at, kinds)| {
                (u64::try_from(at.as_nanos()).unwrap_or(u64::MAX), kinds)
            });
        let source = match plan.mode() {
            Mode::Poisson => Source::Poisson(
                plan.rates()
                    .iter()
                    .filter(|r| r.per_second > 0.0 && r.per_second.is_finite())
                    .map(|r| {
                        let rng = Rng::derive(
                            plan.seed(),
                            domain::ARRIVALS,
                            u64::from(user),
                            r.kind.index() as u64,
                        );
                        let mut a = Arrivals {
                            kind: r.kind,
                            rng,
                            mean_ns: 1e9 / r.per_second,
                            next_ns: 0,
                            // The first actions of the morning come before
                            // this kind's arrivals, and count among them.
                            nth: first_kinds.iter().filter(|k| **k == r.kind).count() as u64,
                        };
                        a.next_ns = origin.saturating_add(a.gap());
                        a
                    })
                    .collect(),
            ),
            Mode::Fixed if !plan.script().is_empty() => Source::Script {
                steps: plan.script().to_vec(),
                next: 0,
                done: [0; ActionKind::ALL.len()],
            },
            Mode::Fixed => Source::Fixed {
                counts: plan.fixed_counts().to_vec(),
                kind_index: 0,
                nth: 0,
                pause: plan.pause(),
            },
        };
        let first = (!first_kinds.is_empty()).then(|| FirstActions {
            at_ns: origin,
            kinds: first_kinds.to_vec(),
            next: 0,
        });
        Schedule {
            source,
            first,
            seq: 0,
        }
    }

    /// True when each action must wait for the previous one to finish (`fixed` mode
    /// without a script).
    pub fn is_closed_loop(&self) -> bool {
        matches!(self.source, Source::Fixed { .. })
    }

    /// True when the schedule ends (`fixed` mode, scripted or not): a user that did all
    /// of it has finished.
    pub fn is_finite(&self) -> bool {
        matches!(self.source, Source::Fixed { .. } | Source::Script { .. })
    }
}

impl Arrivals {
    fn gap(&mut self) -> u64 {
        let ns = (self.rng.exp1() * self.mean_ns).round();
        if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        }
    }
}

impl Iterator for Schedule {
    type Item = ScheduledAction;

    fn next(&mut self) -> Option<ScheduledAction> {
        let seq = self.seq;
        if let Some(first) = self.first.as_mut()
            && let Some(&kind) = first.kinds.get(first.next)
        {
            let nth = first.kinds[..first.next]
                .iter()
                .filter(|k| **k == kind)
                .count() as u64;
            first.next += 1;
            self.seq += 1;
            return Some(ScheduledAction {
                at: Duration::from_nanos(first.at_ns),
                kind,
                seq,
                nth,
            });
        }
        let item = match &mut self.source {
            Source::Poisson(streams) => {
                // Earliest next arrival; ties go to the lower action (Table 3 order).
                let a = streams.iter_mut().min_by_key(|a| (a.next_ns, a.kind))?;
                if a.next_ns == u64::MAX {
                    return None;
                }
                let item = ScheduledAction {
                    at: Duration::from_nanos(a.next_ns),
                    kind: a.kind,
                    seq,
                    nth: a.nth,
                };
                a.nth += 1;
                let gap = a.gap();
                a.next_ns = a.next_ns.saturating_add(gap);
                item
            }
            Source::Fixed {
                counts,
                kind_index,
                nth,
                pause,
            } => {
                while *kind_index < counts.len() && *nth >= counts[*kind_index].1 {
                    *kind_index += 1;
                    *nth = 0;
                }
                let (kind, _) = *counts.get(*kind_index)?;
                let at = pause.saturating_mul(u32::try_from(seq).unwrap_or(u32::MAX));
                let item = ScheduledAction {
                    at,
                    kind,
                    seq,
                    nth: *nth,
                };
                *nth += 1;
                item
            }
            Source::Script { steps, next, done } => {
                let step = *steps.get(*next)?;
                let nth = done[step.action.index()];
                done[step.action.index()] += 1;
                *next += 1;
                ScheduledAction {
                    at: step.at.0,
                    kind: step.action,
                    seq,
                    nth,
                }
            }
        };
        self.seq += 1;
        Some(item)
    }
}
