//! Replays the C:/S: transcripts in `tests/transcripts/` through the
//! sans-I/O path the driver takes: a request builder, `peakhour-http`'s core,
//! and the outcome function.
//!
//! `! call NAME ARGS...` builds a request; the core must encode it to exactly
//! the `C:` bytes that follow. The `S:` bytes are fed in; when the response is
//! complete the call's outcome (or error) is rendered as one line and
//! compared, in order, with the `! expect` directives. Every file is
//! replayed with the server's bytes whole, one byte at a time and in uneven
//! pieces. `! limit max_body N` lowers the HTTP body cap.
//!
//! Calls: `find_principal PATH`, `find_home PATH`, `list_calendars PATH`,
//! `make_calendar PATH NAME`, `query PATH START END data|etags`,
//! `put HREF UID SEQUENCE create|none|ETAG`, `get HREF`,
//! `delete HREF none|ETAG`; for scheduling (RFC 6638) `options PATH`,
//! `find_inbox PATH`, `find_default PATH`, `list_home PATH`, `inbox PATH`,
//! `get_itip HREF`, `find_uid PATH UID`.

use std::path::Path;

use peakhour_caldav::ical::property;
use peakhour_caldav::requests::{self, Precondition};
use peakhour_caldav::{
    CalDavError, EventSpec, UtcDateTime, XmlLimits, event_ics, outcome, read_event, scheduling,
};
use peakhour_http::{BasicAuth, HttpClient, Limits, Progress, Request, Response, Secret};
use peakhour_net::transcript::{Side, Step, Transcript};

/// The event a `put` call writes: fixed but for its UID and sequence.
fn event(uid: &str, sequence: u32) -> String {
    let start = UtcDateTime::from_fields(2026, 1, 6, 9, 0, 0).expect("date");
    event_ics(&EventSpec {
        uid: uid.to_owned(),
        stamp: UtcDateTime::from_fields(2026, 1, 5, 8, 0, 0).expect("date"),
        start,
        end: start.plus_seconds(3600),
        summary: format!("Meeting {uid}"),
        location: Some("Room 1".into()),
        description: None,
        sequence,
    })
}

fn date(text: &str) -> UtcDateTime {
    let n = |r: std::ops::Range<usize>| text[r].parse::<u32>().expect("date digits");
    UtcDateTime::from_fields(
        i64::from(n(0..4)),
        n(4..6),
        n(6..8),
        n(9..11),
        n(11..13),
        n(13..15),
    )
    .expect("valid date")
}

fn precondition(word: &str) -> Precondition {
    match word {
        "none" => Precondition::None,
        "create" => Precondition::CreateOnly,
        etag => Precondition::IfMatch(etag.to_owned()),
    }
}

/// Renders a call's response as the line `! expect` compares.
type Reader = Box<dyn Fn(&Response) -> Result<String, CalDavError>>;

/// A call: its request, and how to read its response.
fn call(line: &str) -> (Request, Reader) {
    let args: Vec<&str> = line.split(' ').collect();
    let xml = XmlLimits::default();
    match args.as_slice() {
        ["find_principal", path] => (
            requests::find_principal(path),
            Box::new(move |r| outcome::principal(r, &xml).map(|p| format!("principal {p}"))),
        ),
        ["find_home", path] => (
            requests::find_calendar_home(path),
            Box::new(move |r| outcome::calendar_home(r, &xml).map(|h| format!("home {h}"))),
        ),
        ["list_calendars", path] => (
            requests::list_calendars(path),
            Box::new(move |r| {
                let calendars = outcome::calendars(r, &xml)?;
                let items: Vec<String> = calendars
                    .iter()
                    .map(|c| {
                        format!(
                            "{} name={} ctag={}",
                            c.href,
                            c.display_name.as_deref().unwrap_or("-"),
                            c.ctag.as_deref().unwrap_or("-")
                        )
                    })
                    .collect();
                Ok(format!("calendars ({}) {}", items.len(), items.join("; ")))
            }),
        ),
        ["make_calendar", path, name] => (
            requests::make_calendar(path, name),
            Box::new(|r| outcome::make_calendar(r).map(|o| format!("{o:?}"))),
        ),
        ["query", path, start, end, mode] => (
            requests::query_events(path, date(start), date(end), *mode == "data"),
            Box::new(move |r| {
                let events = outcome::events(r, &xml)?;
                let items: Vec<String> = events
                    .iter()
                    .map(|e| {
                        let uid = e.data.as_deref().and_then(|d| property(d, "UID"));
                        format!(
                            "{} {} uid={}",
                            e.href,
                            e.etag.as_deref().unwrap_or("-"),
                            uid.as_deref().unwrap_or("-")
                        )
                    })
                    .collect();
                Ok(format!("events ({}) {}", items.len(), items.join("; ")))
            }),
        ),
        // What a simulated user reads back to change an event (read_event).
        ["query_heads", path, start, end, "data"] => (
            requests::query_events(path, date(start), date(end), true),
            Box::new(move |r| {
                let events = outcome::events(r, &xml)?;
                let items: Vec<String> = events
                    .iter()
                    .map(|e| match e.data.as_deref().and_then(read_event) {
                        Some(head) => format!(
                            "{} uid={} start={} seq={}",
                            e.href, head.uid, head.start, head.sequence
                        ),
                        None => format!("{} unreadable", e.href),
                    })
                    .collect();
                Ok(format!("heads ({}) {}", items.len(), items.join("; ")))
            }),
        ),
        ["put", href, uid, sequence, pre] => (
            requests::put_event(
                href,
                &event(uid, sequence.parse().expect("sequence")),
                &precondition(pre),
            ),
            Box::new(|r| outcome::put(r).map(|o| format!("{o:?}"))),
        ),
        ["get", href] => {
            let href = href.to_string();
            (
                requests::get_event(&href),
                Box::new(move |r| {
                    outcome::event(&href, r).map(|e| {
                        let uid = e.data.as_deref().and_then(|d| property(d, "UID"));
                        format!(
                            "event {} uid={}",
                            e.etag.as_deref().unwrap_or("-"),
                            uid.unwrap_or_default()
                        )
                    })
                }),
            )
        }
        ["delete", href, pre] => (
            requests::delete(href, &precondition(pre)),
            Box::new(|r| outcome::delete(r).map(|o| format!("{o:?}"))),
        ),
        _ => scheduling_call(&args).unwrap_or_else(|| panic!("unknown call {line:?}")),
    }
}

/// The scheduling calls (RFC 6638), apart from [`call`] to keep each short.
fn scheduling_call(args: &[&str]) -> Option<(Request, Reader)> {
    let xml = XmlLimits::default();
    Some(match args {
        ["options", path] => (
            scheduling::requests::options(path),
            Box::new(|r| {
                let classes = scheduling::options(r)?;
                Ok(format!(
                    "dav schedules={} classes={}",
                    scheduling::schedules(r),
                    classes.join(",")
                ))
            }),
        ),
        ["find_inbox", path] => (
            scheduling::requests::find_schedule_inbox(path),
            Box::new(move |r| scheduling::schedule_inbox(r, &xml).map(|h| format!("inbox {h}"))),
        ),
        ["find_default", path] => (
            scheduling::requests::find_default_calendar(path),
            Box::new(move |r| scheduling::default_calendar(r, &xml).map(|h| format!("copies {h}"))),
        ),
        ["list_home", path] => (
            requests::list_calendars(path),
            Box::new(move |r| {
                let listing = scheduling::home_listing(r, &xml)?;
                let hrefs: Vec<&str> = listing.calendars.iter().map(|c| c.href.as_str()).collect();
                Ok(format!(
                    "home calendars={} inbox_tag={}",
                    hrefs.join(","),
                    listing.inbox_tag.as_deref().unwrap_or("-")
                ))
            }),
        ),
        ["inbox", path] => {
            let path = path.to_string();
            (
                scheduling::requests::list_members(&path),
                Box::new(move |r| {
                    let members = scheduling::members(&path, r, &xml)?;
                    let items: Vec<String> = members
                        .iter()
                        .map(|m| format!("{} {}", m.href, m.etag.as_deref().unwrap_or("-")))
                        .collect();
                    Ok(format!("members ({}) {}", items.len(), items.join("; ")))
                }),
            )
        }
        ["get_itip", href] => {
            let href = href.to_string();
            (
                requests::get_event(&href),
                Box::new(move |r| {
                    let item = outcome::event(&href, r)?;
                    Ok(match item.data.as_deref().and_then(scheduling::read_itip) {
                        Some(m) => format!("itip method={} uid={}", m.method, m.uid),
                        None => "itip unreadable".to_owned(),
                    })
                }),
            )
        }
        ["find_uid", path, uid] => (
            scheduling::requests::find_by_uid(path, uid),
            Box::new(move |r| {
                let found = outcome::events(r, &xml)?;
                let items: Vec<String> = found
                    .iter()
                    .map(|e| {
                        let answered = e.data.as_deref().and_then(|d| {
                            scheduling::answer_ics(d, "user2@bench.test", "ACCEPTED")
                        });
                        format!(
                            "{} {} answerable={}",
                            e.href,
                            e.etag.as_deref().unwrap_or("-"),
                            answered.is_some()
                        )
                    })
                    .collect();
                Ok(format!("copies ({}) {}", items.len(), items.join("; ")))
            }),
        ),
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy)]
enum Split {
    Whole,
    Bytewise,
    Uneven,
}

fn replay(transcript: &Transcript, split: Split) -> Vec<String> {
    let mut limits = Limits::default();
    if let Some(value) = transcript.directive("limit") {
        let n = value.strip_prefix("max_body ").expect("! limit max_body N");
        limits.max_body = n.parse().expect("number");
    }
    let auth = BasicAuth::new("user1", &Secret::new("pw1".to_owned()));
    let mut client = HttpClient::new("127.0.0.1:5232", Some(auth), limits);
    let mut log = Vec::new();
    let mut reader: Option<Reader> = None;
    let mut expected_out: Vec<u8> = Vec::new();
    let mut seed = 12345u32;
    let mut failed = false;
    let check_output = |client: &mut HttpClient, expected: &mut Vec<u8>| {
        if expected.is_empty() {
            return;
        }
        assert_eq!(
            client.pending_output().escape_ascii().to_string(),
            expected.escape_ascii().to_string(),
            "{}",
            transcript.path.display()
        );
        let n = client.pending_output().len();
        client.consume_output(n);
        expected.clear();
    };
    for step in &transcript.steps {
        if failed {
            break;
        }
        match step {
            Step::Directive { key, value, .. } if key == "call" => {
                let (request, read) = call(value);
                if let Err(error) = client.send(&request) {
                    panic!("{}: {error}", transcript.path.display());
                }
                reader = Some(read);
            }
            Step::Directive { .. } => {}
            Step::Bytes {
                side: Side::Client,
                bytes,
                ..
            } => expected_out.extend_from_slice(bytes),
            Step::Bytes {
                side: Side::Server,
                bytes,
                ..
            } => {
                check_output(&mut client, &mut expected_out);
                let mut rest = &bytes[..];
                while !rest.is_empty() && !failed {
                    let n = match split {
                        Split::Whole => rest.len(),
                        Split::Bytewise => 1,
                        Split::Uneven => {
                            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                            1 + (seed >> 16) as usize % 7
                        }
                    };
                    let (piece, tail) = rest.split_at(n.min(rest.len()));
                    rest = tail;
                    client.enqueue_input(piece);
                    match client.next_response() {
                        Ok(Progress::NeedMoreInput) => {}
                        Ok(Progress::Event(response)) => {
                            let read = reader.take().expect("a response without a call");
                            log.push(match read(&response) {
                                Ok(line) => line,
                                Err(error) => format!("error {}: {error}", error.kind()),
                            });
                        }
                        Err(error) => {
                            log.push(format!("error {}: {error}", error.kind()));
                            failed = true;
                        }
                    }
                }
            }
        }
    }
    check_output(&mut client, &mut expected_out);
    if !failed && reader.is_some() {
        client.input_closed();
        match client.next_response() {
            Ok(Progress::Event(response)) => {
                let read = reader.take().expect("call");
                log.push(read(&response).unwrap_or_else(|e| format!("error {}: {e}", e.kind())));
            }
            Ok(Progress::NeedMoreInput) => log.push("no response".into()),
            Err(error) => log.push(format!("error {}: {error}", error.kind())),
        }
    }
    log
}

#[test]
fn every_transcript_replays_the_same_however_the_input_is_split() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let transcripts = Transcript::load_dir(&dir).expect("transcripts");
    assert!(transcripts.len() >= 10, "only {}", transcripts.len());
    for transcript in &transcripts {
        let expected: Vec<String> = transcript
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Directive { key, value, .. } if key == "expect" => Some(value.clone()),
                _ => None,
            })
            .collect();
        assert!(
            !expected.is_empty(),
            "{} has no ! expect",
            transcript.path.display()
        );
        for split in [Split::Whole, Split::Bytewise, Split::Uneven] {
            assert_eq!(
                replay(transcript, split),
                expected,
                "{} ({split:?})",
                transcript.path.display()
            );
        }
    }
}
