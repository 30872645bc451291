//! Issue 27, item 2 of the follow-up: two sessions of one account pick from
//! the same Inbox, so one reads or moves a message the other has just
//! moved away. On the lab's Dovecot, with moves and deletes at a high rate,
//! those races must happen and be counted as `skipped_raced`, never as the
//! errors they were (`imap:message-gone`, `imap:no`), so that a run with
//! shared accounts passes its verdict.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{PEAKHOUR, peakhour, run_bounded, start_lab};

/// Far above what a short run takes: a hang, not a slow machine.
const HANG: Duration = Duration::from_secs(240);
const USERS: &str = "8";

/// mmb-medium with two sessions on each account and 30 messages in each
/// Inbox (the sessions then rarely find it empty), written into `dir`.
fn racing_profile(dir: &Path) -> String {
    let shown = peakhour(&["profiles", "show", "mmb-medium"]);
    let mut text = String::from_utf8(shown.stdout).unwrap();
    text = text.replacen("[users]\n", "[users]\nsessions_per_account = 2\n", 1);
    let inbox =
        "name = \"INBOX\"\n# S62C2: \"Number of messages in Inbox: 4\" (Medium).\nmessages = 4\n";
    assert!(text.contains(inbox), "{text}");
    text = text.replacen(inbox, "name = \"INBOX\"\nmessages = 30\n", 1);
    let path = dir.join("racing.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn issue_27_item_2_a_shared_accounts_own_races_are_skipped_raced_and_the_run_passes() {
    let (dir, lab) = start_lab(8);
    let profile = racing_profile(dir.path());
    let lab_dir = dir.path().to_str().unwrap();
    let init = peakhour(&[
        "init",
        "--profile",
        &profile,
        "--users",
        USERS,
        "--lab-dir",
        lab_dir,
    ]);
    assert!(init.status.success());
    let run_dir = dir.path().join("run");
    let done = run_bounded(
        Command::new(PEAKHOUR)
            .args(["run", "--profile", &profile, "--target", "explicit"])
            .arg(format!("--imap=imap://{}", lab.status.endpoints.imap))
            .arg(format!("--smtp=smtp://{}", lab.status.endpoints.smtp))
            .args(["--users", USERS, "--speed", "800", "--duration", "20s"])
            .args(["--ramp-up", "1s", "--interval", "2s", "--drain", "3s"])
            .arg("--check-state=5s")
            .arg("--out")
            .arg(&run_dir)
            .env("PEAKHOUR_PASSWORD", &lab.status.password),
        HANG,
    );
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The races happened, and each was explained by the other session's
    // move of that very message (the engine's `raced`).
    let raced = summary["counters"]["skipped_raced"].as_u64().unwrap_or(0);
    assert!(raced > 0, "no race in this run: {}", summary["counters"]);
    // None of them is an error any more, and nothing else failed.
    let errors = &summary["errors_by_kind"];
    for kind in ["imap:message-gone", "imap:no"] {
        assert!(errors.get(kind).is_none(), "{kind}: {errors}");
    }
    assert_eq!(
        summary["state_checks"]["violations"], 0,
        "{}",
        summary["state_checks"]
    );
    assert_eq!(summary["verdict"], "pass", "{} {errors}", summary["qos"]);
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
}
