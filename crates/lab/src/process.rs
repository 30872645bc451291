//! The processes a lab starts: spawning them in their own session, knowing
//! them again by PID and start time, and stopping them and every child.
//!
//! Each server master is started under `setsid`, so the master and every
//! process it forks share a session id equal to the master's PID. That makes
//! "every process this lab started" a question `/proc` can answer exactly,
//! even after a crash left children behind.
//!
//! `state.json` says which PIDs those were, but a state file can be wrong or
//! planted, so nothing is signalled on its word alone: a master must have the
//! recorded start time and the very command line the lab runs for that
//! directory (derived from the directory, never read from the state), and a
//! leftover child must be in the master's session, younger than it, and run
//! one of the server's own executables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::LabError;

/// A process the lab started, known by PID and by the kernel's start time so
/// that a recycled PID is never mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    /// The PID (also the session id of everything it forks).
    pub pid: i32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
}

/// A process seen in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessInfo {
    /// PID.
    pub pid: i32,
    /// Command name (`/proc/PID/comm`).
    pub name: String,
}

/// What the lab runs for one server, to recognise its processes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerCommand {
    /// The program and its arguments, exactly as the server runs (its
    /// `/proc/PID/cmdline`).
    pub(crate) argv: Vec<String>,
    /// What runs `argv` and then becomes it by `exec` (e.g. `setpriv`, which
    /// drops root first); empty if the lab runs `argv` itself.
    pub(crate) launcher: Vec<String>,
    /// True if a process whose command line merely starts with `argv` is the
    /// server: for `samba-dcerpcd`, which smbd starts with arguments of its
    /// own choosing after the configuration file.
    pub(crate) argv_is_prefix: bool,
    /// The directory holding the server's helper executables, if it has any; a
    /// process in the master's session that runs anything else is not the
    /// server's.
    pub(crate) helpers_dir: Option<&'static str>,
    /// Further directories of helpers, for a server whose helpers come from
    /// two places (Cyrus: the packages' and the privately unpacked `imapd`).
    pub(crate) more_helper_dirs: &'static [&'static str],
}

impl ServerCommand {
    /// A server run as `argv`, whose helpers live in `helpers_dir`.
    pub(crate) fn new(argv: Vec<String>, helpers_dir: Option<&'static str>) -> Self {
        ServerCommand {
            argv,
            launcher: Vec::new(),
            argv_is_prefix: false,
            helpers_dir,
            more_helper_dirs: &[],
        }
    }

    /// What the lab executes to start the server: the launcher, then `argv`.
    pub(crate) fn launch_argv(&self) -> Vec<String> {
        self.launcher.iter().chain(&self.argv).cloned().collect()
    }

    /// True if `cmdline` is this server's command line.
    fn matches(&self, cmdline: &[String]) -> bool {
        if self.argv_is_prefix {
            cmdline.starts_with(&self.argv)
        } else {
            cmdline == self.argv.as_slice()
        }
    }

    /// True if `pid` runs one of this server's executables: the master's
    /// program (after links: `/usr/bin/python3` runs as `python3.11`), or a
    /// helper from its directory.
    fn runs_our_executable(&self, pid: i32) -> bool {
        let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
            return false;
        };
        // An executable replaced by a package upgrade reads "PATH (deleted)".
        let exe = exe.to_string_lossy();
        let exe = exe.strip_suffix(" (deleted)").unwrap_or(&exe);
        let Some(program) = self.argv.first() else {
            return false;
        };
        let resolved = std::fs::canonicalize(program).ok();
        exe == program
            || resolved.is_some_and(|r| r.as_os_str() == exe)
            || self.helpers_dir.is_some_and(|dir| exe.starts_with(dir))
            || self.more_helper_dirs.iter().any(|dir| exe.starts_with(dir))
    }
}

/// Whether the master a state file names is the lab's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recognised {
    /// It runs, with the recorded start time and the lab's command line.
    Running,
    /// No process has that PID and start time any more (children of a
    /// crashed master may remain).
    Gone,
    /// A process with that PID and start time runs something else: the
    /// state is not to be trusted, and the process is left alone.
    Foreign(String),
}

/// The fields of `/proc/PID/stat` the lab needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    session: i32,
    start_ticks: u64,
    zombie: bool,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `/proc/PID/stat`. The command name (field 2) may contain spaces and
/// parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // after_name starts at field 3 (state); field N is at index N - 3.
    Some(Stat {
        zombie: fields.first()? == &"Z",
        session: fields.get(6 - 3)?.parse().ok()?,
        start_ticks: fields.get(22 - 3)?.parse().ok()?,
    })
}

impl ProcessId {
    /// Identifies a running process now.
    pub fn of(pid: u32) -> Option<ProcessId> {
        let pid = i32::try_from(pid).ok()?;
        read_stat(pid).map(|stat| ProcessId {
            pid,
            start_ticks: stat.start_ticks,
        })
    }

    /// True while this very process (not a later one with the same PID) runs.
    pub fn is_alive(&self) -> bool {
        read_stat(self.pid).is_some_and(|stat| stat.start_ticks == self.start_ticks && !stat.zombie)
    }

    /// Whether this is the master the lab started with `command`.
    pub(crate) fn recognise(&self, command: &ServerCommand) -> Recognised {
        if !self.is_alive() {
            return Recognised::Gone;
        }
        let cmdline = command_line(self.pid);
        if cmdline.as_deref().is_some_and(|c| command.matches(c)) {
            Recognised::Running
        } else {
            Recognised::Foreign(format!(
                "pid {} runs {:?}, not {:?}",
                self.pid,
                cmdline.unwrap_or_default().join(" "),
                command.argv.join(" ")
            ))
        }
    }

    /// Every live process of the server `command` started as this master:
    /// the master and its children, known by session, age and executable.
    ///
    /// If the master is gone (a crash), its children keep the session id; they
    /// are still found, unless a different process now owns the PID as a
    /// session leader, in which case the session is not ours and nothing is
    /// returned. If the PID and start time are a process that is not the
    /// server, nothing is returned either.
    pub(crate) fn server_processes(&self, command: &ServerCommand) -> Vec<ProcessInfo> {
        if matches!(self.recognise(command), Recognised::Foreign(_)) {
            return Vec::new();
        }
        self.session_members()
            .into_iter()
            .filter(|p| command.runs_our_executable(p.pid))
            .collect()
    }

    /// Every live process in this process's session: the master and its children.
    ///
    /// If the master is gone (a crash), its children keep the session id; they
    /// are still found, unless a different process now owns the PID as a
    /// session leader, in which case the session is not ours and nothing is returned.
    /// This does not check what the processes run: see the lab's own use in `down`.
    pub fn session_members(&self) -> Vec<ProcessInfo> {
        if let Some(leader) = read_stat(self.pid)
            && leader.start_ticks != self.start_ticks
            && leader.session == self.pid
        {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut members = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Some(stat) = read_stat(pid) else { continue };
            // Children start after the master; anything older is unrelated.
            if stat.session == self.pid && !stat.zombie && stat.start_ticks >= self.start_ticks {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|s| s.trim_end().to_owned())
                    .unwrap_or_default();
                members.push(ProcessInfo { pid, name });
            }
        }
        members.sort_by_key(|p| p.pid);
        members
    }

    /// Stops the server `command` started as this master: SIGTERM to the
    /// master, up to `grace` for it and its children to exit, then SIGKILL to
    /// whatever of the server remains. A master that is not the lab's is not
    /// signalled, nor is anything of its session. Returns how many processes
    /// had to be killed.
    pub(crate) fn stop_server(&self, command: &ServerCommand, grace: Duration) -> usize {
        match self.recognise(command) {
            Recognised::Foreign(_) => return 0,
            Recognised::Running => {
                let _ = kill(Pid::from_raw(self.pid), Signal::SIGTERM);
            }
            Recognised::Gone => {}
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !self.is_alive() && self.server_processes(command).is_empty() {
                reap_exited_children();
                return 0;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let leftovers = self.server_processes(command);
        for process in &leftovers {
            let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
        }
        // Give the kernel a moment to reap them so that ports are free on return.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && !self.server_processes(command).is_empty() {
            thread::sleep(Duration::from_millis(10));
        }
        reap_exited_children();
        leftovers.len()
    }
}

/// The command line of `pid` (`/proc/PID/cmdline`), one string per argument.
fn command_line(pid: i32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|&b| b == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect(),
    )
}

/// Children this process spawned and has not reaped yet.
fn spawned() -> std::sync::MutexGuard<'static, Vec<std::process::Child>> {
    static SPAWNED: std::sync::Mutex<Vec<std::process::Child>> = std::sync::Mutex::new(Vec::new());
    SPAWNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reaps every spawned child that has exited.
fn reap_exited_children() {
    spawned().retain_mut(|child| !matches!(child.try_wait(), Ok(Some(_)) | Err(_)));
}

/// Joins the cgroups whose `cgroup.procs` files are given ($2 ... $(n+1)),
/// then becomes the server. Run as `sh -c SCRIPT peakhour-lab N FILES... PROGRAM ARGS...`.
const JOIN_CGROUPS_THEN_EXEC: &str = r#"n=$1; shift
while [ "$n" -gt 0 ]; do
  echo $$ > "$1" || { echo "peakhour lab: cannot join the cgroup $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
exec setsid "$@""#;

/// Starts `program args` in a new session (`setsid`), with stdout and stderr
/// appended to `console`. With `cgroup_procs`, the process first writes its
/// own PID into each of those files, so it runs, and everything it forks is
/// born, inside the lab's cgroup. The process is not waited for: it outlives
/// peakhour and is stopped by `lab down`.
pub(crate) fn spawn_in_new_session(
    program: &str,
    args: &[&str],
    console: &Path,
    cgroup_procs: &[PathBuf],
) -> Result<ProcessId, LabError> {
    let log = crate::dir::append_file(console, 0o644)?;
    let log_err = log.try_clone().map_err(|e| LabError::io(console, e))?;
    // `setsid` execs the program directly (the child is not a group leader),
    // and so does the shell, so the PID we get is the server's own PID and
    // its session id.
    let mut command = if cgroup_procs.is_empty() {
        Command::new("setsid")
    } else {
        let mut shell = Command::new("/bin/sh");
        shell
            .args(["-c", JOIN_CGROUPS_THEN_EXEC, "peakhour-lab"])
            .arg(cgroup_procs.len().to_string())
            .args(cgroup_procs);
        shell
    };
    let child = command
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| LabError::Spawn {
            program: program.to_owned(),
            reason: e.to_string(),
        })?;
    let pid = child.id();
    // Not waited for here: the server outlives this call. When peakhour exits,
    // `init` adopts and reaps it; while this process lives (tests, `up` then
    // `down` in one program), `stop_session` reaps it so no zombie is left.
    spawned().push(child);
    // The start time can be read only once the process exists in /proc,
    // which it does as soon as fork returned.
    ProcessId::of(pid).ok_or_else(|| LabError::Spawn {
        program: program.to_owned(),
        reason: "exited immediately".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_spaces_and_parens_in_the_name() {
        let line = "4242 (imap (pre) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.session, 4242);
        assert_eq!(stat.start_ticks, 987654);
        assert!(!stat.zombie);
    }

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        let me = ProcessId::of(std::process::id()).unwrap();
        assert!(me.is_alive());
        let impostor = ProcessId {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(!impostor.is_alive());
    }

    #[test]
    fn stop_session_ends_a_process_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let console = dir.path().join("console.log");
        // A shell that forks a child sleeping in the same session, then waits.
        let master = spawn_in_new_session("sh", &["-c", "sleep 30 & wait"], &console, &[]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while master.session_members().len() < 2 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            master.session_members().len(),
            2,
            "shell and its sleep child"
        );
        let command = ServerCommand::new(
            vec!["sh".into(), "-c".into(), "sleep 30 & wait".into()],
            Some("/usr/bin/"),
        );
        assert_eq!(master.recognise(&command), Recognised::Running);
        master.stop_server(&command, Duration::from_millis(500));
        assert!(!master.is_alive());
        assert!(master.session_members().is_empty());
    }

    #[test]
    fn a_process_with_another_command_line_is_foreign_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let console = dir.path().join("console.log");
        let sleeper = spawn_in_new_session("sleep", &["30"], &console, &[]).unwrap();
        let dovecot = ServerCommand::new(
            vec!["/usr/sbin/dovecot".into(), "-F".into()],
            Some("/usr/lib/dovecot/"),
        );
        assert!(matches!(
            sleeper.recognise(&dovecot),
            Recognised::Foreign(_)
        ));
        assert!(sleeper.server_processes(&dovecot).is_empty());
        assert_eq!(sleeper.stop_server(&dovecot, Duration::from_millis(100)), 0);
        assert!(sleeper.is_alive(), "a foreign process was signalled");
        let _ = kill(Pid::from_raw(sleeper.pid), Signal::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(5);
        while sleeper.is_alive() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        reap_exited_children();
    }
}
