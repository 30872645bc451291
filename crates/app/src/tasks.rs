//! `peakhour tasks` resolved once (seed 001's atomic tasks): the profile (a
//! Poisson one, whose rates are per day), the target and the lab, the
//! workstation counts, the tasks the profile offers, the population the
//! workstations sign in as, and the server's capacity the costs are
//! divided by. The binary measures from it.

use std::sync::Arc;

use peakhour_command_line::args::TasksArgs;
use peakhour_engine::PopulationError;
use peakhour_engine::session_tasks::{AtomicTask, TaskPopulation, UnknownTask, choose_tasks};
use peakhour_workload::{Mode, Overrides, Profile};

use crate::setup::{
    ResolvedTarget, SetupError, check_population, load_profile, resolve_plan, resolve_target,
};

/// Why `peakhour tasks` could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    /// A profile in another mode than Poisson.
    #[error("peakhour tasks needs a poisson-mode profile (rates per day)")]
    NotPoisson,
    /// More workstations than users.
    #[error("--workstations {largest} needs that many users; the lab has {users}")]
    TooFewUsers {
        /// The largest workstation count.
        largest: u32,
        /// The users there are.
        users: u32,
    },
    /// The profile, the target, the plan or the population.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A task the profile does not offer.
    #[error("--tasks")]
    Tasks(#[source] UnknownTask),
    /// A user of the population without an address.
    #[error(transparent)]
    Population(#[from] PopulationError),
}

/// `peakhour tasks` as its arguments name it, resolved.
#[derive(Debug)]
pub struct TasksRequest {
    /// The profile.
    pub profile: Profile,
    /// The target, and the lab's status with `--target lab`.
    pub resolved: ResolvedTarget,
    /// The tasks to measure, Inbox-emptying actions last.
    pub tasks: Vec<AtomicTask>,
    /// Sorted, without repeats; the last is the largest.
    pub workstations: Vec<u32>,
    /// `--seed`, or the default seed.
    pub seed: u64,
    /// Who the workstations sign in as (and deliver to).
    pub population: TaskPopulation,
    /// The server's CPUs (the lab's shape, or this machine's).
    pub server_cpus: f64,
    /// The server's memory, when known.
    pub server_memory: Option<u64>,
}

impl TasksRequest {
    /// Resolves `args`; `say` is given a `warning: ...` line for each
    /// security shortcut of the target.
    pub fn resolve(args: &TasksArgs, say: &mut dyn FnMut(String)) -> Result<Self, TasksError> {
        let profile = load_profile(&args.profile.profile)?;
        if profile.mode != Mode::Poisson {
            return Err(TasksError::NotPoisson);
        }
        let resolved = resolve_target(&args.target.spec())?;
        for shortcut in &resolved.shortcuts {
            say(format!("warning: {shortcut}"));
        }
        let mut workstations = args.workstations.clone();
        workstations.sort_unstable();
        workstations.dedup();
        let largest = workstations[workstations.len() - 1];
        let users = (resolved.lab.as_ref()).map_or(largest.max(args.sessions), |lab| lab.users);
        if largest > users {
            return Err(TasksError::TooFewUsers { largest, users });
        }
        let users_only = Overrides {
            users: Some(users),
            ..Overrides::default()
        };
        let plan = resolve_plan(&profile, users_only, &resolved)?;
        let actions: Vec<String> = plan.actions().iter().map(|a| a.name().to_owned()).collect();
        let tasks = choose_tasks(&args.tasks, &actions).map_err(TasksError::Tasks)?;
        // The deliver task mails the population: checked as a run's is.
        let checked = check_population(&plan, &resolved, &args.target.allow_domain)?;
        let addresses = (0..users)
            .map(|u| checked.address(u))
            .collect::<Result<_, _>>()?;
        let (target, addresses) = (resolved.target.clone(), Arc::new(addresses));
        let population = TaskPopulation { target, addresses };
        let (server_cpus, server_memory) = peakhour_lab::server_capacity(resolved.lab.as_ref());
        Ok(Self {
            profile,
            resolved,
            tasks,
            workstations,
            seed: args.seed.unwrap_or(peakhour_workload::DEFAULT_SEED),
            population,
            server_cpus,
            server_memory,
        })
    }
}
