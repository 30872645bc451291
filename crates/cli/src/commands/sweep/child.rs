//! The child processes of the sweep (and of `tasks` and `matrix`): `peakhour init` and one `peakhour run` per
//! step, their output streamed through with a prefix, and a stopping signal
//! passed on to the running child as SIGINT.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context as _;
use peakhour_workload::HumanDuration;

use crate::args::{SweepArgs, TargetArgs};
use crate::commands::signals::Interrupt;
use crate::config::DEFAULT_DURATION;

/// The sweep's children and the signals: the first SIGINT, SIGTERM or
/// SIGHUP stops the sweep after the running step, and every one is passed on
/// to that step as SIGINT, so that it writes what it measured.
pub(crate) struct Children {
    interrupt: Interrupt,
    /// The running child's pid, 0 when none runs.
    running: Arc<AtomicU32>,
}

impl Children {
    /// `command` names who stops (`sweep`, `tasks`, `matrix`).
    pub(crate) fn install(command: &'static str) -> anyhow::Result<Self> {
        let running = Arc::new(AtomicU32::new(0));
        let child = running.clone();
        let interrupt = Interrupt::install(move |first| {
            if first {
                eprintln!(
                    "\n{command}: interrupted; stopping the current step, then writing what was measured"
                );
            }
            forward_sigint(child.load(Ordering::SeqCst));
        })?;
        Ok(Self { interrupt, running })
    }

    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt.interrupted()
    }
}

fn forward_sigint(pid: u32) {
    if pid == 0 {
        return;
    }
    if let Ok(pid) = i32::try_from(pid) {
        // The child may have exited already; nothing to do then.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        );
    }
}

/// Copies a child's output to our stderr line by line, each line prefixed.
/// Carriage returns (live lines redrawn in place) end a line too.
fn pump(mut from: impl std::io::Read, prefix: String) {
    let mut buf = [0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let flush = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{prefix}{text}");
        }
        line.clear();
    };
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        flush(&mut line);
                    } else {
                        line.push(b);
                    }
                }
            }
        }
    }
    flush(&mut line);
}

/// Runs `peakhour ARGS` with its stdout and stderr streamed through to our
/// stderr under `prefix`, SIGINT passed on.
pub(crate) fn run_child(
    args: &[OsString],
    prefix: &str,
    children: &Children,
) -> anyhow::Result<ExitStatus> {
    // The running binary itself: through /proc/self/exe every step runs the
    // same peakhour even if the file is replaced (rebuilt) during the sweep,
    // when current_exe() would name a deleted file.
    let proc_exe = Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().context("cannot find the peakhour executable")?
    };
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    children.running.store(child.id(), Ordering::SeqCst);
    if children.interrupted() {
        forward_sigint(child.id());
    }
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        let prefix = prefix.to_string();
        pumps.push(std::thread::spawn(move || pump(out, prefix)));
    }
    if let Some(err) = child.stderr.take() {
        let prefix = prefix.to_string();
        pumps.push(std::thread::spawn(move || pump(err, prefix)));
    }
    let status = child.wait();
    children.running.store(0, Ordering::SeqCst);
    for p in pumps {
        let _ = p.join();
    }
    status.context("waiting for the step failed")
}

fn duration(d: std::time::Duration) -> OsString {
    HumanDuration(d).to_string().into()
}

/// The flags every child gets: profile and target.
pub(super) fn common_args(args: &SweepArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["--profile".into(), args.profile.profile.clone().into()];
    out.extend(target_args(&args.target));
    out
}

/// The target flags a child needs, from ours (`TargetSpec::command_line`).
pub(crate) fn target_args(t: &TargetArgs) -> Vec<OsString> {
    let mut out = t.spec().command_line();
    for domain in &t.allow_domain {
        out.extend(["--allow-domain".into(), domain.into()]);
    }
    out
}

pub(super) fn run_args(args: &SweepArgs, users: u32, seed: u64, dir: &Path) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["run".into()];
    out.extend(common_args(args));
    out.extend([
        "--users".into(),
        users.to_string().into(),
        "--seed".into(),
        seed.to_string().into(),
        "--duration".into(),
        duration(args.shape.duration.unwrap_or(DEFAULT_DURATION)),
        "--ramp-up".into(),
        duration(args.shape.ramp_up),
        "--drain".into(),
        duration(args.shape.drain),
        "--interval".into(),
        duration(args.shape.interval),
        "--action-timeout".into(),
        duration(args.shape.action_timeout),
        "--out".into(),
        dir.into(),
    ]);
    if let Some(day) = args.shape.day {
        out.extend(["--day".into(), duration(day)]);
    }
    if let Some(speed) = args.shape.speed {
        out.extend(["--speed".into(), speed.to_string().into()]);
    }
    if let Some(ms) = args.shape.qos_p95_ms {
        out.extend(["--qos-p95-ms".into(), ms.to_string().into()]);
    }
    if let Some(url) = &args.node_exporter {
        out.extend(["--node-exporter".into(), url.into()]);
    }
    for group in &args.group {
        out.extend(["--group".into(), group.into()]);
    }
    out.extend(file_args(&args.files));
    if let Some(address) = args.metrics.metrics_listen {
        out.extend(["--metrics-listen".into(), address.to_string().into()]);
        out.extend([
            "--metrics-linger".into(),
            duration(args.metrics.metrics_linger),
        ]);
    }
    out
}

/// The file-server flags, passed to every step as given (none for a mail sweep).
fn file_args(f: &crate::args::FileArgs) -> Vec<OsString> {
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
