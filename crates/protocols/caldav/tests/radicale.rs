//! The CalDAV client against a real Radicale (Debian's `radicale`, installed
//! by `scripts/setup.sh`), started here on a free loopback port with a
//! private configuration, storage and htpasswd file; then an independent
//! check of what is stored, with Python's `http.client`.
#![allow(clippy::unwrap_used)] // helpers outside #[test] functions, in a test file

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use peakhour_caldav::ical::property;
use peakhour_caldav::{
    CalDavClient, DeleteOutcome, EventSpec, MakeCalendarOutcome, Precondition, PutOutcome,
    UtcDateTime, event_ics,
};
use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint, HttpConnection};
use peakhour_net::{Secret, Security};

const USER: &str = "user1";
const PASSWORD: &str = "pw-live-1";

/// A Radicale process, stopped (by its PID) when dropped.
struct Radicale {
    child: Child,
    port: u16,
}

impl Drop for Radicale {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The configuration the lab can reuse: loopback only, plain htpasswd users,
/// owner-only rights, storage in the lab directory, no web UI. Radicale allows
/// 8 parallel connections by default; a load test needs more.
fn config(dir: &Path, port: u16) -> String {
    let dir = dir.display();
    format!(
        "[server]\nhosts = 127.0.0.1:{port}\nmax_connections = 64\n\
         [auth]\ntype = htpasswd\nhtpasswd_filename = {dir}/users\nhtpasswd_encryption = plain\n\
         [rights]\ntype = owner_only\n\
         [storage]\nfilesystem_folder = {dir}/collections\n\
         [web]\ntype = none\n\
         [logging]\nlevel = warning\n"
    )
}

fn start_radicale(dir: &Path) -> Radicale {
    assert!(
        Command::new("radicale").arg("--version").output().is_ok(),
        "radicale is not installed: run scripts/setup.sh (apt-get install radicale)"
    );
    std::fs::write(dir.join("users"), format!("{USER}:{PASSWORD}\n")).unwrap();
    // A port found free can be taken before Radicale binds it: try a few.
    for _attempt in 0..3 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let config_path = dir.join("config");
        std::fs::write(&config_path, config(dir, port)).unwrap();
        let log = std::fs::File::create(dir.join("radicale.log")).unwrap();
        let mut child = Command::new("radicale")
            .arg("--config")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break; // exited: most likely the port was taken
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Radicale { child, port };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut log = String::new();
    let _ =
        std::fs::File::open(dir.join("radicale.log")).and_then(|mut f| f.read_to_string(&mut log));
    panic!("radicale did not start:\n{log}");
}

fn client(port: u16, password: &str) -> CalDavClient {
    let endpoint = Endpoint {
        host: "127.0.0.1".into(),
        port,
        security: Security::Plain,
        tls: None,
        connect_timeout: Duration::from_secs(5),
        source: None,
    };
    let options = ConnectionOptions {
        auth: Some(BasicAuth::new(USER, &Secret::new(password.to_owned()))),
        ..ConnectionOptions::default()
    };
    CalDavClient::new(HttpConnection::new(endpoint, options))
}

fn event(uid: &str, start: UtcDateTime, sequence: u32) -> String {
    event_ics(&EventSpec {
        uid: uid.to_owned(),
        stamp: UtcDateTime::from_fields(2026, 1, 1, 0, 0, 0).unwrap(),
        start,
        end: start.plus_seconds(1800),
        summary: format!("Live test {uid}, revision {sequence}"),
        location: Some("Room 4; east wing".into()),
        description: Some("Agenda:\n1. numbers\n2. plans".into()),
        sequence,
    })
}

/// Lists the `.ics` hrefs in a calendar with Python's standard library only:
/// a PROPFIND Depth 1 over `http.client`, parsed with `xml.etree`.
fn python_list(port: u16, calendar: &str) -> Vec<String> {
    let script = r#"
import base64, http.client, sys, xml.etree.ElementTree as ET
port, user, password, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
auth = base64.b64encode(f"{user}:{password}".encode()).decode()
body = '<?xml version="1.0"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>'
conn.request("PROPFIND", path, body=body, headers={"Depth": "1", "Authorization": "Basic " + auth, "Content-Type": "application/xml"})
response = conn.getresponse()
assert response.status == 207, response.status
for href in ET.fromstring(response.read()).iter("{DAV:}href"):
    if href.text.endswith(".ics"):
        print(href.text)
"#;
    let output = Command::new("python3")
        .args(["-c", script, &port.to_string(), USER, PASSWORD, calendar])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "python check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut hrefs: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    hrefs.sort();
    hrefs
}

#[tokio::test]
async fn creates_queries_changes_and_deletes_events_on_radicale() {
    let dir = tempfile::tempdir().unwrap();
    let radicale = start_radicale(dir.path());
    let mut caldav = client(radicale.port, PASSWORD);

    let home = caldav.discover_home().await.unwrap().value;
    assert_eq!(home, format!("/{USER}/"));
    let calendar = format!("{home}work/");
    let made = caldav
        .make_calendar(&calendar, "Work & more")
        .await
        .unwrap();
    assert_eq!(made.value, MakeCalendarOutcome::Created);
    let again = caldav
        .make_calendar(&calendar, "Work & more")
        .await
        .unwrap();
    assert_eq!(again.value, MakeCalendarOutcome::AlreadyExists);
    let calendars = caldav.list_calendars(&home).await.unwrap().value;
    assert_eq!(calendars.len(), 1, "{calendars:?}");
    assert_eq!(calendars[0].href, calendar);
    assert_eq!(calendars[0].display_name.as_deref(), Some("Work & more"));
    let ctag_before = calendars[0].ctag.clone();
    assert!(ctag_before.is_some(), "Radicale has getctag");

    let (monday, mut etags) = put_six_events(&mut caldav, &calendar).await;
    let (first_href, new_etag) = change_the_first(&mut caldav, &mut etags).await;

    // The week's REPORT returns the five, with current ETags and data.
    let week_end = monday.plus_seconds(7 * 86_400);
    let week = caldav
        .query_events(&calendar, monday, week_end, true)
        .await
        .unwrap()
        .value;
    assert_eq!(week.len(), 5, "{week:?}");
    for object in &week {
        let (uid, _, etag) = &etags[&object.href];
        assert_eq!(object.etag.as_ref(), Some(etag), "{}", object.href);
        let data = object.data.as_deref().unwrap();
        assert_eq!(property(data, "UID").as_ref(), Some(uid));
    }
    let revised = week.iter().find(|o| o.href == first_href).unwrap();
    assert_eq!(
        property(revised.data.as_deref().unwrap(), "SEQUENCE").as_deref(),
        Some("1")
    );
    let fetched = caldav.get_event(&first_href).await.unwrap().value;
    assert_eq!(fetched.etag.as_deref(), Some(new_etag.as_str()));

    // Delete one of the week's with its ETag; the week then has four.
    let last_in_week = format!("{calendar}peakhour-live-4.ics");
    let etag = etags[&last_in_week].2.clone();
    let deleted = caldav
        .delete(&last_in_week, &Precondition::IfMatch(etag))
        .await
        .unwrap();
    assert_eq!(deleted.value, DeleteOutcome::Deleted);
    etags.remove(&last_in_week);
    let gone = caldav
        .delete(&last_in_week, &Precondition::None)
        .await
        .unwrap();
    assert_eq!(gone.value, DeleteOutcome::NotFound);
    let etags_only = caldav
        .query_events(&calendar, monday, week_end, false)
        .await
        .unwrap()
        .value;
    assert_eq!(etags_only.len(), 4);
    assert!(
        etags_only
            .iter()
            .all(|o| o.data.is_none() && o.etag.is_some())
    );

    let ctag_after = caldav.list_calendars(&home).await.unwrap().value[0]
        .ctag
        .clone();
    assert_ne!(
        ctag_after, ctag_before,
        "the change tag moves with the content"
    );

    // An independent client lists exactly the objects that remain.
    let expected: Vec<String> = etags.keys().cloned().collect();
    assert_eq!(python_list(radicale.port, &calendar), expected);

    // A wrong password is a 401 status error, not a transport failure.
    let mut intruder = client(radicale.port, "wrong");
    let refused = intruder.list_calendars(&home).await.unwrap_err();
    assert!(
        matches!(
            refused,
            peakhour_caldav::CalDavError::Status { status: 401, .. }
        ),
        "{refused}"
    );
    // Radicale 3.1's built-in server speaks HTTP/1.0 and closes after each
    // response, so every request opened its own connection.
    assert!(caldav.http().connects() > 1);
}

/// Each event's UID, start and ETag, by its href.
type Events = std::collections::BTreeMap<String, (String, UtcDateTime, String)>;

/// Five events in the week of Monday 2026-01-05 and one in February, each
/// created (not replaced); gives the Monday and the events.
async fn put_six_events(caldav: &mut CalDavClient, calendar: &str) -> (UtcDateTime, Events) {
    // Five events in the week of Monday 2026-01-05, one in February.
    let monday = UtcDateTime::from_fields(2026, 1, 5, 0, 0, 0).unwrap();
    let mut etags = Events::new();
    for n in 0..6u32 {
        let uid = format!("peakhour-live-{n}");
        let start = if n == 5 {
            UtcDateTime::from_fields(2026, 2, 2, 10, 0, 0).unwrap()
        } else {
            monday.plus_seconds(i64::from(n) * 86_400 + 9 * 3600)
        };
        let href = format!("{calendar}{uid}.ics");
        let put = caldav
            .put_event(&href, &event(&uid, start, 0), &Precondition::CreateOnly)
            .await
            .unwrap();
        let PutOutcome::Created { etag: Some(etag) } = put.value else {
            panic!("{href}: {:?}", put.value);
        };
        etags.insert(href, (uid, start, etag));
    }
    (monday, etags)
}

/// The first event: created again (refused), changed with its ETag, then
/// changed with the old ETag (refused). Gives its href and new ETag.
async fn change_the_first(caldav: &mut CalDavClient, etags: &mut Events) -> (String, String) {
    // Creating one that exists fails the precondition.
    let (first_href, (first_uid, first_start, first_etag)) = etags
        .iter()
        .next()
        .map(|(h, v)| (h.clone(), v.clone()))
        .unwrap();
    let exists = caldav
        .put_event(
            &first_href,
            &event(&first_uid, first_start, 0),
            &Precondition::CreateOnly,
        )
        .await
        .unwrap();
    assert_eq!(exists.value, PutOutcome::PreconditionFailed);

    // Change it with its ETag; the old ETag no longer matches.
    let changed = caldav
        .put_event(
            &first_href,
            &event(&first_uid, first_start, 1),
            &Precondition::IfMatch(first_etag.clone()),
        )
        .await
        .unwrap();
    // Radicale answers 201 to a replacement too: "stored" is what counts.
    let new_etag = changed
        .value
        .etag()
        .expect("stored with an ETag")
        .to_owned();
    assert_ne!(new_etag, first_etag);
    etags.get_mut(&first_href).unwrap().2 = new_etag.clone();
    let stale = caldav
        .put_event(
            &first_href,
            &event(&first_uid, first_start, 2),
            &Precondition::IfMatch(first_etag),
        )
        .await
        .unwrap();
    assert_eq!(stale.value, PutOutcome::PreconditionFailed);
    (first_href, new_etag)
}
