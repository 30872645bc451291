//! The children a sweep, `tasks`, `matrix` or `capacity` starts: one
//! `peakhour init` or `peakhour run` each, built from a typed request
//! ([`InitRequest`], [`StepRequest`]) rather than from the parent's flags
//! written back one by one. A child reaches the same target as its parent
//! ([`target_flags`]) and runs the same binary ([`peakhour_command`]).
//!
//! To start a `run` step (as a sweep does): build a [`StepRequest`]
//! (`StepRequest::sweep_step` from a sweep's arguments, or field by field),
//! then [`StepRequest::command`] gives the `std::process::Command`; the
//! caller chooses its stdio, starts it, and reads the step's
//! `summary.json` from [`StepRequest::out`] when it ends.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use peakhour_command_line::TargetSpec;
use peakhour_command_line::args::{CapacityArgs, FileArgs, SweepArgs, TargetArgs};
use peakhour_command_line::config::{DEFAULT_DURATION, WINDOW_LENGTH};
use peakhour_engine::AuthPolicy;
use peakhour_workload::{HumanDuration, Window};

/// The `--target ...` flags that name `spec` to another peakhour.
pub fn target_flags(spec: &TargetSpec) -> Vec<OsString> {
    let mut out: Vec<OsString> = match &spec.lab_dir {
        Some(dir) => vec![
            "--target".into(),
            "lab".into(),
            "--lab-dir".into(),
            dir.into(),
        ],
        None => vec!["--target".into(), "explicit".into()],
    };
    out.extend(["--password-env".into(), spec.password_env.clone().into()]);
    let mut push = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            out.push(flag.into());
            out.push(value);
        }
    };
    push("--imap", spec.imap.clone().map(Into::into));
    push("--smtp", spec.smtp.clone().map(Into::into));
    push("--lmtp", spec.lmtp.clone().map(Into::into));
    push("--pop3", spec.pop3.clone().map(Into::into));
    push("--caldav", spec.caldav.clone().map(Into::into));
    push("--jmap", spec.jmap.clone().map(Into::into));
    push("--users-file", spec.users_file.clone().map(Into::into));
    push("--ca-file", spec.ca_file.clone().map(Into::into));
    let prefix = spec.options.folder_prefix.clone();
    push("--folder-prefix", prefix.map(Into::into));
    if spec.insecure_skip_tls_verify {
        out.push("--insecure-skip-tls-verify".into());
    }
    let auth = match spec.options.smtp_auth {
        AuthPolicy::Auto => "auto",
        AuthPolicy::None => "none",
        AuthPolicy::Plain => "plain",
        AuthPolicy::Login => "login",
    };
    out.extend(["--smtp-auth".into(), auth.into()]);
    out
}

/// Where a child's load goes: the target, and the domains its population
/// may use beyond the reserved test domains (`--allow-domain`).
#[derive(Debug, Clone, Default)]
pub struct ChildTarget {
    /// The target as the parent named it.
    pub spec: TargetSpec,
    /// `--allow-domain`, each.
    pub allow_domains: Vec<String>,
}

impl ChildTarget {
    /// The parent's target, as its arguments name it.
    pub fn of(args: &TargetArgs) -> Self {
        Self {
            spec: args.spec(),
            allow_domains: args.allow_domain.clone(),
        }
    }

    /// The lab in `dir` (`--target lab --lab-dir DIR`), with the other
    /// target flags at their defaults (the lab's users and password come
    /// from its status).
    pub fn lab(dir: &Path) -> Self {
        let spec = TargetSpec {
            lab_dir: Some(dir.to_path_buf()),
            password_env: "PEAKHOUR_PASSWORD".into(),
            ..TargetSpec::default()
        };
        Self {
            spec,
            allow_domains: Vec::new(),
        }
    }

    /// The flags: [`target_flags`], then every `--allow-domain`.
    pub fn flags(&self) -> Vec<OsString> {
        let mut out = target_flags(&self.spec);
        for domain in &self.allow_domains {
            out.extend(["--allow-domain".into(), domain.into()]);
        }
        out
    }
}

/// A child `peakhour init`: the profile's mailboxes for `users` users.
#[derive(Debug, Clone)]
pub struct InitRequest {
    /// `--profile`: a built-in name or a file.
    pub profile: OsString,
    /// The target.
    pub target: ChildTarget,
    /// Users to initialize.
    pub users: u32,
    /// The seed the runs will use.
    pub seed: u64,
}

impl InitRequest {
    /// The child's arguments, `init` first.
    pub fn args(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["init".into(), "--profile".into(), self.profile.clone()];
        out.extend(self.target.flags());
        out.extend(["--users".into(), self.users.to_string().into()]);
        out.extend(["--seed".into(), self.seed.to_string().into()]);
        out
    }
}

/// A step's phases and interval, as `peakhour run` takes them.
#[derive(Debug, Clone)]
pub struct StepPhases {
    /// The steady window.
    pub duration: Duration,
    /// Before it.
    pub ramp_up: Duration,
    /// After it, for in-flight actions and deliveries.
    pub drain: Duration,
    /// The recording interval (`None`: the child's default).
    pub interval: Option<Duration>,
    /// Every action's deadline (`None`: the child's default).
    pub action_timeout: Option<Duration>,
    /// `--day`, if given.
    pub day: Option<Duration>,
    /// `--speed`, if given.
    pub speed: Option<f64>,
}

impl StepPhases {
    /// A ramp-up, a steady window and a drain; the rest the child's defaults.
    pub fn new(ramp_up: Duration, duration: Duration, drain: Duration) -> Self {
        Self {
            duration,
            ramp_up,
            drain,
            interval: None,
            action_timeout: None,
            day: None,
            speed: None,
        }
    }
}

/// One `peakhour run` step of a sweep (or of `capacity`): everything the
/// child needs, typed.
#[derive(Debug, Clone)]
pub struct StepRequest {
    /// `--profile`: a built-in name or a file.
    pub profile: OsString,
    /// The target.
    pub target: ChildTarget,
    /// Simulated users (or file clients).
    pub users: u32,
    /// The seed, the same for every step.
    pub seed: u64,
    /// `--window`: the part of the day the step measures (the even day,
    /// the run's default, is not passed).
    pub window: Window,
    /// The phases.
    pub phases: StepPhases,
    /// `--qos-p95-ms`, if given.
    pub qos_p95_ms: Option<f64>,
    /// `--node-exporter`: the monitor's source, if not this machine.
    pub node_exporter: Option<String>,
    /// `--group NAME=...`: the monitor's process groups.
    pub groups: Vec<String>,
    /// The file-server flags (none for a mail step).
    pub files: FileArgs,
    /// `--metrics-listen` and `--metrics-linger`, if live metrics are served.
    pub metrics: Option<(SocketAddr, Duration)>,
    /// The step's run directory (`--out`).
    pub out: PathBuf,
}

impl StepRequest {
    /// A step of `users` users of `profile` against `target` with `phases`,
    /// written into `out`; no QoS limit, the monitor on this machine with
    /// its default groups, a mail profile, no live metrics.
    pub fn new(
        profile: impl Into<OsString>,
        target: ChildTarget,
        (users, seed): (u32, u64),
        phases: StepPhases,
        out: &Path,
    ) -> Self {
        Self {
            profile: profile.into(),
            target,
            users,
            seed,
            window: Window::Day,
            phases,
            qos_p95_ms: None,
            node_exporter: None,
            groups: Vec::new(),
            files: FileArgs::default(),
            metrics: None,
            out: out.to_path_buf(),
        }
    }

    /// The step of a sweep at `users` users, written into `out`.
    pub fn sweep_step(args: &SweepArgs, users: u32, seed: u64, out: &Path) -> Self {
        let shape = &args.shape;
        Self {
            profile: args.profile.profile.clone().into(),
            target: ChildTarget::of(&args.target),
            users,
            seed,
            window: Window::Day,
            phases: StepPhases {
                duration: shape.duration.unwrap_or(DEFAULT_DURATION),
                ramp_up: shape.ramp_up,
                drain: shape.drain,
                interval: Some(shape.interval),
                action_timeout: Some(shape.action_timeout),
                day: shape.day,
                speed: shape.speed,
            },
            qos_p95_ms: shape.qos_p95_ms,
            node_exporter: args.node_exporter.clone(),
            groups: args.group.clone(),
            files: args.files.clone(),
            metrics: (args.metrics.metrics_listen).map(|at| (at, args.metrics.metrics_linger)),
            out: out.to_path_buf(),
        }
    }

    /// The step of `peakhour capacity` at `users` real users in `window`,
    /// written into `out`: speed 1 (the profile's own day), the search's
    /// phases and QoS limit, the child's defaults for the rest. Without
    /// `--duration` the window is measured for [`WINDOW_LENGTH`], as `run
    /// --window` does.
    pub fn capacity_step(
        args: &CapacityArgs,
        (users, window): (u32, Window),
        seed: u64,
        out: &Path,
    ) -> Self {
        let phases = StepPhases::new(
            args.ramp_up,
            args.duration.unwrap_or(WINDOW_LENGTH),
            args.drain,
        );
        let mut step = Self::new(
            args.profile.profile.clone(),
            ChildTarget::of(&args.target),
            (users, seed),
            phases,
            out,
        );
        step.window = window;
        step.qos_p95_ms = args.qos_p95_ms;
        step
    }

    /// The child's arguments, `run` first.
    pub fn args(&self) -> Vec<OsString> {
        let p = &self.phases;
        let mut out: Vec<OsString> = vec!["run".into(), "--profile".into(), self.profile.clone()];
        out.extend(self.target.flags());
        out.extend([
            "--users".into(),
            self.users.to_string().into(),
            "--seed".into(),
            self.seed.to_string().into(),
            "--duration".into(),
            duration(p.duration),
            "--ramp-up".into(),
            duration(p.ramp_up),
            "--drain".into(),
            duration(p.drain),
        ]);
        if let Some(interval) = p.interval {
            out.extend(["--interval".into(), duration(interval)]);
        }
        if let Some(timeout) = p.action_timeout {
            out.extend(["--action-timeout".into(), duration(timeout)]);
        }
        out.extend(["--out".into(), self.out.clone().into()]);
        if let Some(day) = p.day {
            out.extend(["--day".into(), duration(day)]);
        }
        if let Some(speed) = p.speed {
            out.extend(["--speed".into(), speed.to_string().into()]);
        }
        if self.window != Window::Day {
            out.extend(["--window".into(), self.window.as_str().into()]);
        }
        if let Some(ms) = self.qos_p95_ms {
            out.extend(["--qos-p95-ms".into(), ms.to_string().into()]);
        }
        if let Some(url) = &self.node_exporter {
            out.extend(["--node-exporter".into(), url.into()]);
        }
        for group in &self.groups {
            out.extend(["--group".into(), group.into()]);
        }
        out.extend(file_flags(&self.files));
        if let Some((address, linger)) = self.metrics {
            out.extend(["--metrics-listen".into(), address.to_string().into()]);
            out.extend(["--metrics-linger".into(), duration(linger)]);
        }
        out
    }

    /// The child, ready to start: this very binary ([`peakhour_command`])
    /// with [`StepRequest::args`]; stdio is the caller's to set.
    pub fn command(&self) -> std::io::Result<Command> {
        peakhour_command(&self.args())
    }
}

/// `peakhour ARGS` as a `Command`, on the running binary itself: through
/// `/proc/self/exe` every child runs the same peakhour even if the file is
/// replaced (rebuilt) meanwhile, when `current_exe()` would name a deleted file.
pub fn peakhour_command(args: &[OsString]) -> std::io::Result<Command> {
    let proc_exe = Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe()?
    };
    let mut command = Command::new(exe);
    command.args(args);
    Ok(command)
}

fn duration(d: Duration) -> OsString {
    HumanDuration(d).to_string().into()
}

/// The file-server flags, passed to every step as given (none for a mail sweep).
fn file_flags(f: &FileArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            out.push(flag.into());
            out.push(value);
        }
    };
    push("--dir", f.dir.clone().map(Into::into));
    push("--smb", f.smb.clone().map(Into::into));
    push("--loadfile", f.loadfile.clone().map(Into::into));
    push("--think-time", f.think_time.map(duration));
    push("--start-delay", f.start_delay.map(duration));
    push("--workspace", f.workspace.map(|b| b.to_string().into()));
    push(
        "--ramp-up-iterations",
        f.ramp_up_iterations.map(|n| n.to_string().into()),
    );
    push(
        "--measured-iterations",
        f.measured_iterations.map(|n| n.to_string().into()),
    );
    push(
        "--ramp-down-iterations",
        f.ramp_down_iterations.map(|n| n.to_string().into()),
    );
    push(
        "--work-per-iteration",
        f.work_per_iteration.map(|n| n.to_string().into()),
    );
    // Empty: not parsed from a command line (`FileArgs::default()`), so the default too.
    if !f.cache.is_empty() && f.cache != "auto" {
        push("--cache", Some(f.cache.clone().into()));
    }
    if f.keep_workspace {
        out.push("--keep-workspace".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use peakhour_engine::{AuthPolicy, ServerOptions};

    fn explicit() -> TargetSpec {
        TargetSpec {
            lab_dir: None,
            imap: Some("imaps://mail.example.com:993".into()),
            smtp: Some("submissions://mail.example.com:465".into()),
            lmtp: None,
            pop3: None,
            caldav: None,
            jmap: None,
            users_file: Some(PathBuf::from("users.csv")),
            password_env: "PW".into(),
            ca_file: None,
            insecure_skip_tls_verify: true,
            options: ServerOptions {
                smtp_auth: AuthPolicy::Plain,
                folder_prefix: Some("INBOX.".into()),
                source_addresses: Vec::new(),
            },
        }
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn an_explicit_target_passes_every_endpoint_and_option_it_was_given() {
        assert_eq!(
            strings(target_flags(&explicit())),
            [
                "--target",
                "explicit",
                "--password-env",
                "PW",
                "--imap",
                "imaps://mail.example.com:993",
                "--smtp",
                "submissions://mail.example.com:465",
                "--users-file",
                "users.csv",
                "--folder-prefix",
                "INBOX.",
                "--insecure-skip-tls-verify",
                "--smtp-auth",
                "plain",
            ]
        );
    }

    /// Regression: a sweep's or a planner's child lost `--pop3`, `--caldav`
    /// and `--jmap`, so a step against an explicit POP3, CalDAV or JMAP
    /// server failed its preflight (or spoke IMAP instead of JMAP's server).
    #[test]
    fn a_child_keeps_the_pop3_caldav_and_jmap_servers_it_was_given() {
        let spec = TargetSpec {
            pop3: Some("pop3s://mail.example.com:995".into()),
            caldav: Some("https://cal.example.com/dav/".into()),
            jmap: Some("https://mail.example.com/".into()),
            ..explicit()
        };
        let args = strings(target_flags(&spec));
        for (flag, value) in [
            ("--pop3", "pop3s://mail.example.com:995"),
            ("--caldav", "https://cal.example.com/dav/"),
            ("--jmap", "https://mail.example.com/"),
        ] {
            let at = args.iter().position(|a| a == flag).expect(flag);
            assert_eq!(args[at + 1], value);
        }
    }

    #[test]
    fn a_lab_target_names_its_directory() {
        let spec = TargetSpec {
            lab_dir: Some(PathBuf::from("/tmp/lab")),
            imap: None,
            smtp: None,
            users_file: None,
            insecure_skip_tls_verify: false,
            options: ServerOptions::default(),
            ..explicit()
        };
        assert_eq!(
            strings(target_flags(&spec)),
            [
                "--target",
                "lab",
                "--lab-dir",
                "/tmp/lab",
                "--password-env",
                "PW",
                "--smtp-auth",
                "auto"
            ]
        );
    }

    fn sweep_args(flags: &[&str]) -> SweepArgs {
        use clap::Parser as _;
        use peakhour_command_line::args::{Cli, Command};
        let argv = ["peakhour", "sweep"].iter().chain(flags);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Sweep(args) => args,
            _ => unreachable!("a sweep"),
        }
    }

    /// Issue 29 item 2: a sweep's step is built from a request, and its
    /// command line is the one the sweep passed before.
    #[test]
    fn issue_29_item_2_a_sweep_step_passes_the_same_flags_as_before() {
        let args = sweep_args(&[
            "--profile",
            "mmb-light",
            "--lab-dir",
            "/tmp/lab",
            "--users",
            "5,10",
            "--duration",
            "30s",
            "--ramp-up",
            "10s",
            "--drain",
            "30s",
            "--speed",
            "2",
            "--group",
            "mta=exe:postfix",
            "--allow-domain",
            "example.org",
        ]);
        let step = StepRequest::sweep_step(&args, 10, 7, Path::new("/tmp/sweep/step-10u"));
        assert_eq!(
            strings(step.args()),
            [
                "run",
                "--profile",
                "mmb-light",
                "--target",
                "lab",
                "--lab-dir",
                "/tmp/lab",
                "--password-env",
                "PEAKHOUR_PASSWORD",
                "--smtp-auth",
                "auto",
                "--allow-domain",
                "example.org",
                "--users",
                "10",
                "--seed",
                "7",
                "--duration",
                "30s",
                "--ramp-up",
                "10s",
                "--drain",
                "30s",
                "--interval",
                "10s",
                "--action-timeout",
                "30s",
                "--out",
                "/tmp/sweep/step-10u",
                "--speed",
                "2",
                "--group",
                "mta=exe:postfix",
            ]
        );
        let init = InitRequest {
            profile: "mmb-light".into(),
            target: ChildTarget::of(&args.target),
            users: 10,
            seed: 7,
        };
        let init = strings(init.args());
        assert_eq!(init[..3], ["init", "--profile", "mmb-light"]);
        assert_eq!(init[init.len() - 4..], ["--users", "10", "--seed", "7"]);
    }

    #[test]
    fn issue_29_item_2_a_step_with_default_phases_leaves_the_rest_to_the_child() {
        let phases = StepPhases::new(
            Duration::from_secs(5),
            Duration::from_secs(60),
            Duration::from_secs(10),
        );
        let step = StepRequest::new(
            "p.toml",
            ChildTarget::default(),
            (3, 1),
            phases,
            Path::new("d"),
        );
        let args = strings(step.args());
        for flag in [
            "--interval",
            "--action-timeout",
            "--cache",
            "--day",
            "--qos-p95-ms",
        ] {
            assert!(!args.iter().any(|a| a == flag), "{flag} in {args:?}");
        }
        let at = args.iter().position(|a| a == "--ramp-up").expect("ramp-up");
        assert_eq!(args[at + 1], "5s");
        assert_eq!(args.last().map(String::as_str), Some("d"));
    }

    /// Issue 25 (b): a capacity step is the same request as a sweep's, with
    /// its window and the search's QoS limit; without `--duration` it
    /// measures the window's own length.
    #[test]
    fn issue_25_a_capacity_step_passes_its_window_and_qos_limit() {
        use clap::Parser as _;
        use peakhour_command_line::args::{Cli, Command};
        let parse = |flags: &[&str]| {
            let argv = ["peakhour", "capacity", "--lab-dir", "/tmp/lab"]
                .iter()
                .chain(flags);
            match Cli::try_parse_from(argv).expect("parses").command {
                Command::Capacity(args) => args,
                _ => unreachable!("capacity"),
            }
        };
        let value = |args: &[String], flag: &str| {
            let at = args.iter().position(|a| a == flag).expect(flag);
            args[at + 1].clone()
        };
        let args = parse(&["--qos-p95-ms", "800", "--ramp-up", "30s", "--drain", "15s"]);
        let out = Path::new("/tmp/cap/step-400u-morning");
        let step = StepRequest::capacity_step(&args, (400, Window::Morning), 3, out);
        let argv = strings(step.args());
        assert_eq!(argv[..3], ["run", "--profile", "mmb-medium"]);
        assert_eq!(value(&argv, "--window"), "morning");
        assert_eq!(value(&argv, "--qos-p95-ms"), "800");
        assert_eq!(value(&argv, "--duration"), "10m");
        assert_eq!(value(&argv, "--ramp-up"), "30s");
        assert_eq!(value(&argv, "--users"), "400");
        assert_eq!(value(&argv, "--seed"), "3");
        assert_eq!(value(&argv, "--out"), "/tmp/cap/step-400u-morning");
        assert!(!argv.iter().any(|a| a == "--speed"), "real users: {argv:?}");
        let short = parse(&["--duration", "90s"]);
        let step = StepRequest::capacity_step(&short, (50, Window::PeakHour), 1, out);
        let argv = strings(step.args());
        assert_eq!(value(&argv, "--window"), "peak-hour");
        assert_eq!(value(&argv, "--duration"), "1m30s");
        assert!(!argv.iter().any(|a| a == "--qos-p95-ms"), "{argv:?}");
    }
}
