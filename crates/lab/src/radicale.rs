//! Radicale, the lab's CalDAV server (`lab up --with caldav`).
//!
//! Debian's `radicale` 3.1 runs from `radicale/config` in the lab directory,
//! on 127.0.0.1 only, with the lab's users in an htpasswd file of plain
//! passwords, owner-only rights (a user reads and writes only under
//! `/userN/`), its storage in `radicale/collections` and no web interface.
//! It does not drop privileges itself, so the lab starts it through
//! `setpriv` as Debian's `radicale` system user: a Python HTTP server parsing
//! what clients send has no business running as root.

use std::path::Path;

use crate::dir;
use crate::layout::Layout;
use crate::process::ServerCommand;
use crate::{LabConfig, LabError};

/// The system user (and group) Radicale runs as; Debian's package makes it.
pub(crate) const SYSTEM_USER: &str = "radicale";

/// The Python interpreter Radicale's script names in its `#!` line. The lab
/// runs the interpreter itself, so the command line it recognises Radicale
/// by does not depend on the script's first line.
const PYTHON: &str = "/usr/bin/python3";
/// Debian's `radicale` entry point.
pub(crate) const SCRIPT: &str = "/usr/bin/radicale";

/// Radicale's command line, run through `setpriv` as [`SYSTEM_USER`] with
/// no supplementary groups.
pub(crate) fn command(layout: &Layout) -> ServerCommand {
    let mut command = ServerCommand::new(
        vec![
            PYTHON.into(),
            SCRIPT.into(),
            "--config".into(),
            layout.radicale_config().display().to_string(),
        ],
        None,
    );
    command.launcher = vec![
        "/usr/bin/setpriv".into(),
        format!("--reuid={SYSTEM_USER}"),
        format!("--regid={SYSTEM_USER}"),
        "--clear-groups".into(),
        "--".into(),
    ];
    command
}

/// Parallel connections Radicale serves: one per user (Radicale 3.1 speaks
/// HTTP/1.0 and closes after each response, so a user holds at most one),
/// plus room for probes and an independent check.
fn max_connections(users: u32) -> u32 {
    users.saturating_add(8)
}

/// Radicale's `config`.
pub(crate) fn config(config: &LabConfig, layout: &Layout) -> String {
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start. Radicale reads only
# this file (--config), nothing from /etc/radicale.
[server]
hosts = 127.0.0.1:{port}
# Radicale's default is 8 parallel connections; a benchmark's users would
# queue behind each other long before the server is loaded.
max_connections = {connections}

[auth]
# The lab's users and shared password, as for Dovecot: `user1` ... `userN`
# (without the domain: Radicale 3.1 cannot strip one).
type = htpasswd
htpasswd_filename = {users}
htpasswd_encryption = plain

[rights]
# Each user reads and writes only their own principal, /userN/.
type = owner_only

[storage]
filesystem_folder = {collections}

[web]
# No browser interface: nothing a benchmark uses.
type = none

[logging]
level = warning
",
        port = config.ports.caldav,
        connections = max_connections(config.users),
        users = layout.radicale_users().display(),
        collections = layout.radicale_collections().display(),
    )
}

/// The htpasswd file: `userN:PASSWORD` per line, plain, as the `plain`
/// encryption reads it.
pub(crate) fn users(config: &LabConfig, password: &str) -> String {
    (1..=config.users)
        .map(|n| format!("user{n}:{password}\n"))
        .collect()
}

/// Radicale's directories and files. The configuration is public; the users
/// file is readable by root and Radicale's group only; the storage belongs
/// to Radicale's user, which alone writes it.
pub(crate) fn prepare(config: &LabConfig, layout: &Layout, password: &str) -> Result<(), LabError> {
    let (uid, gid) = system_user()?;
    dir::ensure_dir(&layout.radicale_dir(), 0o755, None)?;
    dir::ensure_dir(&layout.radicale_collections(), 0o750, Some((uid, gid)))?;
    write(
        &layout.radicale_config(),
        &self::config(config, layout),
        0o644,
        0,
    )?;
    write(
        &layout.radicale_users(),
        &users(config, password),
        0o640,
        gid,
    )?;
    Ok(())
}

fn write(path: &Path, contents: &str, mode: u32, gid: u32) -> Result<(), LabError> {
    let file = dir::write_file(path, contents.as_bytes(), mode)?;
    std::os::unix::fs::fchown(&file, Some(0), Some(gid)).map_err(|e| LabError::io(path, e))
}

/// The uid and gid of Radicale's system user.
pub(crate) fn system_user() -> Result<(u32, u32), LabError> {
    nix::unistd::User::from_name(SYSTEM_USER)
        .ok()
        .flatten()
        .map(|u| (u.uid.as_raw(), u.gid.as_raw()))
        .ok_or(LabError::MissingPackage {
            what: "Radicale's system user `radicale`",
            path: "/etc/passwd",
            package: "radicale",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_listens_on_loopback_with_room_for_every_user() {
        let mut lab = LabConfig::new("/srv/lab");
        lab.users = 500;
        let text = config(&lab, &Layout::new("/srv/lab"));
        assert!(text.contains("hosts = 127.0.0.1:10080\n"), "{text}");
        assert!(text.contains("max_connections = 508\n"));
        assert!(text.contains("htpasswd_filename = /srv/lab/radicale/users\n"));
        assert!(text.contains("htpasswd_encryption = plain\n"));
        assert!(text.contains("type = owner_only\n"));
        assert!(text.contains("filesystem_folder = /srv/lab/radicale/collections\n"));
        assert!(
            text.contains(
                "[web]\n# No browser interface: nothing a benchmark uses.\ntype = none\n"
            )
        );
    }

    #[test]
    fn users_are_plain_htpasswd_lines() {
        let mut lab = LabConfig::new("/srv/lab");
        lab.users = 2;
        assert_eq!(users(&lab, "s3cret"), "user1:s3cret\nuser2:s3cret\n");
    }

    #[test]
    fn it_runs_as_its_own_user_and_is_known_by_its_interpreter() {
        let command = command(&Layout::new("/srv/lab"));
        assert_eq!(
            command.argv,
            [PYTHON, SCRIPT, "--config", "/srv/lab/radicale/config"]
        );
        let launch = command.launch_argv();
        assert_eq!(launch[0], "/usr/bin/setpriv");
        assert!(launch.contains(&"--reuid=radicale".to_owned()));
        assert!(launch.ends_with(&command.argv));
    }
}
