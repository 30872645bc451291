//! Issues 14 point 2 and 15 point 3: the lab's optional servers, Radicale
//! (`--with caldav`) and Samba (`--with smb`), against the real packages,
//! checked with independent clients (Python's `http.client` and `smbclient`,
//! through `tests/lab_smoke.py`), stopped by `down` with every process and
//! port, removed by `--purge`, and held in a shaped lab's cgroup.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Bystander, assert_matches_schema, config, lab_processes, python_smoke, scratch_dir};
use peakhour_lab::{Lab, LabConfig, LabError, LabGuard, LabStatus, Limits, OptionalServer};

/// A lab of `users` users in `dir` running both optional servers.
fn with_both(dir: &Path, users: u32) -> LabConfig {
    LabConfig {
        with: OptionalServer::ALL.into_iter().collect(),
        ..config(dir, users)
    }
}

/// The real uid of a process (`Uid:` in `/proc/PID/status`).
fn process_uid(pid: i32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

/// Lists the lab's shares with `smbclient -L`, which makes smbd start
/// `samba-dcerpcd` (in a session of its own); waits until `status` shows it.
fn start_samba_dcerpcd(lab: &LabGuard, scratch: &Path) -> LabStatus {
    let auth = scratch.join("smb-auth");
    std::fs::write(
        &auth,
        format!("username = user1\npassword = {}\n", lab.status.password),
    )
    .unwrap();
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    let port = lab.status.endpoints.smb.as_deref().unwrap();
    let port = port.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    let listing = Command::new("smbclient")
        .args(["-L", "//127.0.0.1", "-p", port, "-A"])
        .arg(&auth)
        .output()
        .expect("smbclient (scripts/setup.sh installs it)");
    let said = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing.status.success() && said.contains("peakhour"),
        "smbclient -L: {said}{}",
        String::from_utf8_lossy(&listing.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = lab.lab().status().unwrap();
        let samba = status.servers.iter().find(|s| s.name == "samba").unwrap();
        if samba.processes.iter().any(|p| p.name == "samba-dcerpcd") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "no samba-dcerpcd after a share listing: {samba:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// True if `pid` is gone or a zombie (exited, not yet reaped by init).
fn is_gone(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next());
    matches!(state, None | Some('Z'))
}

#[test]
fn issue_14_15_caldav_and_smb_serve_the_lab_users_and_go_with_down() {
    let dir = scratch_dir();
    let config = with_both(dir.path(), 3);
    let lab = LabGuard::start(&config).unwrap();
    let status = &lab.status;
    assert!(status.healthy, "{status:#?}");
    assert_matches_schema(status);
    let json = serde_json::to_value(status).unwrap();
    assert_eq!(json["with"], serde_json::json!(["caldav", "smb"]));
    assert_eq!(
        status.endpoints.caldav.as_deref(),
        Some(format!("http://127.0.0.1:{}/", config.ports.caldav).as_str())
    );
    assert_eq!(
        status.endpoints.smb.as_deref(),
        Some(format!("smb://127.0.0.1:{}/peakhour", config.ports.smb).as_str())
    );
    for service in ["caldav", "smb"] {
        let probe = status.ports.iter().find(|p| p.service == service).unwrap();
        assert!(probe.answers, "{probe:?}");
    }
    // Radicale runs as its own user (who owns its storage), never as root.
    let radicale = status
        .servers
        .iter()
        .find(|s| s.name == "radicale")
        .unwrap();
    assert!(radicale.running, "{radicale:?}");
    let storage = dir.path().join("radicale/collections");
    assert_eq!(
        process_uid(radicale.master_pid.unwrap()),
        std::fs::metadata(&storage).unwrap().uid()
    );
    assert_ne!(std::fs::metadata(&storage).unwrap().uid(), 0);

    // Independent clients: Python's http.client for CalDAV, smbclient for SMB.
    let said = python_smoke(&lab, &["--user", "2"]);
    assert!(said.contains("CalDAV event /user1/smoke-"), "{said}");
    assert!(said.contains("user2 refused"), "{said}");
    assert!(said.contains("SMB put/get of user1/smoke-"), "{said}");
    // What they wrote is in the lab directory.
    assert!(storage.join("collection-root/user1").is_dir());
    let share_user1 = dir.path().join("samba/share/user1");
    assert!(
        std::fs::read_dir(&share_user1)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("smoke-")),
        "nothing written in {}",
        share_user1.display()
    );

    // `down` stops everything, samba-dcerpcd included, and frees every port.
    let scratch = scratch_dir();
    let status = start_samba_dcerpcd(&lab, scratch.path());
    let pids = lab_processes(&status);
    let report = lab.lab().down(false).unwrap();
    assert_eq!(
        report.stopped,
        ["postfix", "dovecot", "radicale", "samba", "samba-dcerpcd"]
    );
    assert!(report.remaining.is_empty(), "{report:?}");
    assert!(report.not_ours.is_empty(), "{report:?}");
    for pid in pids {
        assert!(is_gone(pid), "lab process {pid} survived `down`");
    }
    for (service, port) in config.services() {
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "{service} port {port} still taken after down"
        );
    }

    // `--purge` removes their state with the rest of the lab's.
    let purged = lab.lab().down(true).unwrap().purge.unwrap();
    for made in ["radicale", "samba"] {
        assert!(
            purged
                .removed
                .contains(&dir.path().canonicalize().unwrap().join(made)),
            "{made} not purged: {purged:?}"
        );
        assert!(!dir.path().join(made).exists());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn issue_14_15_a_shaped_lab_holds_radicale_and_samba_in_its_cgroup() {
    let dir = scratch_dir();
    let shaped = LabConfig {
        limits: Limits::default().with_cpus(1.0).unwrap(),
        ..with_both(dir.path(), 2)
    };
    let lab = LabGuard::start(&shaped).unwrap();
    let cgroup = lab.status.limits.cgroup.clone().expect("a cgroup");
    let scratch = scratch_dir();
    let status = start_samba_dcerpcd(&lab, scratch.path());
    let pids = lab_processes(&status);
    for name in ["radicale", "samba"] {
        let server = status.servers.iter().find(|s| s.name == name).unwrap();
        assert!(
            pids.contains(&server.master_pid.unwrap()),
            "{name}: {server:?}"
        );
    }
    for dir in &cgroup.dirs {
        let members: Vec<i32> = std::fs::read_to_string(Path::new(dir).join("cgroup.procs"))
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        for pid in &pids {
            assert!(
                members.contains(pid),
                "server pid {pid} is not in {dir}: {members:?}\n{status:#?}"
            );
        }
    }
    let report = lab.lab().down(false).unwrap();
    assert!(report.remaining.is_empty(), "{report:?}");
    assert!(report.warnings.is_empty(), "{report:?}");
    for dir in &cgroup.dirs {
        assert!(!Path::new(dir).exists(), "{dir} outlived `down`");
    }
}

#[test]
fn issue_14_15_optional_servers_are_part_of_a_labs_settings() {
    let dir = scratch_dir();
    let caldav_only = LabConfig {
        with: [OptionalServer::Caldav].into_iter().collect(),
        ..config(dir.path(), 2)
    };
    let lab = LabGuard::start(&caldav_only).unwrap();
    assert!(lab.status.endpoints.caldav.is_some());
    assert!(lab.status.endpoints.smb.is_none());
    let names: Vec<&str> = lab.status.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dovecot", "postfix", "radicale"]);
    assert!(!lab.status.ports.iter().any(|p| p.service == "smb"));
    assert_matches_schema(&lab.status);
    // Asking for Samba too while it runs without is refused, as any change is.
    let both = LabConfig {
        with: OptionalServer::ALL.into_iter().collect(),
        ..caldav_only.clone()
    };
    let error = Lab::up(&both).unwrap_err();
    assert!(
        matches!(error, LabError::RunningWithOtherSettings { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("with caldav"), "{error}");
}

#[test]
fn issue_14_15_a_tampered_state_or_pid_file_cannot_direct_down_at_other_processes() {
    let dir = scratch_dir();
    let lab = Lab::new(dir.path());
    Lab::up(&with_both(dir.path(), 2)).unwrap();
    lab.down(false).unwrap();
    let bystander = Bystander::start();
    let victim = bystander.id();
    let state_file = lab.layout().state_file();
    let clean: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap();

    // The bystander named as Radicale and as smbd, with its true start time.
    let mut state = clean.clone();
    let planted = serde_json::json!({"pid": victim.pid, "start_ticks": victim.start_ticks});
    state["radicale"] = planted.clone();
    state["samba"] = planted;
    std::fs::write(&state_file, serde_json::to_string(&state).unwrap()).unwrap();
    let report = lab.down(false).unwrap();
    assert!(victim.is_alive(), "down killed a process it did not start");
    assert!(report.stopped.is_empty(), "{report:?}");
    assert_eq!(report.not_ours.len(), 2, "{report:?}");
    assert!(report.not_ours[0].starts_with("radicale: "), "{report:?}");

    // A samba-dcerpcd pid file naming the bystander (smbd itself gone).
    let mut state = clean;
    state["samba"] = serde_json::json!({"pid": i32::MAX, "start_ticks": 0});
    std::fs::write(&state_file, serde_json::to_string(&state).unwrap()).unwrap();
    std::fs::write(
        lab.layout().samba_dcerpcd_pid_file(),
        victim.pid.to_string(),
    )
    .unwrap();
    let report = lab.down(false).unwrap();
    assert!(victim.is_alive(), "down killed a process a pid file named");
    assert!(report.stopped.is_empty(), "{report:?}");
    assert_eq!(report.killed, 0);
    let status = lab.status().unwrap();
    assert!(
        status.servers.iter().all(|s| s.processes.is_empty()),
        "{status:#?}"
    );
}
