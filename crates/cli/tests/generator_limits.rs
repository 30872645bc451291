//! Issue 25, item 3: before a run starts, peakhour says which limit of this
//! machine it would hit first, and where ports are short on a loopback
//! target, its users connect from several 127.0.0.x source addresses. Shown
//! here on a real lab with a per-source port budget forced small
//! (`PEAKHOUR_PORTS_PER_SOURCE`), as the server saw it (Dovecot's log).
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use common::{PEAKHOUR, start_lab};

const USERS: u32 = 6;

/// Every `imap-login: Info: Login: user=<...>, ..., rip=...` line of
/// Dovecot's log as (user, remote address).
fn logins(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter(|line| line.contains("imap-login: Info: Login: user=<"))
        .filter_map(|line| {
            let user = line.split("user=<").nth(1)?.split('>').next()?;
            let rip = line.split("rip=").nth(1)?.split(',').next()?;
            Some((user.to_owned(), rip.to_owned()))
        })
        .collect()
}

#[test]
fn issue_25_item_3_users_connect_from_several_loopback_addresses_when_ports_are_short() {
    let (_dir, lab) = start_lab(USERS);
    let lab_dir = lab.status.dir.clone();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    // 4 ports per source address, 3 of them counted on (90%): 6 users and
    // their submissions need 3 addresses.
    let output = Command::new(PEAKHOUR)
        .env("PEAKHOUR_PORTS_PER_SOURCE", "4")
        .args(["run", "--profile", "mmb-medium", "--lab-dir", &lab_dir])
        .args(["--users", &USERS.to_string(), "--seed", "7"])
        .args(["--ramp-up", "1s", "--duration", "3s", "--drain", "2s"])
        .args(["--interval", "1s", "--out", run_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    // Exit 1 is a failed QoS verdict (empty mailboxes); 2 would be a refusal.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{:?}",
        output.status
    );
    assert!(
        stderr.contains("first ephemeral ports of one source address"),
        "{stderr}"
    );
    assert!(
        stderr.contains("connect from 3 loopback source addresses (127.0.0.1 to 127.0.0.3"),
        "{stderr}"
    );

    // The run's record says where its users connected from.
    let config = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(
        config.contains(r#"source_addresses = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]"#),
        "{config}"
    );

    let log = std::fs::read_to_string(peakhour_lab::Layout::new(&lab_dir).dovecot_log()).unwrap();
    let mut by_user: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (user, rip) in logins(&log) {
        by_user.entry(user).or_default().insert(rip);
    }
    let addresses: BTreeSet<&String> = by_user.values().flatten().collect();
    let expected: BTreeSet<String> = (1..=3).map(|i| format!("127.0.0.{i}")).collect();
    assert_eq!(
        addresses,
        expected.iter().collect(),
        "the server saw logins from {by_user:?}"
    );
    // Each user keeps its one address (round-robin by user, not by connection).
    assert!(by_user.values().all(|rips| rips.len() == 1), "{by_user:?}");
}

#[test]
fn issue_25_item_3_a_run_beyond_the_descriptor_limit_is_refused_with_the_shards() {
    let (_dir, lab) = start_lab(2);
    let lab_dir = lab.status.dir.clone();
    let out = tempfile::tempdir().unwrap();
    // Two users on the lab, with the run's descriptor limit lowered to 60
    // (soft) and 70 (hard): peakhour raises the soft limit to the hard one,
    // and of those 70 the monitor's share (4) and the reserve (64) leave
    // room for one user.
    let run = |extra: &[&str], dir: &str| {
        Command::new("prlimit")
            .args(["--nofile=60:70", PEAKHOUR, "run", "--profile", "mmb-medium"])
            .args(["--lab-dir", &lab_dir, "--users", "2", "--duration", "2s"])
            .args(["--ramp-up", "1s", "--drain", "1s"])
            .args(["--out", out.path().join(dir).to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let output = run(&[], "refused");
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("first file descriptors: 71 needed, 70 available (room for 1 user)"),
        "{stderr}"
    );
    assert!(stderr.contains("--shard I/2"), "{stderr}");
    assert!(
        !out.path().join("refused").join("config.toml").exists(),
        "refused before the run directory is written"
    );

    // --beyond-limits runs it anyway, saying the same numbers.
    let output = run(&["--beyond-limits"], "anyway");
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{:?}: {stderr}",
        output.status
    );
    assert!(stderr.contains("71 needed, 70 available"), "{stderr}");
    assert!(out.path().join("anyway").join("summary.json").exists());
}
