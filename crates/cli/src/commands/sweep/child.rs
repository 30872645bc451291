//! The child processes of the sweep (and of `tasks` and `matrix`) as they
//! run: their output streamed through with a prefix, and a stopping signal
//! passed on to the running child as SIGINT. What each child is given is
//! `peakhour_app::children`'s.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context as _;
use peakhour_app::peakhour_command;

use crate::commands::signals::Interrupt;

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
    let mut command = peakhour_command(args).context("cannot find the peakhour executable")?;
    let exe = command.get_program().to_owned();
    let mut child = command
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
