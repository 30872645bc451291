//! Issue 12 point 9: the lab can play a server with other conventions, checked
//! with Python's own clients (`tests/lab_smoke.py`), not with peakhour's.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_matches_schema, config, scratch_dir};
use peakhour_lab::{LabConfig, LabGuard, Namespace};

/// Runs tests/lab_smoke.py against `lab` with `extra` arguments.
fn python_smoke(lab: &LabGuard, extra: &[&str]) -> String {
    let status_file = scratch_dir();
    let status_path = status_file.path().join("status.json");
    let status = lab.lab().status().unwrap();
    std::fs::write(&status_path, serde_json::to_vec(&status).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lab_smoke.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg("--status-file")
        .arg(&status_path)
        .args(extra)
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        // The servers' own account of what happened, to tell a server's fault from ours.
        let log_tail = |path: std::path::PathBuf| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            format!(
                "--- {}\n{}",
                path.display(),
                lines[lines.len().saturating_sub(30)..].join("\n")
            )
        };
        let layout = lab.lab().layout();
        panic!(
            "lab_smoke.py {extra:?} failed:\n{stdout}{}\n{}\n{}",
            String::from_utf8_lossy(&output.stderr),
            log_tail(layout.dovecot_log()),
            log_tail(layout.postfix_log())
        );
    }
    stdout
}

#[test]
fn issue_12_a_courier_style_namespace_puts_every_folder_under_inbox() {
    let dir = scratch_dir();
    let courier = LabConfig {
        namespace: Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        },
        ..config(dir.path(), 42)
    };
    let lab = LabGuard::start(&courier).unwrap();
    assert_eq!(lab.status.namespace.prefix, "INBOX.");
    assert_matches_schema(&lab.status);
    let said = python_smoke(&lab, &["--expect-namespace", "INBOX."]);
    assert!(
        said.contains("folders under 'INBOX.' (separator '.')"),
        "{said}"
    );
}

#[test]
fn issue_12_the_smtp_noauth_port_takes_mail_from_loopback_without_auth() {
    let dir = scratch_dir();
    let lab = LabGuard::start(&config(dir.path(), 42)).unwrap();
    let noauth = lab
        .status
        .endpoints
        .smtp_noauth
        .clone()
        .expect("smtp_noauth endpoint");
    let probe = lab
        .status
        .ports
        .iter()
        .find(|p| p.service == "smtp_noauth")
        .expect("smtp_noauth is probed");
    assert!(probe.answers && probe.address == noauth, "{probe:?}");
    let said = python_smoke(&lab, &[]);
    assert!(said.contains("SMTP without AUTH delivered"), "{said}");
    // The default namespace keeps folders at the top level.
    let status = lab.lab().status().unwrap();
    assert_eq!(status.namespace, Namespace::default());
}
