//! Issue 12 point 9: the lab can play a server with other conventions, checked
//! with Python's own clients (`tests/lab_smoke.py`), not with peakhour's.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use common::{assert_matches_schema, config, python_smoke, scratch_dir};
use peakhour_lab::{LabConfig, LabGuard, Namespace};

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
