//! Issue 27 items 2, 4, 5 and 6: `run --check-state` on the lab's Dovecot,
//! two sessions per account, and through a proxy that corrupts the server's
//! answers the ways real bugs do (faults a real server will not produce on
//! demand): a UID rewritten, flags added or dropped, an EXPUNGE withheld, a
//! SEARCH answer missing a message, a delivered copy's size changed. Each
//! must be caught and named, with its evidence in `state-violations.csv`,
//! `errors.csv` (outcome class `inconsistent`), the report and the raw log
//! of the session.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    // Every delivered copy checked against its submission, and every
    // checkpoint's SEARCH against what the session knows (items 4 and 6).
    for kind in [
        "search_missing",
        "delivery_duplicated",
        "delivery_size_mismatch",
    ] {
        let made = checks["by_kind"][kind]["checks"].as_u64().unwrap();
        assert!(made > 0, "{kind}: {checks}");
    }
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

/// One connection's stream from the server, line by line: which lines are
/// inside a literal (a message body: never touched), and whether the
/// session is in IDLE (after `+ `, until a tagged line).
#[derive(Default)]
struct ServerLines {
    literal: usize,
    idling: bool,
}

impl ServerLines {
    /// Whether `line` is protocol (not literal data); updates the state.
    fn protocol(&mut self, line: &[u8]) -> bool {
        if self.literal > 0 {
            self.literal = self.literal.saturating_sub(line.len());
            return false;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if text.starts_with("+ ") || text == "+" {
            self.idling = true;
        } else if !text.starts_with('*') {
            self.idling = false;
        }
        if let Some(open) = text
            .strip_suffix('}')
            .and_then(|t| t.rfind('{').map(|at| &t[at + 1..]))
        {
            self.literal = open.trim_end_matches('+').parse().unwrap_or(0);
        }
        true
    }
}

/// Answers rewritten by `fault` on the first sessions of the odd users
/// (connections 1 and 3: users log on in order, 0.25 s apart, and users 0
/// and 1, 2 and 3 share an account), protocol lines only.
fn on_odd_sessions(
    fault: impl Fn(&str, &ServerLines) -> Option<String> + Send + Sync + 'static,
) -> common::proxy::AnswerFn {
    let streams: Mutex<HashMap<usize, ServerLines>> = Mutex::default();
    Arc::new(move |connection: usize, line: &[u8]| {
        let mut streams = streams.lock().unwrap();
        let stream = streams.entry(connection).or_default();
        let was_idling = stream.idling;
        if !stream.protocol(line) || connection.is_multiple_of(2) || connection >= 4 {
            return line.to_vec();
        }
        let text = String::from_utf8_lossy(line);
        let during = ServerLines {
            literal: 0,
            idling: was_idling,
        };
        match fault(&text, &during) {
            Some(new) => new.into_bytes(),
            None => line.to_vec(),
        }
    })
}

/// A run of the shared profile through a proxy rewriting the answers with
/// `answers`; the run directory.
fn run_through(answers: common::proxy::AnswerFn, filing: bool) -> (tempfile::TempDir, LabStatus) {
    let (dir, lab) = start_lab(4);
    let profile = shared_profile(dir.path(), filing);
    init(dir.path(), &profile);
    let proxy = Proxy::start_rewriting(
        lab.status.endpoints.imap.clone(),
        Arc::new(|_: &str| Hook::Forward),
        Some(answers),
    );
    let run_dir = dir.path().join("run");
    let imap = format!("imap://127.0.0.1:{}", proxy.port);
    let done = run(&lab.status, &profile, &imap, &run_dir);
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(done.stdout.contains("inconsistent:"), "{}", done.stdout);
    let status = lab.status.clone();
    // The lab stops when its guard goes; the run directory stays in `dir`.
    drop(lab);
    (dir, status)
}

/// The evidence of `kind` everywhere it must be: its count in summary.json,
/// its rows in state-violations.csv (returned), its `inconsistent` row in
/// errors.csv quoting the first and naming the session's raw log, which
/// holds the session's lines and no password, and the HTML report.
fn evidence(run_dir: &Path, kind: &str, password: &str) -> Vec<Vec<String>> {
    let summary = summary(run_dir);
    assert_eq!(summary["verdict"], "fail");
    let checks = &summary["state_checks"];
    assert!(
        checks["by_kind"][kind]["violations"].as_u64().unwrap() >= 1,
        "{kind}: {checks}"
    );
    assert!(
        checks["examples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["check"] == kind),
        "the first {kind} among the summary's examples: {checks}"
    );
    let rows: Vec<Vec<String>> = csv::Reader::from_path(run_dir.join("state-violations.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .filter(|r: &Vec<String>| r[0] == kind)
        .collect();
    assert!(!rows.is_empty(), "no {kind} row in state-violations.csv");
    let errors: Vec<Vec<String>> = csv::Reader::from_path(run_dir.join("errors.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .filter(|r: &Vec<String>| r[3] == format!("inconsistent:{kind}"))
        .collect();
    assert!(
        !errors.is_empty(),
        "no inconsistent:{kind} row in errors.csv"
    );
    assert_eq!(errors[0][2], "state_check");
    let example = &errors[0][5];
    assert!(
        example.starts_with(&format!("{kind}: client ")),
        "{example}"
    );
    let log_name = example
        .split("raw log: state-violations/")
        .nth(1)
        .unwrap_or_else(|| panic!("no raw log named: {example}"));
    let log = std::fs::read_to_string(run_dir.join("state-violations").join(log_name)).unwrap();
    assert!(log.contains("C: ") && log.contains("S: "), "{log}");
    assert!(log.contains(&format!("!! {kind}")), "{log}");
    for file in std::fs::read_dir(run_dir.join("state-violations")).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        assert!(!text.contains(password), "the password in a raw log");
    }
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        html.contains(&format!("inconsistent:{kind}</code>")),
        "the HTML report"
    );
    rows
}

#[test]
fn issue_27_item_6_a_flag_dropped_from_one_sessions_fetch_answers_fails_the_checkpoint() {
    // `\Seen` never reaches one session of each account: what it reads,
    // and the messages init left read, look unread to it alone.
    let answers = on_odd_sessions(|text, _| {
        let fetch = text.starts_with("* ") && text.contains(" FETCH (");
        (fetch && text.contains("\\Seen")).then(|| {
            text.replace("FLAGS (\\Seen)", "FLAGS ()")
                .replace("\\Seen ", "")
                .replace(" \\Seen", "")
        })
    });
    let (dir, lab) = run_through(answers, false);
    let rows = evidence(&dir.path().join("run"), "checkpoint_flags", &lab.password);
    // The two values: one session's flags with \Seen, the other's without.
    let (expected, seen) = (&rows[0][5], &rows[0][6]);
    assert!(
        expected.contains("\\seen") != seen.contains("\\seen"),
        "{expected} / {seen}"
    );
    assert!(
        expected.contains("as user") && expected.contains("was told"),
        "{expected}"
    );
}

#[test]
fn issue_27_item_6_an_expunge_withheld_from_one_session_fails_the_checkpoint() {
    // Another session's EXPUNGE, announced during IDLE, never reaches one
    // session of each account: it counts a message the server no longer has.
    let answers = on_odd_sessions(|text, during| {
        let expunge = text.starts_with("* ") && text.trim_end().ends_with(" EXPUNGE");
        (expunge && during.idling).then(String::new)
    });
    let (dir, lab) = run_through(answers, true);
    let rows = evidence(&dir.path().join("run"), "checkpoint_count", &lab.password);
    // `N messages (as ... was told)` against `M messages`, N and M apart.
    let count = |text: &str| -> u64 { text.split(' ').next().unwrap().parse().unwrap() };
    let (expected, seen) = (&rows[0][5], &rows[0][6]);
    assert_ne!(count(expected), count(seen), "{expected} / {seen}");
    assert_eq!(rows[0][2], "INBOX");
}

#[test]
fn issue_27_item_6_a_search_answer_missing_a_message_is_a_named_violation() {
    // The checkpoint's UID SEARCH ALL loses its first UID on one session of
    // each account.
    let answers = on_odd_sessions(|text, _| {
        let numbers = text.strip_prefix("* SEARCH ")?.trim_end();
        let rest = numbers.split_once(' ').map_or("", |(_, rest)| rest);
        Some(format!("* SEARCH {rest}\r\n").replace("SEARCH \r\n", "SEARCH\r\n"))
    });
    let (dir, lab) = run_through(answers, false);
    let rows = evidence(&dir.path().join("run"), "search_missing", &lab.password);
    let row = &rows[0];
    let uid = &row[4];
    assert!(!uid.is_empty(), "{row:?}");
    let expected = format!("UID {uid} in the answer to UID SEARCH ALL (");
    assert!(row[5].starts_with(&expected), "{row:?}");
    assert!(row[6].starts_with("left out, and still at seq "), "{row:?}");
}

#[test]
fn issue_27_item_4_a_delivered_copy_whose_size_changed_is_a_named_violation() {
    let (dir, lab) = start_lab(4);
    let profile = shared_profile(dir.path(), false);
    init(dir.path(), &profile);
    // Only the delivery checks fetch RFC822.SIZE: every size they are told
    // is one byte more than the server's.
    let answers = Arc::new(|_: usize, line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let Some((head, tail)) = text.split_once("RFC822.SIZE ") else {
            return line.to_vec();
        };
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        let size: u64 = digits.parse().unwrap();
        format!("{head}RFC822.SIZE {}{}", size + 1, &tail[digits.len()..]).into_bytes()
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
    let kind = &checks["by_kind"]["delivery_size_mismatch"];
    assert!(kind["violations"].as_u64().unwrap() >= 1, "{checks}");
    assert_eq!(kind["violations"], kind["checks"], "every copy: {checks}");
    let csv = std::fs::read_to_string(run_dir.join("state-violations.csv")).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("delivery_size_mismatch,user"))
        .unwrap_or_else(|| panic!("{csv}"));
    // `expected N bytes (S submitted + A of K added trace fields)`, seen N+1.
    let expected: u64 = row
        .split(",")
        .nth(5)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(row.contains(&format!(",{} bytes", expected + 1)), "{row}");
    assert!(
        row.contains("submitted +") && row.contains("added trace fields"),
        "{row}"
    );
    let errors = std::fs::read_to_string(run_dir.join("errors.csv")).unwrap();
    assert!(
        errors.contains(",state_check,inconsistent:delivery_size_mismatch,"),
        "{errors}"
    );
}
