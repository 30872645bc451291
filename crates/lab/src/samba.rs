//! Samba, the lab's SMB file server (`lab up --with smb`).
//!
//! Debian's `smbd` 4.17 runs from `samba/smb.conf` in the lab directory: on a
//! loopback port only, no NetBIOS, every state directory private to the lab,
//! and one share, `peakhour`, with a directory per user. The lab's users sign
//! in with the lab's password; a `username map` signs every one of them in
//! as the Unix account `nobody`, whose Samba password (in a private tdbsam
//! database) is the lab's, so no system user is created.
//!
//! Two of smbd's habits shape how it is run and stopped:
//!
//! * On stop it signals its whole process group (`kill(0, SIGTERM)`). The
//!   lab starts it with `setsid` like every master, so its group is its own.
//! * It starts `samba-dcerpcd` on demand (for a share listing, say), which
//!   makes a session of its own and outlives smbd. `down` stops it from its
//!   pid file in the lab's run directory, after checking that the process is
//!   `samba-dcerpcd` started with this lab's configuration after this lab's
//!   smbd.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::dir;
use crate::layout::Layout;
use crate::process::{ProcessId, Recognised, ServerCommand};
use crate::{LabConfig, LabError};

/// The share's name.
pub(crate) const SHARE: &str = "peakhour";

/// The Unix account every lab user works as (Debian has it).
const UNIX_USER: &str = "nobody";

/// Samba's helper executables (`samba-dcerpcd`, `rpcd_*`).
const HELPERS: &str = "/usr/libexec/samba/";

/// Samba's state directories in the lab: `private` holds the password
/// database and is root's alone.
const STATE_DIRS: [(&str, u32); 6] = [
    ("private", 0o700),
    ("state", 0o755),
    ("cache", 0o755),
    ("lock", 0o755),
    ("run", 0o755),
    ("log", 0o755),
];

/// smbd's command line: in the foreground (the lab tracks it by PID), and
/// without making a process group of its own, which `setsid` has done.
pub(crate) fn command(layout: &Layout) -> ServerCommand {
    ServerCommand::new(
        vec![
            "/usr/sbin/smbd".into(),
            "--foreground".into(),
            "--no-process-group".into(),
            "-s".into(),
            layout.samba_conf().display().to_string(),
        ],
        Some(HELPERS),
    )
}

/// How `samba-dcerpcd` is recognised: smbd starts it with this lab's
/// configuration first, then arguments of its own (a file descriptor number,
/// the debug level).
fn dcerpcd_command(layout: &Layout) -> ServerCommand {
    let mut command = ServerCommand::new(
        vec![
            format!("{HELPERS}samba-dcerpcd"),
            format!("--configfile={}", layout.samba_conf().display()),
        ],
        Some(HELPERS),
    );
    command.argv_is_prefix = true;
    command
}

/// `smb.conf`.
pub(crate) fn conf(config: &LabConfig, layout: &Layout) -> String {
    let state = |name: &str| layout.samba_state(name).display().to_string();
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start. smbd reads only
# this file (-s), nothing from /etc/samba, and keeps all its state in the lab.
[global]
\tserver role = standalone server
\t# Loopback only, on the lab's port, without NetBIOS (no nmbd, no port 139).
\tsmb ports = {port}
\tinterfaces = 127.0.0.1
\tbind interfaces only = yes
\tdisable netbios = yes
\tprivate dir = {private}
\tstate directory = {state_dir}
\tcache directory = {cache}
\tlock directory = {lock}
\tpid directory = {run}
\tncalrpc dir = {run}/ncalrpc
\tlog file = {log}/smbd.log
\tlog level = 1
\t# The lab's users sign in with the lab's password: the map makes each of
\t# them the Unix account {UNIX_USER}, whose Samba password is the lab's.
\tpassdb backend = tdbsam:{private}/passdb.tdb
\tusername map = {map}
\tmap to guest = never
\t# SMB 2 and 3 only, as today's clients speak.
\tserver min protocol = SMB2_02
\t# No printers: nothing to load, no spooler to start.
\tload printers = no
\tprinting = bsd
\tprintcap name = /dev/null
\tdisable spoolss = yes

# One directory per user: user1 ... user{users}.
[{SHARE}]
\tpath = {share}
\tread only = no
",
        port = config.ports.smb,
        private = state("private"),
        state_dir = state("state"),
        cache = state("cache"),
        lock = state("lock"),
        run = state("run"),
        log = state("log"),
        map = layout.samba_users_map().display(),
        users = config.users,
        share = layout.samba_share().display(),
    )
}

/// The `username map`: one line per user, each naming the Unix account the
/// user works as.
pub(crate) fn users_map(config: &LabConfig) -> String {
    (1..=config.users)
        .map(|n| format!("{UNIX_USER} = user{n}\n"))
        .collect()
}

/// Samba's directories, files, the share's user directories and the
/// password, before smbd starts.
pub(crate) fn prepare(config: &LabConfig, layout: &Layout, password: &str) -> Result<(), LabError> {
    let (uid, gid) = unix_user()?;
    dir::ensure_dir(&layout.samba_dir(), 0o755, None)?;
    for (name, mode) in STATE_DIRS {
        dir::ensure_dir(&layout.samba_state(name), mode, None)?;
    }
    let share = layout.samba_share();
    dir::ensure_dir(&share, 0o755, None)?;
    for n in 1..=config.users {
        dir::ensure_dir(&share.join(format!("user{n}")), 0o755, Some((uid, gid)))?;
    }
    dir::write_file(&layout.samba_conf(), conf(config, layout).as_bytes(), 0o644)?;
    dir::write_file(
        &layout.samba_users_map(),
        users_map(config).as_bytes(),
        0o644,
    )?;
    set_password(layout, password)
}

/// Sets the Samba password of [`UNIX_USER`] in the lab's own password
/// database (`smbpasswd -a` adds the entry or changes it).
fn set_password(layout: &Layout, password: &str) -> Result<(), LabError> {
    let failed = |reason: String| LabError::ServerFailed {
        server: "Samba",
        reason: format!("smbpasswd could not set the lab's password: {reason}"),
        log: layout.samba_log(),
    };
    let mut child = Command::new("/usr/bin/smbpasswd")
        .arg("-c")
        .arg(layout.samba_conf())
        .args(["-a", "-s", UNIX_USER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LabError::Spawn {
            program: "smbpasswd".into(),
            reason: e.to_string(),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // New password, then again to confirm (`-s` reads both from stdin).
        writeln!(stdin, "{password}\n{password}").map_err(|e| failed(e.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(format!(
            "{} {}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

fn unix_user() -> Result<(u32, u32), LabError> {
    nix::unistd::User::from_name(UNIX_USER)
        .ok()
        .flatten()
        .map(|u| (u.uid.as_raw(), u.gid.as_raw()))
        .ok_or(LabError::MissingPackage {
            what: "the Unix user `nobody`",
            path: "/etc/passwd",
            package: "base-passwd",
        })
}

/// The `samba-dcerpcd` this lab's smbd started, with the command that
/// recognises it, if its pid file names one: a process running Samba's
/// `samba-dcerpcd` with this lab's configuration, started after this lab's
/// smbd (`smbd_master`). A stale pid file (the helper exits when idle, and
/// its PID may be reused) names nothing.
pub(crate) fn dcerpcd(
    layout: &Layout,
    smbd_master: ProcessId,
) -> Option<(ProcessId, ServerCommand)> {
    let pid_file = layout.samba_dcerpcd_pid_file();
    let pid: u32 = read_pid(&pid_file)?;
    let process = ProcessId::of(pid)?;
    let command = dcerpcd_command(layout);
    (process.start_ticks >= smbd_master.start_ticks
        && process.recognise(&command) == Recognised::Running)
        .then_some((process, command))
}

fn read_pid(path: &Path) -> Option<u32> {
    dir::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_keeps_samba_on_loopback_and_in_the_lab() {
        let mut lab = LabConfig::new("/srv/lab");
        lab.users = 3;
        let text = conf(&lab, &Layout::new("/srv/lab"));
        for line in [
            "\tsmb ports = 10445\n",
            "\tinterfaces = 127.0.0.1\n",
            "\tbind interfaces only = yes\n",
            "\tdisable netbios = yes\n",
            "\tprivate dir = /srv/lab/samba/private\n",
            "\tpid directory = /srv/lab/samba/run\n",
            "\tpassdb backend = tdbsam:/srv/lab/samba/private/passdb.tdb\n",
            "\tusername map = /srv/lab/samba/users.map\n",
            "[peakhour]\n\tpath = /srv/lab/samba/share\n\tread only = no\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        let mut settings = text.lines().filter(|l| !l.trim_start().starts_with('#'));
        assert!(!settings.any(|l| l.contains("/etc/")), "{text}");
    }

    #[test]
    fn every_user_maps_to_one_unix_account() {
        let mut lab = LabConfig::new("/srv/lab");
        lab.users = 2;
        assert_eq!(users_map(&lab), "nobody = user1\nnobody = user2\n");
    }

    #[test]
    fn dcerpcd_is_known_by_its_program_and_this_labs_configuration() {
        let layout = Layout::new("/srv/lab");
        let command = dcerpcd_command(&layout);
        assert!(command.argv_is_prefix);
        assert_eq!(
            command.argv,
            [
                "/usr/libexec/samba/samba-dcerpcd",
                "--configfile=/srv/lab/samba/smb.conf"
            ]
        );
        assert_eq!(self::command(&layout).argv[0], "/usr/sbin/smbd");
    }
}
