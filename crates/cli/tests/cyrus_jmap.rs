//! Issue 14 ("Must show", Cyrus and JMAP): on a lab with Cyrus as its mail
//! store (`lab up --mail-server cyrus`), `init` and `run --protocol jmap` of
//! `mmb-medium` with every action measured and nothing lost, the same
//! profile over IMAP on the same lab, and `peakhour compare` of the two;
//! the JMAP run again against `--target explicit --jmap URL`; and the
//! monitor's `cyrus` group (no `dovecot` one) in the run's files.
//! One Cyrus lab for the whole file: starting one makes every user's
//! mailboxes, which takes most of a second per user.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;

use common::{peakhour, start_cyrus_lab};

const ACTIONS: [&str; 6] = [
    "check_inbox",
    "send",
    "read",
    "move",
    "delete",
    "update_calendar",
];

/// A short run of `mmb-medium` over `protocol`; its summary.
fn run(lab_dir: &str, protocol: &str, out: &Path) -> serde_json::Value {
    let output = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        lab_dir,
        "--protocol",
        protocol,
        "--speed",
        "400",
        "--duration",
        "20s",
        "--ramp-up",
        "3s",
        "--drain",
        "15s",
        "--interval",
        "5s",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(out.join("summary.json"))
        .unwrap_or_else(|e| panic!("no summary.json ({e}); exit {:?}", output.status));
    serde_json::from_str(&text).unwrap()
}

/// `run --protocol jmap` of `mmb-medium` against `--target explicit`, the
/// lab's IMAP (for the reconciliation), SMTP and JMAP endpoints given by
/// URL and the password in the environment; its summary.
fn run_explicit(status: &peakhour_lab::LabStatus, out: &Path) -> serde_json::Value {
    let imap = format!("imap://{}", status.endpoints.imap);
    let smtp = format!(
        "smtp://{}",
        status.endpoints.smtp_noauth.as_deref().unwrap()
    );
    let jmap = status.endpoints.jmap.clone().unwrap();
    let output = std::process::Command::new(common::PEAKHOUR)
        .args([
            "run",
            "--target",
            "explicit",
            "--imap",
            &imap,
            "--smtp",
            &smtp,
            "--smtp-auth",
            "none",
            "--jmap",
            &jmap,
            "--protocol",
            "jmap",
            "--users",
            "8",
            "--profile",
            "mmb-medium",
            "--speed",
            "400",
            "--duration",
            "20s",
            "--ramp-up",
            "3s",
            "--drain",
            "15s",
            "--interval",
            "5s",
            "--seed",
            "9",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("PEAKHOUR_PASSWORD", &status.password)
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(out.join("summary.json"))
        .unwrap_or_else(|e| panic!("no summary.json ({e}); exit {:?}", output.status));
    serde_json::from_str(&text).unwrap()
}

/// Every action ran, was timed and never failed; every recipient was found.
fn assert_complete(summary: &serde_json::Value, protocol: &str) {
    for action in ACTIONS {
        let measured = &summary["actions"][action];
        assert!(
            measured["count"].as_u64().unwrap_or(0) > 0,
            "{protocol}: {action} never ran: {measured}"
        );
        assert!(
            measured["p95_ms"].as_f64().is_some(),
            "{protocol}: {action} has no p95: {measured}"
        );
    }
    assert_eq!(
        summary["errors_by_kind"],
        serde_json::json!({}),
        "{protocol}"
    );
    let delivery = &summary["delivery"];
    assert!(delivery["submitted_recipients"].as_u64().unwrap() > 0);
    assert_eq!(delivery["lost"], 0, "{protocol}: {delivery}");
    assert_eq!(
        delivery["submitted_recipients"], delivery["delivered_recipients"],
        "{protocol}: {delivery}"
    );
}

/// The run's monitor watched Cyrus, not Dovecot: `monitor.csv` has a
/// `cyrus` group with Cyrus's processes in it and no `dovecot` group, its
/// `dovecot_*` probe columns are empty, and the summary and the report
/// name the `cyrus` group.
fn assert_monitored_as_cyrus(run_dir: &Path, summary: &serde_json::Value) {
    let text = std::fs::read_to_string(run_dir.join("monitor.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(
        !header.iter().any(|h| h.starts_with("group_dovecot")),
        "a Cyrus lab has no dovecot group: {header:?}"
    );
    let column = |name: &str| {
        let at = header.iter().position(|h| *h == name);
        let at = at.unwrap_or_else(|| panic!("no {name} in {header:?}"));
        text.lines()
            .skip(1)
            .map(|l| l.split(',').nth(at).unwrap_or_default().to_owned())
            .collect::<Vec<String>>()
    };
    let processes: Vec<f64> = column("group_cyrus_processes")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    // The master, its preforked imapd and httpd, and lmtpd at least.
    assert!(
        processes.iter().any(|&n| n >= 4.0),
        "Cyrus's processes: {processes:?}"
    );
    let cpu: f64 = column("group_cyrus_cpu_pct")
        .iter()
        .filter_map(|v| v.parse::<f64>().ok())
        .sum();
    assert!(cpu > 0.0, "Cyrus used no CPU over the run");
    for probe in ["dovecot_processes", "dovecot_connections"] {
        assert!(
            column(probe).iter().all(String::is_empty),
            "{probe} counted something on a Cyrus lab"
        );
    }
    let resources = summary["resources"].as_array().unwrap();
    let metrics: Vec<&str> = resources
        .iter()
        .filter_map(|r| r["metric"].as_str())
        .collect();
    assert!(metrics.contains(&"group_cyrus_cpu_pct"), "{metrics:?}");
    assert!(
        !metrics.iter().any(|m| m.contains("dovecot")),
        "{metrics:?}"
    );
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        report.contains("Cyrus CPU % of a core"),
        "the report names no cyrus group"
    );
    assert!(
        !report.contains("Dovecot CPU") && !report.contains("- dovecot"),
        "the report shows a dovecot group for a Cyrus lab"
    );
}

#[test]
fn issue_14_cyrus_lab_runs_mmb_medium_over_jmap_and_imap_and_compares_them() {
    let (_dir, lab) = start_cyrus_lab(8);
    let lab_dir = lab.status.dir.clone();
    assert!(lab.status.endpoints.jmap.is_some(), "{:?}", lab.status);
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success());

    let out = tempfile::tempdir().unwrap();
    let jmap_dir = out.path().join("jmap");
    let jmap = run(&lab_dir, "jmap", &jmap_dir);
    assert_complete(&jmap, "jmap");
    assert_monitored_as_cyrus(&jmap_dir, &jmap);
    // The steady phase's commands (logging on, with Mailbox/get, is before it).
    let commands = jmap["commands"].as_object().unwrap();
    for method in [
        "jmap.Email/query",
        "jmap.Email/get",
        "jmap.Email/set",
        "jmap.EmailSubmission/set",
        "jmap.upload",
    ] {
        assert!(commands.contains_key(method), "no {method}: {commands:?}");
    }
    assert!(
        !commands
            .keys()
            .any(|c| c.starts_with("imap.") || c.starts_with("smtp.")),
        "a JMAP run spoke IMAP or SMTP: {commands:?}"
    );

    assert_eq!(jmap["meta"]["protocols"]["read"], "jmap");
    // What the JMAP server offers: its session's capabilities, beside IMAP's.
    let offered = jmap["server_capabilities"]["jmap"].as_array().unwrap();
    for capability in ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"] {
        assert!(offered.iter().any(|c| c == capability), "{offered:?}");
    }
    assert_eq!(jmap["meta"]["protocols"]["send"], "jmap");

    // The same over JMAP against an explicit target: the lab's endpoints
    // given by hand (--jmap URL), as for a server peakhour did not start.
    let explicit_dir = out.path().join("explicit");
    let explicit = run_explicit(&lab.status, &explicit_dir);
    assert_complete(&explicit, "explicit jmap");
    let commands = explicit["commands"].as_object().unwrap();
    assert!(commands.contains_key("jmap.Email/get"), "{commands:?}");
    assert!(
        !commands
            .keys()
            .any(|c| c.starts_with("imap.") || c.starts_with("smtp.")),
        "{commands:?}"
    );
    assert_eq!(explicit["meta"]["protocols"]["read"], "jmap");

    let imap_dir = out.path().join("imap");
    let imap = run(&lab_dir, "imap", &imap_dir);
    assert_complete(&imap, "imap");
    // Check Inbox on the open Inbox sends UID FETCH, not SELECT (issue 16).
    assert!(
        imap["commands"]
            .as_object()
            .unwrap()
            .contains_key("imap.UID FETCH")
    );

    let compare = peakhour(&[
        "compare",
        imap_dir.to_str().unwrap(),
        jmap_dir.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&compare.stdout);
    assert!(compare.status.success(), "{said}");
    for action in ACTIONS {
        assert!(said.contains(&format!("{action} p95")), "{said}");
    }
}
