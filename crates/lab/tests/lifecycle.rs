//! The lab's lifecycle against the real Postfix and Dovecot (run as root,
//! with the packages from scripts/setup.sh installed).

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{config, lab_processes, scratch_dir};
use peakhour_lab::{Lab, LabConfig, LabError, LabGuard, ProcessId};

#[test]
fn up_twice_is_harmless_and_down_leaves_no_process_or_port() {
    let dir = scratch_dir();
    let config = config(dir.path(), 5);
    let first = Lab::up(&config).unwrap();
    assert!(!first.already_running);
    assert!(first.status.healthy, "{:#?}", first.status);
    assert_eq!(first.status.users, 5);
    assert_eq!(first.status.password.len(), 20);

    let second = Lab::up(&config).unwrap();
    assert!(second.already_running);
    assert_eq!(second.status.password, first.status.password);

    let pids = lab_processes(&second.status);
    assert!(pids.len() >= 6, "master processes and children: {pids:?}");
    let lab = Lab::new(dir.path());
    let report = lab.down(false).unwrap();
    assert_eq!(
        report.stopped,
        vec!["postfix".to_owned(), "dovecot".to_owned()]
    );
    assert!(report.remaining.is_empty());
    for pid in pids {
        // A zombie (exited, not yet reaped by init) is not a survivor.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(") ")
            .next()
            .and_then(|rest| rest.chars().next());
        assert!(
            matches!(state, None | Some('Z')),
            "lab process {pid} survived `down`: {stat}"
        );
    }
    for (service, port) in config.ports.named() {
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "{service} port {port} still taken after down"
        );
    }
    // The password survives a restart, so initialized mailboxes stay usable.
    let again = LabGuard::start(&config).unwrap();
    assert_eq!(again.status.password, first.status.password);
}

#[test]
fn down_cleans_up_after_a_crashed_master() {
    let dir = scratch_dir();
    let config = config(dir.path(), 3);
    let status = Lab::up(&config).unwrap().status;
    let dovecot = status.servers.iter().find(|s| s.name == "dovecot").unwrap();
    let master = dovecot.master_pid.unwrap();
    let children: Vec<i32> = dovecot
        .processes
        .iter()
        .map(|p| p.pid)
        .filter(|&p| p != master)
        .collect();
    assert!(!children.is_empty());
    // Simulate a crash: the master dies without stopping its children.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(master),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let lab = Lab::new(dir.path());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while lab.status().unwrap().healthy && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !lab.status().unwrap().healthy,
        "a lab without its Dovecot master is not healthy"
    );

    let report = lab.down(false).unwrap();
    assert!(report.remaining.is_empty(), "{report:?}");
    for pid in children {
        let alive = ProcessId::of(pid as u32).is_some_and(|p| p.is_alive());
        assert!(!alive, "orphaned Dovecot child {pid} survived `down`");
    }
}

#[test]
fn a_taken_port_is_named_before_anything_starts() {
    let dir = scratch_dir();
    let config = config(dir.path(), 2);
    let _squatter = TcpListener::bind(("127.0.0.1", config.ports.imap)).unwrap();
    let error = Lab::up(&config).unwrap_err();
    match &error {
        LabError::PortInUse { service, port } => {
            assert_eq!((*service, *port), ("imap", config.ports.imap));
        }
        other => panic!("expected PortInUse, got {other:?}"),
    }
    assert!(error.to_string().contains("--imap-port"), "{error}");
    // Nothing was started, so there is nothing to stop.
    assert!(Lab::new(dir.path()).status().is_err());
}

#[test]
fn up_with_other_settings_while_running_is_refused() {
    let dir = scratch_dir();
    let config = config(dir.path(), 2);
    let _lab = LabGuard::start(&config).unwrap();
    let bigger = LabConfig { users: 3, ..config };
    let error = Lab::up(&bigger).unwrap_err();
    assert!(
        matches!(error, LabError::RunningWithOtherSettings { .. }),
        "{error}"
    );
}
