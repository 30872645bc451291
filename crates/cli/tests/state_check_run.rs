//! Issue 27 item 2: `run --check-state` on the lab's Dovecot, two sessions
//! per account, and through a proxy that corrupts one UID in the server's
//! answers (a fault a real server will not produce on demand).
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::proxy::{Hook, Proxy};
use common::{PEAKHOUR, peakhour, run_bounded, start_lab};
use peakhour_lab::LabStatus;

/// Far above what a short run takes: a hang, not a slow machine.
const HANG: Duration = Duration::from_secs(240);
const USERS: &str = "4";

/// mmb-medium with two sessions on each account, written into `dir`;
/// `filing` false leaves out moves and deletes: two sessions of one account
/// then never race for one message (one moving what the other is about to
/// read, which the engine counts as an error, `imap:message-gone`).
fn shared_profile(dir: &Path, filing: bool) -> String {
    let shown = peakhour(&["profiles", "show", "mmb-medium"]);
    let mut text = String::from_utf8(shown.stdout).unwrap();
    text = text.replacen("[users]\n", "[users]\nsessions_per_account = 2\n", 1);
    assert!(text.contains("sessions_per_account = 2"), "{text}");
    if !filing {
        for rate in ["per_day = 16.3\n", "per_day = 32.5\n"] {
            assert!(text.contains(rate), "{text}");
            text = text.replacen(rate, "per_day = 0\n", 1);
        }
    }
    let path = dir.join("shared.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Fills the lab's mailboxes, so that every session's first FETCH lists
/// messages.
fn init(lab_dir: &Path, profile: &str) {
    let lab_dir = lab_dir.to_str().unwrap();
    let init = peakhour(&[
        "init",
        "--profile",
        profile,
        "--users",
        USERS,
        "--lab-dir",
        lab_dir,
    ]);
    assert!(init.status.success());
}

/// `peakhour run` with state checks every 3 s, against `imap` (the lab's, or
/// a proxy's) and the lab's SMTP.
fn run(status: &LabStatus, profile: &str, imap: &str, run_dir: &Path) -> common::Bounded {
    run_bounded(
        Command::new(PEAKHOUR)
            .args(["run", "--profile", profile, "--target", "explicit"])
            .args(["--imap", imap, "--smtp"])
            .arg(format!("smtp://{}", status.endpoints.smtp))
            .args(["--users", USERS, "--speed", "400", "--duration", "12s"])
            .args(["--ramp-up", "1s", "--interval", "2s", "--drain", "3s"])
            .arg("--check-state=3s")
            .arg("--out")
            .arg(run_dir)
            .env("PEAKHOUR_PASSWORD", &status.password),
        HANG,
    )
}

/// The run's summary.json, checked against the committed schema (its
/// `state_checks` with and without violations).
fn summary(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/summary.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "summary.json against its schema: {errors:#?}"
    );
    summary
}

#[test]
fn issue_27_item_2_check_state_with_two_sessions_per_account_on_dovecot_checks_and_passes() {
    let (dir, lab) = start_lab(4);
    let profile = shared_profile(dir.path(), false);
    init(dir.path(), &profile);
    let run_dir = dir.path().join("run");
    let imap = format!("imap://{}", lab.status.endpoints.imap);
    let done = run(&lab.status, &profile, &imap, &run_dir);
    let summary = summary(&run_dir);
    let checks = &summary["state_checks"];
    assert_eq!(checks["enabled"], true, "{checks}");
    assert_eq!(checks["violations"], 0, "{checks}");
    assert!(checks["checks"].as_u64().unwrap() > 0, "{checks}");
    // Two sessions per account: the checkpoints compared something.
    assert!(checks["checkpoints"].as_u64().unwrap() > 0, "{checks}");
    assert!(
        checks["by_kind"]["checkpoint_uid"]["checks"]
            .as_u64()
            .unwrap()
            > 0,
        "{checks}"
    );
    assert!(checks["checkpoint_pause_s"].as_f64().is_some(), "{checks}");
    assert_eq!(summary["verdict"], "pass", "{}", summary["qos"]);
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    assert!(
        done.stdout.contains("state checks: ") && done.stdout.contains("no violation"),
        "{}",
        done.stdout
    );
    // Recorded: the interval in config.toml, an empty violations file.
    let config = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(config.contains("check_state = \"3s\""), "{config}");
    let csv = std::fs::read_to_string(run_dir.join("state-violations.csv")).unwrap();
    assert_eq!(csv, "check,client,mailbox,seq,uid,expected,seen\n");
    // The report, from the files alone, says it too.
    let report = peakhour(&["report", run_dir.to_str().unwrap(), "--format", "text"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("no violation;"), "{text}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        html.contains("<b>State checks:</b>"),
        "the HTML report's note"
    );
}

#[test]
fn issue_27_item_2_a_uid_rewritten_by_a_proxy_is_a_named_violation_and_fails_the_run() {
    let (dir, lab) = start_lab(4);
    let profile = shared_profile(dir.path(), true);
    init(dir.path(), &profile);
    // Once in the whole run: the second message of a FETCH is said to have
    // UID 1, the first one's (a reused UID).
    let corrupted = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(move |_: usize, line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        if text.starts_with("* 2 FETCH (")
            && text.contains("UID 2 ")
            && !corrupted.swap(true, Ordering::SeqCst)
        {
            return text.replacen("UID 2 ", "UID 1 ", 1).into_bytes();
        }
        line.to_vec()
    });
    let proxy = Proxy::start_rewriting(
        lab.status.endpoints.imap.clone(),
        Arc::new(|_: &str| Hook::Forward),
        Some(answers),
    );
    let run_dir = dir.path().join("run");
    let imap = format!("imap://127.0.0.1:{}", proxy.port);
    let done = run(&lab.status, &profile, &imap, &run_dir);
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    let summary = summary(&run_dir);
    assert_eq!(summary["verdict"], "fail");
    let checks = &summary["state_checks"];
    assert!(checks["violations"].as_u64().unwrap() >= 1, "{checks}");
    assert!(
        checks["by_kind"]["uid_order"]["violations"]
            .as_u64()
            .unwrap()
            >= 1,
        "{checks}"
    );
    let first = &checks["examples"][0];
    assert_eq!(first["check"], "uid_order", "{first}");
    assert_eq!(
        (&first["seq"], &first["uid"]),
        (&2.into(), &1.into()),
        "{first}"
    );
    let failures = summary["qos"]["failures"].to_string();
    assert!(
        failures.contains("state-check violation") && failures.contains("uid_order"),
        "{failures}"
    );
    assert!(done.stdout.contains("VIOLATION"), "{}", done.stdout);
    let csv = std::fs::read_to_string(run_dir.join("state-violations.csv")).unwrap();
    let row = csv.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("uid_order,user"), "{csv}");
    assert!(row.contains(",INBOX,2,1,"), "{csv}");
}

/// `\Flagged` added to every FLAGS of a FETCH answer (`* 3 FETCH (... FLAGS (...) ...)`).
fn flagged(line: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(line);
    let is_fetch = text.starts_with("* ") && text.contains(" FETCH (");
    if !is_fetch || text.contains("\\Flagged") {
        return line.to_vec();
    }
    text.replacen("FLAGS ()", "FLAGS (\\Flagged)", 1)
        .replacen("FLAGS (\\", "FLAGS (\\Flagged \\", 1)
        .into_bytes()
}

#[test]
fn issue_27_item_2_one_session_told_other_flags_than_its_accounts_other_session_fails_the_checkpoint()
 {
    let (dir, lab) = start_lab(4);
    let profile = shared_profile(dir.path(), false);
    init(dir.path(), &profile);
    // Users log on in order, 0.25 s apart, and users 0 and 1 (2 and 3)
    // share an account: every other connection is told of a \Flagged the
    // server never set, so exactly one session of each account is.
    let answers = Arc::new(|connection: usize, line: &[u8]| {
        if connection % 2 == 1 {
            flagged(line)
        } else {
            line.to_vec()
        }
    });
    let proxy = Proxy::start_rewriting(
        lab.status.endpoints.imap.clone(),
        Arc::new(|_: &str| Hook::Forward),
        Some(answers),
    );
    let run_dir = dir.path().join("run");
    let imap = format!("imap://127.0.0.1:{}", proxy.port);
    let done = run(&lab.status, &profile, &imap, &run_dir);
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    let summary = summary(&run_dir);
    let checks = &summary["state_checks"];
    assert!(
        checks["by_kind"]["checkpoint_flags"]["violations"]
            .as_u64()
            .unwrap()
            >= 1,
        "{checks}"
    );
    let csv = std::fs::read_to_string(run_dir.join("state-violations.csv")).unwrap();
    assert!(csv.contains("checkpoint_flags,user"), "{csv}");
    assert!(csv.contains("\\flagged"), "{csv}");
}
