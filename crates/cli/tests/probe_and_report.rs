//! Issue 26, items 1 and 2: the probe of the server software that `run`
//! makes once its results are written is bounded, and `report` asks no
//! server. A run against the lab, through line proxies recorded as the
//! run's IMAP and SMTP endpoints: the IMAP proxy answers the probe's `ID`
//! with an endless literal. Then the proxies are tripped (they count any
//! connection) and `report` rebuilds the report of the run directory
//! without its host.json.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::proxy::{Hook, Proxy};
use common::{PEAKHOUR, peakhour, run_bounded, start_lab};

/// Far above what a short run takes: a hang, not a slow machine.
const HANG: Duration = Duration::from_secs(120);

#[test]
fn issue_26_item_1_an_endless_literal_to_the_probe_ends_within_its_deadline_and_item_2_report_opens_no_socket()
 {
    let (_dir, lab) = start_lab(2);
    let status = &lab.status;
    let imap = Proxy::start(
        status.endpoints.imap.clone(),
        Arc::new(|line: &str| {
            let command = line.split(' ').nth(1).unwrap_or("");
            if command.eq_ignore_ascii_case("ID") {
                Hook::Endless("* ID (\"name\" {99999999999}\r\n".into())
            } else {
                Hook::Forward
            }
        }),
    );
    let smtp = Proxy::start(
        status.endpoints.smtp.clone(),
        Arc::new(|_: &str| Hook::Forward),
    );
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let run = run_bounded(
        Command::new(PEAKHOUR)
            .args(["run", "--profile", "mmb-medium", "--target", "explicit"])
            .arg("--imap")
            .arg(format!("imap://127.0.0.1:{}", imap.port))
            .arg("--smtp")
            .arg(format!("smtp://127.0.0.1:{}", smtp.port))
            .args(["--users", "2", "--speed", "400", "--duration", "4s"])
            .args(["--ramp-up", "1s", "--interval", "2s", "--drain", "2s"])
            .arg("--out")
            .arg(&run_dir)
            .env("PEAKHOUR_PASSWORD", &status.password),
        HANG,
    );
    assert!(run.status.code().is_some_and(|c| c <= 1), "{}", run.stderr);
    assert!(
        run.peak_kb > 0 && run.peak_kb < 200 * 1024,
        "VmHWM {} kB",
        run.peak_kb
    );
    // What the probe read before the literal is kept; the literal is not.
    let host = std::fs::read_to_string(run_dir.join("host.json")).unwrap();
    assert!(host.contains("greeting"), "{host}");
    assert!(!host.contains("IMAP ID"), "{host}");
    assert!(!host.contains("xxxx"), "{host}");

    // Item 2: a report from a directory without host.json asks no server.
    std::fs::remove_file(run_dir.join("host.json")).unwrap();
    std::fs::remove_file(run_dir.join("report.html")).unwrap();
    imap.trip();
    smtp.trip();
    let report = peakhour(&["report", run_dir.to_str().unwrap(), "--format", "text"]);
    assert!(report.status.success());
    // A connection would have been accepted at once; give a slow thread a moment.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        imap.connections_since_tripped(),
        0,
        "report connected to IMAP"
    );
    assert_eq!(
        smtp.connections_since_tripped(),
        0,
        "report connected to SMTP"
    );
    assert!(!run_dir.join("host.json").exists());
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        html.contains("not recorded (no host.json)"),
        "the report says the software is unknown"
    );
}
