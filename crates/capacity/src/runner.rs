//! The seam between the search and the processes that measure: one call,
//! "run this step, give me its summary" ([`Steps::run_step`]), and one to
//! fill the mailboxes a step needs ([`Steps::init`]).
//!
//! A step is the application layer's [`StepRequest`] (the one a sweep's
//! step is, built by [`StepRequest::capacity_step`]), so a capacity step's
//! `peakhour run` gets the same flags a sweep's would, plus its window.
//! [`ChildSteps`] runs it with the sweep's own child machinery (a `peakhour
//! run` child per step, its output prefixed, SIGINT passed on), lent by the
//! binary as a closure.

use std::ffi::OsString;
use std::process::ExitStatus;

use peakhour_analysis::Summary;
pub use peakhour_app::children::StepRequest;
use peakhour_app::children::{ChildTarget, InitRequest};
use peakhour_command_line::args::CapacityArgs;
use peakhour_lab::Lab;
use peakhour_rundir::RunDir;

use crate::CapacityError;

/// What measures the steps.
pub trait Steps {
    /// Runs one step and gives back its summary; `None` when it ended
    /// without results (the error then says why, or it was interrupted).
    fn run_step(&mut self, step: &StepRequest) -> Result<Option<Summary>, CapacityError>;
    /// Brings the mailboxes of users 1..=`users` to the profile's starting state.
    fn init(&mut self, users: u32, seed: u64) -> Result<(), CapacityError>;
    /// A stopping signal came.
    fn interrupted(&self) -> bool;
    /// The lab's health check ([`peakhour_lab::LabStatus::problems`]):
    /// empty when it is healthy; `None` when the target is no lab.
    fn lab_problems(&mut self) -> Result<Option<Vec<String>>, CapacityError> {
        Ok(None)
    }
    /// Restarts the lab with its own settings, mail kept (`lab down`, `lab up`).
    fn restart_lab(&mut self) -> Result<(), CapacityError> {
        Ok(())
    }
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
}

impl<S, E, I> Steps for ChildSteps<'_, S, I>
where
    S: FnMut(&[OsString], &str) -> Result<ExitStatus, E>,
    E: std::fmt::Display,
    I: Fn() -> bool,
{
    fn run_step(&mut self, step: &StepRequest) -> Result<Option<Summary>, CapacityError> {
        let prefix = format!("[{}u {}] ", step.users, step.window);
        let code = self.start(&step.args(), &prefix)?;
        if !step.out.join("summary.json").exists() {
            return match code {
                _ if (self.interrupted)() => Ok(None),
                code => Err(CapacityError::StepWithoutResults {
                    users: step.users,
                    window: step.window.to_string(),
                    code,
                }),
            };
        }
        Ok(Some(RunDir::new(&step.out).read_summary()?))
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

    fn lab_problems(&mut self) -> Result<Option<Vec<String>>, CapacityError> {
        if self.args.target.target != "lab" {
            return Ok(None);
        }
        let status = Lab::new(&self.args.target.lab_dir).status()?;
        Ok(Some(status.problems()))
    }

    fn restart_lab(&mut self) -> Result<(), CapacityError> {
        Lab::new(&self.args.target.lab_dir).restart()?;
        Ok(())
    }
}
