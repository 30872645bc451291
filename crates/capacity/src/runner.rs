//! The seam between the search and the processes that measure: one call,
//! "run this step, give me its summary" ([`Steps::run_step`]), and one to
//! fill the mailboxes a step needs ([`Steps::init`]).
//!
//! [`ChildSteps`] implements it today with the sweep's own child machinery
//! (a `peakhour run` child per step, its output prefixed, SIGINT passed on),
//! lent by the binary as a closure; the application layer can take its place
//! by implementing [`Steps`] from its resolved request.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_app::children::{ChildTarget, InitRequest};
use peakhour_command_line::args::CapacityArgs;
use peakhour_rundir::RunDir;
use peakhour_workload::HumanDuration;

use crate::CapacityError;

/// One step in one window, as the search asks for it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRequest {
    /// Real users (no day compression).
    pub users: u32,
    /// `peak-hour` or `morning`.
    pub window: String,
    /// The step's run directory (new).
    pub dir: PathBuf,
    /// The seed of every step.
    pub seed: u64,
    /// What prefixes the child's output lines.
    pub prefix: String,
}

/// What measures the steps.
pub trait Steps {
    /// Runs one step and gives back its summary; `None` when it ended
    /// without results (the error then says why, or it was interrupted).
    fn run_step(&mut self, step: &StepRequest) -> Result<Option<Summary>, CapacityError>;
    /// Brings the mailboxes of users 1..=`users` to the profile's starting state.
    fn init(&mut self, users: u32, seed: u64) -> Result<(), CapacityError>;
    /// A stopping signal came.
    fn interrupted(&self) -> bool;
}

/// [`Steps`] as `peakhour run` and `peakhour init` children, started by
/// `start(args, prefix)` (the binary's child machinery), which returns the
/// child's exit status.
pub struct ChildSteps<'a, S, I> {
    args: &'a CapacityArgs,
    start: S,
    interrupted: I,
}

impl<'a, S, E, I> ChildSteps<'a, S, I>
where
    S: FnMut(&[OsString], &str) -> Result<ExitStatus, E>,
    E: std::fmt::Display,
    I: Fn() -> bool,
{
    /// The steps of `args`, started by `start`.
    pub fn new(args: &'a CapacityArgs, start: S, interrupted: I) -> Self {
        Self {
            args,
            start,
            interrupted,
        }
    }

    /// Starts one child; its exit code (`None` when a signal ended it).
    fn start(&mut self, argv: &[OsString], prefix: &str) -> Result<Option<i32>, CapacityError> {
        (self.start)(argv, prefix)
            .map(|status| status.code())
            .map_err(|e| CapacityError::Child(e.to_string()))
    }

    fn common(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> =
            vec!["--profile".into(), self.args.profile.profile.clone().into()];
        out.extend(ChildTarget::of(&self.args.target).flags());
        out
    }
}

fn duration(d: Duration) -> OsString {
    HumanDuration(d).to_string().into()
}

impl<S, E, I> Steps for ChildSteps<'_, S, I>
where
    S: FnMut(&[OsString], &str) -> Result<ExitStatus, E>,
    E: std::fmt::Display,
    I: Fn() -> bool,
{
    fn run_step(&mut self, step: &StepRequest) -> Result<Option<Summary>, CapacityError> {
        let a = self.args;
        let mut argv: Vec<OsString> = vec!["run".into()];
        argv.extend(self.common());
        argv.extend([
            "--users".into(),
            step.users.to_string().into(),
            "--window".into(),
            step.window.clone().into(),
            "--seed".into(),
            step.seed.to_string().into(),
            "--ramp-up".into(),
            duration(a.ramp_up),
            "--drain".into(),
            duration(a.drain),
            "--out".into(),
            step.dir.clone().into(),
        ]);
        if let Some(d) = a.duration {
            argv.extend(["--duration".into(), duration(d)]);
        }
        if let Some(ms) = a.qos_p95_ms {
            argv.extend(["--qos-p95-ms".into(), ms.to_string().into()]);
        }
        let code = self.start(&argv, &step.prefix)?;
        let dir = RunDir::new(&step.dir);
        if !step.dir.join("summary.json").exists() {
            return match code {
                _ if (self.interrupted)() => Ok(None),
                code => Err(CapacityError::StepWithoutResults {
                    users: step.users,
                    window: step.window.clone(),
                    code,
                }),
            };
        }
        Ok(Some(dir.read_summary()?))
    }

    fn init(&mut self, users: u32, seed: u64) -> Result<(), CapacityError> {
        let argv = InitRequest {
            profile: self.args.profile.profile.clone().into(),
            target: ChildTarget::of(&self.args.target),
            users,
            seed,
        }
        .args();
        match self.start(&argv, "[init] ")? {
            Some(0) => Ok(()),
            _ if (self.interrupted)() => Ok(()),
            code => Err(CapacityError::Init { users, code }),
        }
    }

    fn interrupted(&self) -> bool {
        (self.interrupted)()
    }
}
