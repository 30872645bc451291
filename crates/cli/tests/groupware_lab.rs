//! Issue 14's groupware profiles end to end on one lab started with Radicale
//! (`lab up --with caldav`): `pop3-user` over Dovecot's POP3, `mmb-medium`
//! with `update_calendar` over CalDAV, and `caldav-office`. Every action is
//! measured, nothing is lost, and an independent CalDAV client (Python's
//! `http.client`, plain HTTP requests) finds in the users' calendars exactly
//! the events peakhour says it created. Radicale does not schedule:
//! `caldav-office`'s invitations are skipped, not failed
//! (`caldav_invitations.rs` runs them on Cyrus, which schedules).
//!
//! One lab serves the three runs, in this order: the POP3 users delete the
//! Inbox they download, so they run before `mmb-medium` fills the
//! mailboxes again (its init adds back what they took).
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;
use std::process::Command;

use common::{peakhour, start_lab_with};
use peakhour_lab::{LabStatus, OptionalServer};

const USERS: u32 = 4;

fn summary(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(
        problems.is_empty(),
        "summary.json off its schema: {problems:#?}"
    );
    summary
}

/// `peakhour init` then `peakhour run` of `profile` on the lab; the summary.
fn init_and_run(lab: &LabStatus, out: &Path, profile: &str, speed: &str) -> serde_json::Value {
    init_and_run_said(lab, out, profile, speed).0
}

/// [`init_and_run`], with what the run printed.
fn init_and_run_said(
    lab: &LabStatus,
    out: &Path,
    profile: &str,
    speed: &str,
) -> (serde_json::Value, String) {
    let init = peakhour(&["init", "--profile", profile, "--lab-dir", &lab.dir]);
    assert!(init.status.success(), "init of {profile} failed");
    let run_dir = out.join(profile);
    let run = peakhour(&[
        "run",
        "--profile",
        profile,
        "--lab-dir",
        &lab.dir,
        "--speed",
        speed,
        "--duration",
        "20s",
        "--ramp-up",
        "2s",
        "--drain",
        "8s",
        "--interval",
        "5s",
        "--seed",
        "14",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let summary = summary(&run_dir);
    assert_eq!(summary["interrupted"], false, "{profile}");
    assert_eq!(summary["users"], USERS, "{profile}");
    // The exit code follows the verdict, which is not what is tested here.
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{profile}: {run:?}"
    );
    (summary, String::from_utf8_lossy(&run.stdout).into_owned())
}

/// Every action in `actions` ran, has a p95, and failed never; nothing
/// was left unattempted, and every copy of every message arrived.
fn every_action_measured_nothing_lost(summary: &serde_json::Value, actions: &[&str]) {
    let profile = &summary["profile"];
    let measured: Vec<&String> = summary["actions"].as_object().unwrap().keys().collect();
    assert_eq!(measured.len(), actions.len(), "{profile}: {measured:?}");
    for action in actions {
        let measured = &summary["actions"][action];
        assert!(
            measured["count"].as_u64().unwrap() > 0,
            "{profile}: {action} never ran: {measured}"
        );
        assert!(
            measured["p95_ms"].as_f64().is_some(),
            "{profile}: {action} has no p95: {measured}"
        );
        assert_eq!(measured["errors"], 0, "{profile}: {action}: {measured}");
    }
    let errors = &summary["errors_by_kind"];
    assert!(
        errors.is_null() || errors.as_object().is_some_and(|e| e.is_empty()),
        "{profile}: {errors}"
    );
    assert_eq!(summary["panics"], 0, "{profile}");
    let delivery = &summary["delivery"];
    assert_eq!(delivery["lost"], 0, "{profile}: {delivery}");
    assert_eq!(
        delivery["submitted_recipients"], delivery["delivered_recipients"],
        "{profile}: {delivery}"
    );
}

/// A request kind (`caldav.PUT`) was timed, with a p95.
fn command_has_p95(summary: &serde_json::Value, name: &str) {
    let command = &summary["commands"][name];
    assert!(
        command["count"].as_u64().is_some_and(|n| n > 0) && command["p95_ms"].as_f64().is_some(),
        "{} recorded no {name} with a p95: {command}",
        summary["profile"]
    );
}

/// The independent client: PROPFIND Depth 1 on each user's calendar with
/// Python's `http.client` and Basic auth, counting the events whose name
/// starts with `prefix` (peakhour names an event after its UID, and the
/// UIDs a run creates start with its run id).
fn events_in_calendars(lab: &LabStatus, prefix: &str) -> u64 {
    const SCRIPT: &str = r#"
import base64, http.client, re, sys, urllib.parse
url, password, users, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
where = urllib.parse.urlsplit(url)
body = '<?xml version="1.0"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>'
found = 0
for n in range(1, users + 1):
    auth = base64.b64encode(f"user{n}:{password}".encode()).decode()
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    conn.request("PROPFIND", f"/user{n}/calendar/", body, {
        "Authorization": "Basic " + auth, "Depth": "1",
        "Content-Type": "application/xml; charset=utf-8"})
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 207, (response.status, text[:300])
    hrefs = re.findall(r"<(?:\w+:)?href>([^<]*)</(?:\w+:)?href>", text)
    names = [urllib.parse.unquote(h.rstrip("/").rsplit("/", 1)[-1]) for h in hrefs]
    found += sum(1 for name in names if name.startswith(prefix) and name.endswith(".ics"))
    conn.close()
print(found)
"#;
    let caldav = lab.endpoints.caldav.as_deref().unwrap();
    let output = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            caldav,
            &lab.password,
            &USERS.to_string(),
            prefix,
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the Python CalDAV client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

/// A run id as peakhour puts it in UIDs and hrefs (engine's `href_safe`).
fn href_safe(run_id: &str) -> String {
    run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[test]
fn issue_14_pop3_user_mmb_medium_over_caldav_and_caldav_office_on_one_lab() {
    let (_dir, lab) = start_lab_with(USERS, &[OptionalServer::Caldav]);
    let lab = &lab.status;
    let out = tempfile::tempdir().unwrap();

    // pop3-user: downloads over POP3, sends over SMTP, reconciled.
    let (pop3, pop3_said) = init_and_run_said(lab, out.path(), "pop3-user", "400");
    every_action_measured_nothing_lost(&pop3, &["download_mail", "send"]);
    for command in ["pop3.CONNECT", "pop3.PASS", "pop3.STAT", "pop3.RETR"] {
        command_has_p95(&pop3, command);
    }
    assert!(pop3["counters"]["messages_downloaded"].as_u64().unwrap() > 0);
    assert!(pop3["delivery"]["submitted_recipients"].as_u64().unwrap() > 0);
    assert_eq!(pop3["meta"]["protocols"]["download_mail"], "pop3");
    // What the POP3 server offers, asked after login, beside IMAP's and SMTP's.
    let capa = pop3["server_capabilities"]["pop3"].as_array().unwrap();
    assert!(capa.iter().any(|c| c == "UIDL"), "{capa:?}");
    assert!(capa.iter().any(|c| c == "TOP"), "{capa:?}");
    // Issue 26 item 15: the delivery caption names POP3 polling, not IMAP IDLE.
    let caption = pop3["delivery"]["latency_includes"].as_str().unwrap();
    assert!(
        caption.contains("POP3") && !caption.contains("IDLE"),
        "{caption}"
    );
    assert!(!pop3_said.contains("IMAP session"), "{pop3_said}");

    // mmb-medium: update_calendar is CalDAV on a lab that has it.
    let mmb = init_and_run(lab, out.path(), "mmb-medium", "400");
    every_action_measured_nothing_lost(
        &mmb,
        &[
            "check_inbox",
            "send",
            "read",
            "move",
            "delete",
            "update_calendar",
        ],
    );
    assert_eq!(mmb["meta"]["protocols"]["update_calendar"], "caldav");
    for command in ["caldav.PROPFIND", "caldav.REPORT", "caldav.PUT"] {
        command_has_p95(&mmb, command);
    }
    let created = mmb["counters"]["events_created"].as_u64().unwrap_or(0);
    assert!(
        created > 0,
        "mmb-medium created no event: {}",
        mmb["counters"]
    );
    let run_tag = href_safe(mmb["run_id"].as_str().unwrap());
    assert_eq!(
        events_in_calendars(lab, &format!("{run_tag}-")),
        created,
        "the calendars hold other than the {created} events the run created"
    );

    // caldav-office: polls, creates and changes, all over CalDAV.
    let (office, office_said) = init_and_run_said(lab, out.path(), "caldav-office", "100");
    // Issue 31 item 6: the run's last lines speak of calendars, not mail.
    assert!(office_said.contains("calendar: "), "{office_said}");
    assert!(
        office_said.contains("invitations skipped: the server does not schedule"),
        "{office_said}"
    );
    for mail in [
        "messages submitted",
        "of 0 recipients",
        "IMAP (after login)",
        "SMTP (EHLO)",
    ] {
        assert!(!office_said.contains(mail), "{mail:?}: {office_said}");
    }
    assert!(office_said.contains("CalDAV (DAV)"), "{office_said}");
    every_action_measured_nothing_lost(&office, &["poll_calendar", "create_event", "change_event"]);
    for command in ["caldav.PROPFIND", "caldav.REPORT", "caldav.PUT"] {
        command_has_p95(&office, command);
    }
    assert!(office["counters"]["events_changed"].as_u64().unwrap() > 0);
    // Radicale does not schedule (RFC 6638): the invitations are skipped,
    // counted apart from errors, and the server's DAV classes say why.
    assert!(
        office["counters"]["skipped_no_scheduling"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{}",
        office["counters"]
    );
    assert!(office["counters"]["invitations_sent"].is_null());
    assert!(office["commands"]["caldav.PUT invite"].is_null());
    let classes = office["server_capabilities"]["caldav"].as_array().unwrap();
    assert!(
        !classes.iter().any(|c| c == "calendar-auto-schedule"),
        "{classes:?}"
    );
    let created = office["counters"]["events_created"].as_u64().unwrap();
    let run_tag = href_safe(office["run_id"].as_str().unwrap());
    assert_eq!(events_in_calendars(lab, &format!("{run_tag}-")), created);
}
