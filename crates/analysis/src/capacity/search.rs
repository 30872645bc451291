//! `peakhour capacity`'s choice of steps: the largest number of real users
//! that holds QoS through the peak hour and the morning, bracketed by
//! measured steps (issue 25, item 4).
//!
//! The search starts from the planner's model when one is given (its
//! predicted users at QoS), else from a cheap first step; it then grows by
//! [`SearchSettings::growth`] while every step passes, shrinks by the same
//! factor while every step fails, and bisects once it holds a passing step
//! below a failing one, until the bracket `[users_low, users_high]` is no
//! wider than [`SearchSettings::precision`] of `users_low` (10% by default)
//! or no whole user lies between. Each step is judged by the one QoS rule
//! ([`crate::qos`]) in every window it ran; a step passes only if all of them
//! passed. The search is pure: the caller runs each step and says whether it
//! passed; the budget is the caller's too ([`fits_budget`]).

use std::time::Duration;

/// How the search proceeds.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSettings {
    /// The first step without a model.
    pub first_users: u32,
    /// The model's predicted users at QoS, the first step when given.
    pub model_users: Option<u32>,
    /// The most users the target has (the users file's, or the lab's
    /// ceiling); `None` for a lab that grows as needed.
    pub max_users: Option<u32>,
    /// The factor between steps until the answer is bracketed (> 1).
    pub growth: f64,
    /// The bracket's largest width, as a share of `users_low` (0.10).
    pub precision: f64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            first_users: 20,
            model_users: None,
            max_users: None,
            growth: 2.0,
            precision: DEFAULT_PRECISION,
        }
    }
}

/// The bracket's default width: 10% of the answer.
pub const DEFAULT_PRECISION: f64 = 0.10;

/// One measured step, as the search sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measured {
    /// Real users (and their sessions).
    pub users: u32,
    /// Every window of the step held QoS.
    pub pass: bool,
}

/// What the measured steps bracket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bracket {
    /// The largest passing step below every failing one.
    pub low: Option<u32>,
    /// The smallest failing step.
    pub high: Option<u32>,
}

impl Bracket {
    /// The bracket of `steps`. A pass above a failure (noise, or a server
    /// that recovered) does not raise `low`: the answer is what held below
    /// the first failure.
    pub fn of(steps: &[Measured]) -> Self {
        let high = steps.iter().filter(|s| !s.pass).map(|s| s.users).min();
        let low = steps
            .iter()
            .filter(|s| s.pass && high.is_none_or(|h| s.users < h))
            .map(|s| s.users)
            .max();
        Self { low, high }
    }

    /// The bracket is narrow enough: no wider than `precision` of `low`, or
    /// no whole user between its ends.
    pub fn is_narrow(&self, precision: f64) -> bool {
        match (self.low, self.high) {
            (Some(low), Some(high)) => {
                high <= low + 1 || f64::from(high - low) <= precision * f64::from(low)
            }
            _ => false,
        }
    }
}

/// The search's next move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Measure this many users next.
    Run(u32),
    /// The bracket is narrow enough: the answer is its `low`.
    Done(Bracket),
    /// Every step passed up to the target's population: the answer is at
    /// least `max_users`, and a larger population is needed to say more.
    PopulationTooSmall {
        /// Where the search stands.
        bracket: Bracket,
        /// The step it would run next.
        wanted: u32,
    },
    /// Even one user failed QoS.
    BelowOne(Bracket),
}

/// The next step after `steps` (in the order they ran).
pub fn next_step(settings: &SearchSettings, steps: &[Measured]) -> Next {
    let cap = |n: u32| settings.max_users.map_or(n, |m| n.min(m));
    if steps.is_empty() {
        let first = settings.model_users.unwrap_or(settings.first_users).max(1);
        return Next::Run(cap(first));
    }
    let bracket = Bracket::of(steps);
    let growth = settings.growth.max(1.1);
    match (bracket.low, bracket.high) {
        (Some(low), None) => {
            let wanted = ((f64::from(low) * growth).ceil() as u32).max(low + 1);
            match settings.max_users {
                Some(max) if low >= max => Next::PopulationTooSmall { bracket, wanted },
                _ => Next::Run(cap(wanted)),
            }
        }
        (None, Some(high)) => {
            if high <= 1 {
                return Next::BelowOne(bracket);
            }
            Next::Run(((f64::from(high) / growth).floor() as u32).clamp(1, high - 1))
        }
        (Some(low), Some(high)) => {
            if bracket.is_narrow(settings.precision) {
                Next::Done(bracket)
            } else {
                Next::Run(low + (high - low) / 2)
            }
        }
        (None, None) => Next::Run(cap(settings.first_users.max(1))),
    }
}

/// Whether a step estimated to take `step` still fits a budget of
/// `budget` of which `spent` is gone.
pub fn fits_budget(spent: Duration, step: Duration, budget: Duration) -> bool {
    spent.saturating_add(step) <= budget
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Runs the search against a simulated server that holds QoS up to
    /// `capacity` users, for at most `max_steps` steps.
    fn search(settings: &SearchSettings, capacity: u32, max_steps: usize) -> (Next, Vec<Measured>) {
        let mut steps = Vec::new();
        for _ in 0..max_steps {
            match next_step(settings, &steps) {
                Next::Run(users) => {
                    assert!(
                        !steps.iter().any(|s: &Measured| s.users == users),
                        "the search repeated a step at {users} users: {steps:?}"
                    );
                    steps.push(Measured {
                        users,
                        pass: users <= capacity,
                    });
                }
                done => return (done, steps),
            }
        }
        panic!("no answer within {max_steps} steps: {steps:?}");
    }

    #[test]
    fn issue_25_item_4_the_search_brackets_the_capacity_within_ten_percent() {
        for capacity in [1, 7, 19, 20, 21, 150, 263, 1000, 4321, 17_000] {
            let (next, steps) = search(&SearchSettings::default(), capacity, 40);
            let Next::Done(b) = next else {
                panic!("{capacity}: {next:?}");
            };
            let (low, high) = (b.low.unwrap(), b.high.unwrap());
            assert!(low <= capacity && capacity < high, "{capacity}: {steps:?}");
            assert!(
                high <= low + 1 || f64::from(high - low) <= 0.1 * f64::from(low),
                "{capacity}: {b:?}"
            );
        }
    }

    #[test]
    fn issue_25_item_4_a_good_model_saves_steps() {
        let capacity = 4321;
        let (_, blind) = search(&SearchSettings::default(), capacity, 40);
        let with_model = SearchSettings {
            model_users: Some(4000),
            growth: 1.25,
            ..SearchSettings::default()
        };
        let (next, guided) = search(&with_model, capacity, 40);
        assert!(matches!(next, Next::Done(_)));
        assert_eq!(guided[0].users, 4000);
        assert!(guided.len() < blind.len(), "{guided:?} vs {blind:?}");
    }

    #[test]
    fn a_population_too_small_is_said_with_the_step_wanted() {
        let settings = SearchSettings {
            max_users: Some(50),
            ..SearchSettings::default()
        };
        let (next, steps) = search(&settings, 1000, 10);
        assert_eq!(steps.last().unwrap().users, 50);
        assert_eq!(
            next,
            Next::PopulationTooSmall {
                bracket: Bracket {
                    low: Some(50),
                    high: None
                },
                wanted: 100
            }
        );
    }

    #[test]
    fn a_server_that_fails_one_user_is_below_one() {
        let (next, _) = search(&SearchSettings::default(), 0, 20);
        assert!(matches!(next, Next::BelowOne(_)));
    }

    #[test]
    fn a_pass_above_a_failure_does_not_raise_the_answer() {
        let steps = [
            Measured {
                users: 100,
                pass: true,
            },
            Measured {
                users: 200,
                pass: false,
            },
            Measured {
                users: 300,
                pass: true,
            },
        ];
        assert_eq!(
            Bracket::of(&steps),
            Bracket {
                low: Some(100),
                high: Some(200)
            }
        );
    }

    #[test]
    fn the_budget_refuses_a_step_that_would_overrun_it() {
        let m = Duration::from_secs(60);
        assert!(fits_budget(m * 50, m * 10, m * 60));
        assert!(!fits_budget(m * 51, m * 10, m * 60));
    }
}
