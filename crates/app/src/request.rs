//! A command line resolved once into what a load needs (ripgrep's
//! high-level arguments): [`MailRequest`] is the profile, the target with
//! the lab behind it, the plan with its overrides and the test population,
//! all checked before any connection; [`RunRequest`] adds what `peakhour
//! run` needs besides: the checked phases and monitor settings, the target
//! fitted to this machine's limits, the protocol and where the results go.
//! The binary prints what the request says and starts the run from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use peakhour_command_line::TargetSpec;
use peakhour_command_line::args::RunArgs;
use peakhour_command_line::config::{CONNECT_TIMEOUT, RunConfig};
use peakhour_engine::limits::{Decision, LimitsError};
use peakhour_engine::{MailProtocol, Population, RunSettings, Target};
use peakhour_rundir::{DirKind, RunDirError};
use peakhour_workload::{Overrides, Plan, Profile};

use crate::setup::{
    ResolvedTarget, SetupError, check_population, load_profile, resolve_plan, resolve_target,
};

/// A mail load as the command line names it, resolved: nothing has
/// connected yet.
#[derive(Debug)]
pub struct MailRequest {
    /// The profile, as read.
    pub profile: Profile,
    /// The target, the lab's status with `--target lab`, and the security
    /// shortcuts it takes.
    pub resolved: ResolvedTarget,
    /// The plan: the profile with the overrides (users default to the lab's
    /// or the users file's).
    pub plan: Arc<Plan>,
    /// Who may receive mail, checked.
    pub population: Population,
}

impl MailRequest {
    /// Reads the profile `profile` names, resolves `target` (`say` is
    /// given a `warning: ...` line for each security shortcut it takes, as
    /// soon as it is known), the plan with `overrides`, and the population
    /// with `allow_domains`.
    pub fn resolve(
        profile: &str,
        target: &TargetSpec,
        overrides: Overrides,
        allow_domains: &[String],
        say: &mut dyn FnMut(String),
    ) -> Result<Self, SetupError> {
        let profile = load_profile(profile)?;
        let resolved = resolve_target(target)?;
        for shortcut in &resolved.shortcuts {
            say(format!("warning: {shortcut}"));
        }
        let plan = resolve_plan(&profile, overrides, &resolved)?;
        // Mail goes only to the test population, checked before any connection.
        let population = check_population(&plan, &resolved, allow_domains)?;
        Ok(Self {
            profile,
            resolved,
            plan,
            population,
        })
    }
}

/// Why a `peakhour run` could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The profile, the target, the plan or the population.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The machine's limits could not be read, or the run is beyond them.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// `--protocol jmap` against a target without JMAP.
    #[error("--protocol jmap needs a JMAP server: a lab --mail-server cyrus, or --jmap URL")]
    NoJmap,
}

impl RequestError {
    /// Whether the command line cannot run as given (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            RequestError::Setup(error) => error.is_usage(),
            RequestError::Limits(error) => error.is_usage(),
            RequestError::NoJmap => false,
        }
    }
}

/// `peakhour run` (a mail profile) resolved: everything it needs before it
/// starts its run directory and connects.
#[derive(Debug)]
pub struct RunRequest {
    /// The checked settings: the phases (`config.shape`), the monitor's,
    /// the shard and the agreed start.
    pub config: RunConfig,
    /// The profile, the target and the lab, the plan, the population.
    pub mail: MailRequest,
    /// The target the users connect to: the resolved one, spread over
    /// loopback source addresses when the machine's ports ask for it.
    pub target: Arc<Target>,
    /// What the machine's limits say about this run (for the terminal).
    pub limits: Decision,
    /// IMAP or JMAP.
    pub protocol: MailProtocol,
    /// `--out`: the run directory, if given.
    pub out: Option<PathBuf>,
}

impl RunRequest {
    /// Resolves `args` with their checked `config`; `say` is given each
    /// line for the person starting the run as soon as it is known: a
    /// warning per security shortcut of the target, then what the
    /// machine's limits say ([`RunRequest::limits`]).
    pub fn resolve(
        args: &RunArgs,
        config: RunConfig,
        say: &mut dyn FnMut(String),
    ) -> Result<Self, RequestError> {
        let shape = &config.shape;
        let overrides = Overrides {
            users: config.users,
            day: shape.day,
            speed: shape.speed,
            seed: shape.seed,
            window: config.window,
            client: args.client,
        };
        let spec = args.target.spec();
        let (profile, allowed) = (&args.profile.profile, &config.allow_domains);
        let mail = MailRequest::resolve(profile, &spec, overrides, allowed, say)?;
        let mut target = mail.resolved.target.clone();
        let limits = config.fit_limits(&mail.plan, args.protocol, &mut target)?;
        say(limits.to_string());
        if args.protocol == MailProtocol::Jmap && target.jmap.is_none() {
            return Err(RequestError::NoJmap);
        }
        Ok(Self {
            config,
            mail,
            target,
            limits,
            protocol: args.protocol,
            out: args.out.clone(),
        })
    }

    /// The run's id, made from the agreed start (or `now`) so that shards
    /// share it, and its directory's name (shards of one run write beside
    /// each other unless told where).
    pub fn names(&self, now: SystemTime) -> (String, String) {
        let plan = &self.mail.plan;
        let kind = DirKind::Run {
            profile: plan.name(),
            users: plan.users(),
        };
        let run_id = peakhour_rundir::dir_name(self.config.start_at.unwrap_or(now), kind);
        let shard = self.config.shard;
        let name = match shard.count() {
            1 => run_id.clone(),
            n => format!("{run_id}-shard-{}-of-{n}", shard.number()),
        };
        (run_id, name)
    }

    /// The run's `config.toml`: its phases, its monitor, the plan, the
    /// target, the shortcuts it takes, the domains allowed and the lab.
    pub fn recorded_config(&self) -> Result<peakhour_rundir::RunConfig, RunDirError> {
        let (config, mail) = (&self.config, &self.mail);
        let mut recorded = peakhour_rundir::RunConfig::mail(
            config.shape.run_section(),
            config.monitor_section(),
            &mail.plan,
            &self.target,
            mail.resolved.shortcuts.clone(),
            &config.allow_domains,
        )?;
        recorded.target.lab = mail.resolved.lab.as_ref().map(|lab| lab.dir.clone());
        recorded.run.check_state = config.check_state.map(peakhour_workload::HumanDuration);
        Ok(recorded)
    }

    /// The engine's settings for the run `run_id`.
    pub fn settings(&self, run_id: String) -> RunSettings {
        let shape = &self.config.shape;
        RunSettings {
            run_id,
            ramp_up: shape.ramp_up,
            duration: shape.duration,
            drain: shape.drain,
            action_timeout: shape.action_timeout,
            connect_timeout: CONNECT_TIMEOUT,
            client_name: "client.peakhour.test".into(),
            interval: shape.interval,
            qos_p95_ms: shape.qos_p95_ms,
            shard: self.config.shard,
            start_at: self.config.start_at,
            protocol: self.protocol,
            check_state: self.config.check_state,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use peakhour_command_line::args::{Cli, Command};

    use super::*;

    fn run_args(extra: &[&str]) -> RunArgs {
        let mut argv = vec![
            "peakhour",
            "run",
            "--target",
            "explicit",
            "--imap",
            "imap://127.0.0.1:1143",
            "--smtp",
            "smtp://127.0.0.1:1025",
            // Any variable that is set: the shared password.
            "--password-env",
            "PATH",
            "--users",
            "3",
        ];
        argv.extend(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(args) => args,
            _ => unreachable!("a run"),
        }
    }

    #[test]
    fn issue_29_item_1_a_run_is_resolved_once_into_one_request() {
        let args = run_args(&["--seed", "9"]);
        let config = RunConfig::check(&args).expect("checks");
        let mut said = Vec::new();
        let request = RunRequest::resolve(&args, config, &mut |line| said.push(line))
            .expect("resolves without a connection");
        assert_eq!(request.mail.plan.users(), 3);
        assert_eq!(request.mail.plan.seed(), 9);
        assert_eq!(request.target.imap.port, 1143);
        assert!(request.mail.resolved.lab.is_none());
        // The machine's limits are said once they are known.
        assert_eq!(said, [request.limits.to_string()]);
        let settings = request.settings("r1".into());
        assert_eq!(settings.run_id, "r1");
        assert_eq!(settings.protocol, MailProtocol::Imap);
        let recorded = request.recorded_config().expect("config.toml");
        assert_eq!(recorded.target.imap, request.target.imap.to_string());
    }

    #[test]
    fn issue_29_item_1_jmap_without_a_jmap_server_is_refused_after_the_limits() {
        let args = run_args(&["--protocol", "jmap"]);
        let config = RunConfig::check(&args).expect("checks");
        let mut said = Vec::new();
        let error =
            RunRequest::resolve(&args, config, &mut |line| said.push(line)).expect_err("no --jmap");
        assert!(matches!(error, RequestError::NoJmap), "{error}");
        assert!(!error.is_usage());
        assert_eq!(said.len(), 1, "{said:?}");
    }
}
