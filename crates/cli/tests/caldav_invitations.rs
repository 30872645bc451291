//! Issue 14 (`caldav-office`'s invitations): on a Cyrus lab with CalDAV
//! (`lab up --mail-server cyrus --with caldav`: Cyrus's httpd schedules,
//! RFC 6638), `caldav-office` organizes invitations to other users of the
//! run, the server delivers them, and the attendees find them in their
//! schedule inboxes and accept them. Every action and every request kind is
//! measured, and an independent CalDAV client (Python's `http.client`,
//! plain HTTP) finds in the attendees' calendars exactly as many
//! invitations as the organizers' successful invitation PUTs.
//! (`groupware_lab.rs` runs the same profile on Radicale, which does not
//! schedule: its invitations are skipped.)
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::process::Command;

use common::{peakhour, start_lab_configured};
use peakhour_lab::{LabStatus, MailServer, OptionalServer};

const USERS: u32 = 4;

/// A run id as peakhour puts it in UIDs (engine's `href_safe`).
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

/// The independent client: for each user, PROPFIND Depth 1 on its calendar
/// home (`/dav/calendars/user/userN@domain/`), then a `calendar-query`
/// REPORT with the data of every calendar but the profile's own
/// (`calendar/`, where organizers keep their copies): the UIDs there that
/// peakhour's invitations carry (`RUN-uN-iM`), counted once each.
fn invitations_in_attendee_calendars(lab: &LabStatus, prefix: &str) -> u64 {
    const SCRIPT: &str = r#"
import base64, http.client, re, sys, urllib.parse
url, password, users, domain, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
where = urllib.parse.urlsplit(url)
def ask(user, method, path, depth, body):
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    conn.request(method, path, body, {"Authorization": "Basic " + auth, "Depth": depth,
        "Content-Type": "application/xml; charset=utf-8"})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    assert response.status == 207, (method, path, response.status, text[:300])
    return text
listing = '<?xml version="1.0"?><propfind xmlns="DAV:"><prop><resourcetype/></prop></propfind>'
query = ('<?xml version="1.0"?><C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
         '<D:prop><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR">'
         '<C:comp-filter name="VEVENT"/></C:comp-filter></C:filter></C:calendar-query>')
uids = set()
for n in range(1, users + 1):
    user = f"user{n}@{domain}"
    home = f"/dav/calendars/user/{user}/"
    text = ask(user, "PROPFIND", home, "1", listing)
    # Whatever prefix the server gives the DAV: and CalDAV namespaces.
    for response in re.findall(r"<(?:\w+:)?response>(.*?)</(?:\w+:)?response>", text, re.S):
        href = re.search(r"<(?:\w+:)?href>([^<]*)</(?:\w+:)?href>", response).group(1)
        if not re.search(r"<(?:\w+:)?calendar/>", response) or href.endswith("/calendar/"):
            continue
        data = ask(user, "REPORT", href, "1", query)
        data = re.sub(r"\r?\n[ \t]", "", data.replace("&#13;", ""))
        uids.update(u for u in re.findall(r"UID:([^\s<]+)", data) if u.startswith(prefix))
print(len(uids))
"#;
    let caldav = lab.endpoints.caldav.as_deref().unwrap();
    let output = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            caldav,
            &lab.password,
            &USERS.to_string(),
            &lab.domain,
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

#[test]
fn issue_14_caldav_office_invites_on_cyrus_and_the_attendees_accept() {
    let (_dir, lab) = start_lab_configured(USERS, |config| {
        config.mail_server = MailServer::Cyrus;
        config.with = [OptionalServer::Caldav].into_iter().collect();
    });
    let lab = &lab.status;
    let caldav = lab.endpoints.caldav.as_deref().unwrap();
    assert!(caldav.ends_with("/dav/calendars/"), "{caldav}");
    assert_eq!(
        lab.endpoints
            .jmap
            .as_deref()
            .map(|j| j.len() < caldav.len()),
        Some(true)
    );

    let init = peakhour(&["init", "--profile", "caldav-office", "--lab-dir", &lab.dir]);
    assert!(init.status.success(), "init failed");
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("office");
    // Speed 200: the answers' median delay (30 simulated minutes) is 9 s.
    let run = peakhour(&[
        "run",
        "--profile",
        "caldav-office",
        "--lab-dir",
        &lab.dir,
        "--speed",
        "200",
        "--duration",
        "40s",
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
    assert!(run.status.code().is_some_and(|c| c <= 1), "{run:?}");
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["interrupted"], false);

    // Every action measured, none failed.
    for action in ["poll_calendar", "create_event", "change_event"] {
        let measured = &summary["actions"][action];
        assert!(
            measured["count"].as_u64().unwrap() > 0,
            "{action}: {measured}"
        );
        assert!(
            measured["p95_ms"].as_f64().is_some(),
            "{action}: {measured}"
        );
        assert_eq!(measured["errors"], 0, "{action}: {measured}");
    }
    let errors = &summary["errors_by_kind"];
    assert!(
        errors.is_null() || errors.as_object().is_some_and(|e| e.is_empty()),
        "{errors}"
    );
    // Every request kind of the invitations, each under its own name.
    for command in [
        "caldav.OPTIONS",
        "caldav.PROPFIND schedule",
        "caldav.PUT invite",
        "caldav.PROPFIND inbox",
        "caldav.GET inbox",
        "caldav.REPORT invitation",
        "caldav.PUT reply",
        "caldav.DELETE inbox",
    ] {
        let measured = &summary["commands"][command];
        assert!(
            measured["count"].as_u64().is_some_and(|n| n > 0)
                && measured["p95_ms"].as_f64().is_some(),
            "no {command} with a p95: {measured}"
        );
    }
    let classes = &summary["server_capabilities"]["caldav"];
    assert!(
        classes
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "calendar-auto-schedule"),
        "{classes}"
    );
    let counters = &summary["counters"];
    assert!(counters["skipped_no_scheduling"].is_null(), "{counters}");
    let sent = counters["invitations_sent"].as_u64().unwrap();
    assert!(sent > 0, "{counters}");
    assert!(
        counters["invitations_answered"].as_u64().unwrap() > 0,
        "{counters}"
    );

    // The independent client finds each invitation in attendees' calendars.
    let run_tag = href_safe(summary["run_id"].as_str().unwrap());
    assert_eq!(
        invitations_in_attendee_calendars(lab, &format!("{run_tag}-")),
        sent,
        "the attendees' calendars hold other than the {sent} invitations the run sent"
    );
}
