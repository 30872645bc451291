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
use peakhour_command_line::args::{FileArgs, SweepArgs, TargetArgs};
use peakhour_command_line::config::DEFAULT_DURATION;
use peakhour_engine::AuthPolicy;
use peakhour_workload::HumanDuration;

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
    /// The recording interval.
    pub interval: Duration,
    /// Every action's deadline.
    pub action_timeout: Duration,
    /// `--day`, if given.
    pub day: Option<Duration>,
    /// `--speed`, if given.
    pub speed: Option<f64>,
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
    /// The step of a sweep at `users` users, written into `out`.
    pub fn sweep_step(args: &SweepArgs, users: u32, seed: u64, out: &Path) -> Self {
        let shape = &args.shape;
        Self {
            profile: args.profile.profile.clone().into(),
            target: ChildTarget::of(&args.target),
            users,
            seed,
            phases: StepPhases {
                duration: shape.duration.unwrap_or(DEFAULT_DURATION),
                ramp_up: shape.ramp_up,
                drain: shape.drain,
                interval: shape.interval,
                action_timeout: shape.action_timeout,
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
            "--interval".into(),
            duration(p.interval),
            "--action-timeout".into(),
            duration(p.action_timeout),
            "--out".into(),
            self.out.clone().into(),
        ]);
        if let Some(day) = p.day {
            out.extend(["--day".into(), duration(day)]);
        }
        if let Some(speed) = p.speed {
            out.extend(["--speed".into(), speed.to_string().into()]);
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
    if f.cache != "auto" {
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
}
