//! `peakhour capacity`: one command that answers peakhour's question, how
//! many real users this server carries through its peak hour and its
//! morning (issue 25, item 4; docs/capacity.md).
//!
//! The parts:
//!
//! - the search's rules are pure and live in the analysis crate
//!   ([`peakhour_analysis::capacity::search`]: first step, growth,
//!   bisection, the bracket), as do the QoS rule ([`peakhour_analysis::qos`])
//!   and the answer ([`peakhour_analysis::capacity::answer`]);
//! - this crate orchestrates them: it grows the lab's population, has the
//!   mailboxes filled, runs each step in each window through one seam
//!   ([`runner::Steps`]), judges it, saves the state after every step
//!   ([`state`]), keeps to the budget, and writes `answer.json` and
//!   `answer.html`.
#![deny(missing_docs)]

mod judge;
mod lab_health;
pub mod runner;
pub mod state;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use peakhour_analysis::capacity::answer::{
    ANSWER_FORMAT_VERSION, Answer, FirstExhausted, ModelComparison, WindowBracket, limiting_window,
};
use peakhour_analysis::capacity::search::{
    Bracket, Measured, Next, SearchSettings, fits_budget, next_step,
};
use peakhour_command_line::args::CapacityArgs;
use peakhour_command_line::config::WINDOW_LENGTH;
use peakhour_lab::Lab;

pub use runner::{ChildSteps, StepRequest, Steps};
use state::{SearchState, StateSettings};

/// Exit code of bad usage.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of an interrupted search (run it again to resume).
pub const EXIT_INTERRUPTED: u8 = 130;
/// The windows a step can measure.
pub const WINDOWS: [&str; 2] = ["peak-hour", "morning"];
/// What a window costs beyond its phases (start, monitor, reconciliation), for the budget.
const STEP_OVERHEAD: Duration = Duration::from_secs(30);

/// What can go wrong; [`CapacityError::is_usage`] tells bad usage (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    /// An argument is out of bounds or inconsistent.
    #[error("{0}")]
    Usage(String),
    /// The output directory holds a search made with other settings.
    #[error(
        "{dir} holds a search with other settings ({what}); give another --out, or the same settings to resume it"
    )]
    OtherSettings {
        /// The output directory.
        dir: PathBuf,
        /// Which setting differs.
        what: String,
    },
    /// A child process could not be started or waited for.
    #[error("{0}")]
    Child(String),
    /// A step ended without a summary.
    #[error(
        "the step at {users} users ({window}) ended without results (exit code {code:?}); see its output above"
    )]
    StepWithoutResults {
        /// Its users.
        users: u32,
        /// Its window.
        window: String,
        /// Its exit code.
        code: Option<i32>,
    },
    /// `init` failed.
    #[error("init of {users} mailboxes failed (exit code {code:?}); see its output above")]
    Init {
        /// The users asked for.
        users: u32,
        /// Its exit code.
        code: Option<i32>,
    },
    /// The state file is unreadable.
    #[error("the search state {0} is unreadable: {1}")]
    State(PathBuf, String),
    /// A file could not be read or written.
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    /// The lab failed.
    #[error(transparent)]
    Lab(#[from] peakhour_lab::LabError),
    /// A run directory failed.
    #[error(transparent)]
    RunDir(#[from] peakhour_rundir::RunDirError),
}

impl CapacityError {
    /// Bad usage: exit code 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Usage(_) | Self::OtherSettings { .. })
            || matches!(self, Self::RunDir(e) if e.is_usage())
    }
}

/// Runs the search of `args` with `steps` and returns the exit code: 0
/// answered (complete or not), 2 bad usage (the error printed), 130
/// interrupted. Other errors are given back.
pub fn run(args: &CapacityArgs, steps: &mut dyn Steps) -> Result<u8, CapacityError> {
    match Search::new(args).and_then(|search| search.run(steps)) {
        Err(e) if e.is_usage() => {
            eprintln!("error: {e}");
            Ok(EXIT_USAGE)
        }
        other => other,
    }
}

/// The population the steps can use.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Population {
    /// A lab that grows as the steps need.
    Lab,
    /// A fixed list of users (the users file).
    Fixed(u32),
    /// Users the run names itself (a shared password): unknown size.
    Unknown,
}

struct Search<'a> {
    args: &'a CapacityArgs,
    out: PathBuf,
    settings: StateSettings,
    population: Population,
    model: ModelComparison,
    /// How long the profile's morning logon storm lasts (`logon_within`).
    logon_storm: Duration,
    /// The profile's name (`--profile` may be a file).
    profile_name: String,
}

impl<'a> Search<'a> {
    fn new(args: &'a CapacityArgs) -> Result<Self, CapacityError> {
        check_args(args)?;
        let population = population(args)?;
        let model = match &args.model {
            Some(path) => judge::model_users(path)?,
            None => ModelComparison {
                users: None,
                source: None,
                difference_pct: None,
            },
        };
        let settings = StateSettings {
            profile: args.profile.profile.clone(),
            target: args.target.target.clone(),
            windows: args.windows.clone(),
            seed: args.seed.unwrap_or(peakhour_workload::DEFAULT_SEED),
            duration_s: args.duration.map(|d| d.as_secs_f64()),
            ramp_up_s: args.ramp_up.as_secs_f64(),
            qos_p95_ms: args.qos_p95_ms,
        };
        let profile = peakhour_app::setup::load_profile(&args.profile.profile)
            .map_err(|e| CapacityError::Usage(e.to_string()))?;
        let Some(shape) = &profile.day_shape else {
            return Err(CapacityError::Usage(format!(
                "profile {} has no [day_shape]: capacity measures the peak hour and the morning, which need one (docs/windows.md)",
                profile.name
            )));
        };
        Ok(Self {
            args,
            out: args.out.clone(),
            settings,
            population,
            model,
            logon_storm: shape.morning.logon_within.get_ref().0,
            profile_name: profile.name.clone(),
        })
    }

    fn run(self, steps: &mut dyn Steps) -> Result<u8, CapacityError> {
        std::fs::create_dir_all(&self.out).map_err(|e| CapacityError::Io(self.out.clone(), e))?;
        let mut state = self.load_state()?;
        self.lab_ready(&mut state, steps)?;
        let budget = self.args.budget;
        let search = SearchSettings {
            first_users: self.args.first_users,
            model_users: self.model.users,
            max_users: match (self.population, self.args.max_users) {
                (Population::Fixed(n), Some(m)) => Some(n.min(m)),
                (Population::Fixed(n), None) => Some(n),
                (_, max) => max,
            },
            growth: if self.model.users.is_some() {
                1.25
            } else {
                2.0
            },
            precision: self.args.precision,
        };
        eprintln!(
            "capacity {}: profile {}, windows {}, budget {}{}",
            self.out.display(),
            self.settings.profile,
            self.settings.windows.join(" + "),
            peakhour_workload::HumanDuration(budget),
            if state.steps.is_empty() {
                String::new()
            } else {
                format!(
                    "; resuming after {} finished step(s)",
                    measured(&state).len()
                )
            }
        );
        let ended = loop {
            if steps.interrupted() {
                break Ended::Interrupted;
            }
            // The search climbs on the first window alone; the others are
            // measured at the candidate answer, and one that fails there
            // counts as that step failing, so the search goes on below it.
            let (users, windows) = match next_step(&search, &measured(&state)) {
                Next::Run(users) => (users, vec![self.args.windows[0].clone()]),
                Next::Done(b) | Next::PopulationTooSmall { bracket: b, .. }
                    if b.low
                        .is_some_and(|low| !self.missing(&state, low).is_empty()) =>
                {
                    let low = b.low.unwrap_or_default();
                    (low, self.missing(&state, low))
                }
                Next::Done(_) => {
                    break Ended::Done("bracketed within the precision asked for".into());
                }
                Next::BelowOne(_) => break Ended::Done("even one user failed QoS".into()),
                Next::PopulationTooSmall { wanted, .. } => {
                    break Ended::Done(format!(
                        "every step passed up to {} users, the most this search may use (--max-users, or the users file's); the next step would be {wanted}",
                        search.max_users.unwrap_or_default()
                    ));
                }
            };
            let estimate = self.estimate(&state, &windows);
            let spent = Duration::from_secs_f64(state.elapsed_s);
            if !fits_budget(spent, estimate, budget) {
                break Ended::Done(format!(
                    "the budget: the step at {users} users ({}) would take about {} more, beyond the {} budget ({} spent)",
                    windows.join(" + "),
                    peakhour_workload::HumanDuration(estimate),
                    peakhour_workload::HumanDuration(budget),
                    peakhour_workload::HumanDuration(spent)
                ));
            }
            match self.measure(users, &windows, &mut state, steps) {
                Ok(true) => {}
                Ok(false) => break Ended::Interrupted,
                Err(e) => {
                    // What was measured still makes an answer; the error is
                    // given back (exit 1) after it is written.
                    let why = Ended::Done(format!("stopped by an error at {users} users: {e}"));
                    self.write(&self.answer(&state, &search, &why))?;
                    return Err(e);
                }
            }
        };
        let answer = self.answer(&state, &search, &ended);
        self.write(&answer)?;
        Ok(match ended {
            Ended::Interrupted => {
                eprintln!(
                    "capacity: interrupted; the finished steps are saved: run the same command to resume"
                );
                EXIT_INTERRUPTED
            }
            Ended::Done(_) => 0,
        })
    }

    fn load_state(&self) -> Result<SearchState, CapacityError> {
        match SearchState::load(&self.out)? {
            Some(state) if state.settings != self.settings => Err(CapacityError::OtherSettings {
                dir: self.out.clone(),
                what: judge::settings_difference(&state.settings, &self.settings),
            }),
            Some(state) => Ok(state),
            None => Ok(SearchState {
                settings: self.settings.clone(),
                initialized_users: 0,
                elapsed_s: 0.0,
                steps: Vec::new(),
            }),
        }
    }

    /// On a lab target, a lab fit for the next step: one that this search's
    /// last step left unhealthy (a search resumed after the error that
    /// stopped it) is restarted; any other unhealthy lab is refused (exit 2).
    fn lab_ready(
        &self,
        state: &mut SearchState,
        steps: &mut dyn Steps,
    ) -> Result<(), CapacityError> {
        if self.population != Population::Lab {
            return Ok(());
        }
        if let Some(last) = state.steps.last_mut() {
            let took = lab_health::restart_if_unhealthy(last, steps)?;
            state.elapsed_s += took;
            state.save(&self.out)?;
        }
        let problems = steps.lab_problems()?.unwrap_or_default();
        if problems.is_empty() {
            return Ok(());
        }
        let dir = self.args.target.lab_dir.display();
        Err(CapacityError::Usage(format!(
            "the lab in {dir} is not healthy ({}); see `peakhour lab status --lab-dir {dir}`",
            problems.join("; ")
        )))
    }

    /// The windows not yet measured at `users`.
    fn missing(&self, state: &SearchState, users: u32) -> Vec<String> {
        self.args
            .windows
            .iter()
            .filter(|w| {
                !state
                    .steps
                    .iter()
                    .any(|s| s.users == users && &s.window == *w)
            })
            .cloned()
            .collect()
    }

    /// The time one more step in `windows` is expected to take: each
    /// window's longest step so far, or its phases plus an overhead (the
    /// morning's logon storm at its real pace, too).
    fn estimate(&self, state: &SearchState, windows: &[String]) -> Duration {
        let a = self.args;
        let phases = a.ramp_up + a.duration.unwrap_or(WINDOW_LENGTH) + a.drain + STEP_OVERHEAD;
        windows
            .iter()
            .map(|w| {
                let first = if w == "morning" {
                    phases + self.logon_storm
                } else {
                    phases
                };
                state
                    .steps
                    .iter()
                    .filter(|s| &s.window == w)
                    .map(|s| Duration::from_secs_f64(s.wall_s))
                    .max()
                    .unwrap_or(first)
            })
            .sum()
    }

    /// Measures `users` in `windows` (stopping at the first that fails);
    /// false when interrupted.
    fn measure(
        &self,
        users: u32,
        windows: &[String],
        state: &mut SearchState,
        steps: &mut dyn Steps,
    ) -> Result<bool, CapacityError> {
        let started = Instant::now();
        if self.population == Population::Lab && state.initialized_users < users {
            if Lab::new(&self.args.target.lab_dir)
                .grow_to(users)?
                .is_some()
            {
                eprintln!("capacity: the lab now has {users} users");
            }
            eprintln!(
                "capacity: filling the mailboxes of {users} users (init; what is there is kept)"
            );
            steps.init(users, self.settings.seed)?;
            if steps.interrupted() {
                return Ok(false);
            }
            state.initialized_users = users;
            state.elapsed_s += started.elapsed().as_secs_f64();
            state.save(&self.out)?;
        }
        for window in windows {
            let step_started = Instant::now();
            let request = StepRequest::capacity_step(
                self.args,
                (users, window_of(window)),
                self.settings.seed,
                &fresh_dir(&self.out, users, window),
            );
            eprintln!(
                "capacity: step {}: {users} users, {window} -> {}",
                measured(state).len() + 1,
                request.out.display()
            );
            let Some(summary) = steps.run_step(&request)? else {
                return Ok(false);
            };
            if summary.interrupted || steps.interrupted() {
                return Ok(false);
            }
            let wall = step_started.elapsed().as_secs_f64();
            let step = judge::step(&request, &self.out, &summary, wall)?;
            eprintln!("capacity: {}", judge::step_line(&step));
            let pass = step.qos_pass;
            let mut step = step;
            let restart = lab_health::restart_if_unhealthy(&mut step, steps);
            state.steps.push(step);
            state.elapsed_s += wall + restart.as_ref().copied().unwrap_or(0.0);
            state.save(&self.out)?;
            restart?;
            if !pass {
                break;
            }
        }
        Ok(true)
    }

    fn answer(&self, state: &SearchState, search: &SearchSettings, ended: &Ended) -> Answer {
        let bracket = Bracket::of(&measured(state));
        let windows: BTreeMap<String, WindowBracket> = self
            .args
            .windows
            .iter()
            .map(|w| {
                let of_window: Vec<Measured> = state
                    .steps
                    .iter()
                    .filter(|s| &s.window == w)
                    .map(|s| Measured {
                        users: s.users,
                        pass: s.qos_pass,
                    })
                    .collect();
                let b = Bracket::of(&of_window);
                (
                    w.clone(),
                    WindowBracket {
                        users_low: b.low,
                        users_high: b.high,
                    },
                )
            })
            .collect();
        let users = bracket.low;
        let window = limiting_window(&windows, &state.steps, users)
            .unwrap_or_else(|| self.args.windows[0].clone());
        let peak = state
            .steps
            .iter()
            .find_map(|s| judge::peak_per_user_hour(&self.out, s));
        let mut model = self.model.clone();
        if let (Some(m), Some(n)) = (model.users, users) {
            model.difference_pct = Some((f64::from(m) - f64::from(n)) / f64::from(n) * 100.0);
        }
        let mut answer = Answer {
            format_version: ANSWER_FORMAT_VERSION,
            profile: self.profile_name.clone(),
            target: self.settings.target.clone(),
            users,
            users_low: bracket.low,
            users_high: bracket.high,
            window,
            windows,
            peak_actions_per_user_hour: peak,
            peak_actions_per_hour: peak.zip(users).map(|(p, n)| p * f64::from(n)),
            server_settings: self.server_settings(),
            first_exhausted: first_exhausted(state, bracket.high),
            model,
            steps: state.steps.clone(),
            complete: bracket.is_narrow(search.precision),
            ended: match ended {
                Ended::Done(why) => why.clone(),
                Ended::Interrupted => "interrupted; run the same command to resume".into(),
            },
            precision: search.precision,
            budget_s: self.args.budget.as_secs_f64(),
            elapsed_s: state.elapsed_s,
            statement: Vec::new(),
        };
        answer.statement = answer.statement();
        answer
    }

    /// A lab's Dovecot limits, read from its configuration.
    fn server_settings(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        if self.population == Population::Lab
            && let Some(l) = Lab::new(&self.args.target.lab_dir).dovecot_limits()
        {
            out.insert(
                "dovecot service imap process_limit".into(),
                u64::from(l.imap_process_limit),
            );
            out.insert(
                "dovecot service imap client_limit".into(),
                u64::from(l.imap_client_limit),
            );
        }
        out
    }

    fn write(&self, answer: &Answer) -> Result<(), CapacityError> {
        let json = serde_json::to_string_pretty(answer)
            .map_err(|e| CapacityError::State(self.out.join("answer.json"), e.to_string()))?;
        let write = |name: &str, text: &str| {
            let path = self.out.join(name);
            std::fs::write(&path, text).map_err(|e| CapacityError::Io(path, e))
        };
        write("answer.json", &format!("{json}\n"))?;
        write(
            "answer.html",
            &peakhour_report::answer::render_answer_html(answer),
        )?;
        if self.args.json {
            println!("{json}");
        } else {
            for sentence in &answer.statement {
                println!("{sentence}");
            }
            println!("answer: {}", self.out.join("answer.html").display());
        }
        Ok(())
    }
}

/// How the search ended.
enum Ended {
    /// With an answer, for this reason.
    Done(String),
    /// By a signal.
    Interrupted,
}

/// Each user count measured, passing only if every window it ran passed.
fn measured(state: &SearchState) -> Vec<Measured> {
    let mut by_users: BTreeMap<u32, bool> = BTreeMap::new();
    for s in &state.steps {
        let pass = by_users.entry(s.users).or_insert(true);
        *pass &= s.qos_pass;
    }
    by_users
        .into_iter()
        .map(|(users, pass)| Measured { users, pass })
        .collect()
}

/// What ran out first at the smallest failing step.
fn first_exhausted(state: &SearchState, high: Option<u32>) -> FirstExhausted {
    let failed = high.and_then(|h| state.steps.iter().find(|s| s.users == h && !s.qos_pass));
    match failed {
        Some(s) => judge::exhausted(s),
        None => FirstExhausted {
            resource: "none measured".into(),
            users: None,
            evidence: "no step failed QoS".into(),
        },
    }
}

/// A window's name, checked by [`check_args`], as the run takes it.
fn window_of(name: &str) -> peakhour_workload::Window {
    peakhour_workload::Window::parse(name).unwrap_or(peakhour_workload::Window::PeakHour)
}

/// A new run directory for `users` in `window`: `step-100u-peak-hour`, or
/// with `-2`, `-3` ... when an interrupted attempt left one behind.
fn fresh_dir(out: &Path, users: u32, window: &str) -> PathBuf {
    let base = format!("step-{users}u-{window}");
    let mut dir = out.join(&base);
    let mut attempt = 2;
    while dir.exists() {
        dir = out.join(format!("{base}-{attempt}"));
        attempt += 1;
    }
    dir
}

fn check_args(args: &CapacityArgs) -> Result<(), CapacityError> {
    let bad = |m: String| Err(CapacityError::Usage(m));
    if !(args.precision > 0.0 && args.precision < 1.0) {
        return bad(format!(
            "--precision {} must be above 0 and below 1",
            args.precision
        ));
    }
    if args.first_users == 0 {
        return bad("--first-users must be at least 1".into());
    }
    if args.windows.is_empty() {
        return bad("--windows needs at least one of peak-hour, morning".into());
    }
    for w in &args.windows {
        if !WINDOWS.contains(&w.as_str()) {
            return bad(format!(
                "--windows: unknown window `{w}` (peak-hour or morning)"
            ));
        }
    }
    Ok(())
}

fn population(args: &CapacityArgs) -> Result<Population, CapacityError> {
    if args.target.target == "lab" {
        let dir = &args.target.lab_dir;
        // Its health is checked once the state is read ([`Search::lab_ready`]):
        // a resumed search restarts a lab its own last step left unhealthy.
        Lab::new(dir).status()?;
        return Ok(Population::Lab);
    }
    match &args.target.users_file {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| CapacityError::Io(path.clone(), e))?;
            let users = peakhour_engine::users_file::parse_users_file(&bytes)
                .map_err(|e| CapacityError::Usage(format!("{}: {e}", path.display())))?;
            Ok(Population::Fixed(
                u32::try_from(users.len()).unwrap_or(u32::MAX),
            ))
        }
        None => Ok(Population::Unknown),
    }
}
