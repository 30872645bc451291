//! Replays the C:/S: transcripts in `tests/transcripts/` through the
//! sans-I/O path the driver takes: [`calls`] and [`exchange`] build the
//! request, `peakhour-http`'s core encodes it (it must be exactly the `C:`
//! bytes) and decodes the `S:` bytes, and [`exchange`] reads the response.
//! Each outcome (or error) is rendered as one line and compared with the
//! `! expect` directives, with the server's bytes whole, one byte at a time
//! and in uneven pieces.
//!
//! `! call NAME` picks the request; the arguments are fixed (account `user1`,
//! API at `/jmap/`): `discover`, `discover_redirected`, `mailboxes`, `query`,
//! `get`, `seen`, `move`, `upload`, `send`, `send_to` (with an SMTP
//! envelope), `import` (alone), `events` (streamed: each push
//! event is rendered as it is parsed). `! limit max_body N` lowers the cap.

use std::path::Path;

use peakhour_http::{
    BasicAuth, BodyEvent, HttpClient, Limits, Progress, Request, Response, Secret,
};
use peakhour_jmap::envelope::{
    Email, GetResponse, Mailbox, QueryResponse, SetResponse, SubmissionEnvelope, Upload,
};
use peakhour_jmap::exchange::{self, SessionStep};
use peakhour_jmap::{EventStreamParser, JmapError, PushEvent, StreamLimits, calls, session};
use peakhour_net::transcript::{Side, Step, Transcript};

const API: &str = "/jmap/";
const ACCOUNT: &str = "user1";

type Reader = Box<dyn Fn(&Response) -> Result<String, JmapError>>;

fn render_session(response: &Response) -> Result<String, JmapError> {
    Ok(match exchange::session(response)? {
        SessionStep::Redirect(path) => format!("redirect {path}"),
        SessionStep::Session(s) => format!(
            "session api={} account={} upload={} events={}",
            s.api_path(),
            s.primary_account(session::MAIL).unwrap_or("-"),
            s.upload_path(ACCOUNT),
            s.event_source_path("*", 30)
        ),
    })
}

fn result<T: serde::de::DeserializeOwned>(
    response: &Response,
    method: &'static str,
) -> Result<T, JmapError> {
    exchange::method_result(&exchange::api_response(response)?, method, "0")
}

fn render_set(set: &SetResponse) -> String {
    let updated: Vec<&String> = set.updated.iter().flat_map(|m| m.keys()).collect();
    format!(
        "updated {updated:?} failures {:?} state {}",
        set.failures(),
        set.new_state.as_deref().unwrap_or("-")
    )
}

fn render_mailboxes(response: &Response) -> Result<String, JmapError> {
    let got: GetResponse<Mailbox> = result(response, "Mailbox/get")?;
    let items: Vec<String> = got
        .list
        .iter()
        .map(|m| {
            let role = m.role.as_deref().unwrap_or("-");
            format!("{}({role}) {}/{}", m.name, m.unread_emails, m.total_emails)
        })
        .collect();
    Ok(format!("mailboxes state={} {}", got.state, items.join(" ")))
}

fn render_emails(response: &Response) -> Result<String, JmapError> {
    let got: GetResponse<Email> = result(response, "Email/get")?;
    let items: Vec<String> = got
        .list
        .iter()
        .map(|e| {
            let keywords: Vec<&String> = e.keywords.keys().collect();
            format!(
                "{} {:?} {keywords:?} {}",
                e.id,
                e.subject.as_deref().unwrap_or("-"),
                e.size.unwrap_or(0)
            )
        })
        .collect();
    Ok(format!(
        "emails {} not_found {:?}",
        items.join("; "),
        got.not_found
    ))
}

/// The two results of a send: `Email/import` then `EmailSubmission/set`.
fn import_and_submission(response: &Response) -> Result<(SetResponse, SetResponse), JmapError> {
    let envelope = exchange::api_response(response)?;
    let imported = exchange::method_result(&envelope, "Email/import", "0")?;
    let submitted = exchange::method_result(&envelope, "EmailSubmission/set", "1")?;
    Ok((imported, submitted))
}

/// The request of the call `name` and how its response is read: one arm per
/// call of the transcripts.
fn call(name: &str) -> (Request, Reader) {
    let api = |request| exchange::api_request(API, &request);
    match name {
        "discover" => (
            exchange::session_request(exchange::WELL_KNOWN),
            Box::new(render_session),
        ),
        "discover_redirected" => (exchange::session_request(API), Box::new(render_session)),
        "mailboxes" => (api(calls::mailbox_get(ACCOUNT)), Box::new(render_mailboxes)),
        "query" => (
            api(calls::email_query(ACCOUNT, "mb-inbox", 10)),
            Box::new(|r| {
                let got: QueryResponse = result(r, "Email/query")?;
                Ok(format!("ids {:?} total={:?}", got.ids, got.total))
            }),
        ),
        "get" => (
            api(calls::email_get(
                ACCOUNT,
                vec!["e1".into(), "e2".into()],
                vec!["id", "mailboxIds", "keywords", "size", "subject"],
                false,
            )),
            Box::new(render_emails),
        ),
        "seen" => (
            api(calls::set_keyword(ACCOUNT, "e1", "$seen", true)),
            Box::new(|r| Ok(render_set(&result(r, "Email/set")?))),
        ),
        "move" => (
            api(calls::move_email(ACCOUNT, "e1", "mb-inbox", "mb-archive")),
            Box::new(|r| Ok(render_set(&result(r, "Email/set")?))),
        ),
        "upload" => (
            exchange::upload_request(
                "/jmap/upload/user1/",
                "message/rfc822",
                b"Subject: hi\r\n\r\nhello\r\n".to_vec(),
            ),
            Box::new(|r| {
                let got: Upload = exchange::upload(r)?;
                Ok(format!(
                    "blob {} {} {}",
                    got.blob_id, got.media_type, got.size
                ))
            }),
        ),
        "send" => (
            api(calls::import_and_submit(ACCOUNT, "G123", "mb-sent", "id1")),
            Box::new(|r| {
                let (imported, submitted) = import_and_submission(r)?;
                Ok(format!(
                    "imported {} submitted {}",
                    imported.created_id("m").unwrap_or("-"),
                    submitted.created_id("s").unwrap_or("-")
                ))
            }),
        ),
        "send_to" => (
            api(calls::import_and_submit_to(
                ACCOUNT,
                "G123",
                "mb-sent",
                "id1",
                Some(SubmissionEnvelope::new(
                    "user1@bench.test",
                    &["user2@bench.test".into(), "user3@bench.test".into()],
                )),
            )),
            Box::new(|r| {
                let (imported, submitted) = import_and_submission(r)?;
                Ok(format!(
                    "imported {} submitted {} failures {:?}",
                    imported.created_id("m").unwrap_or("-"),
                    submitted.created_id("s").unwrap_or("-"),
                    submitted.failures()
                ))
            }),
        ),
        "import" => (
            api(calls::import(ACCOUNT, "G7", "mb-calendar", &[])),
            Box::new(|r| {
                let imported: SetResponse = result(r, "Email/import")?;
                Ok(format!(
                    "imported {} failures {:?}",
                    imported.created_id("m").unwrap_or("-"),
                    imported.failures()
                ))
            }),
        ),
        other => panic!("unknown call {other:?}"),
    }
}

#[derive(Debug, Clone, Copy)]
enum Split {
    Whole,
    Bytewise,
    Uneven,
}

/// The state of one replay.
struct Replay {
    client: HttpClient,
    log: Vec<String>,
    reader: Option<Reader>,
    /// Set for a streamed (`events`) call.
    events: Option<EventStreamParser>,
    failed: bool,
}

impl Replay {
    fn error(&mut self, error: impl std::fmt::Display, kind: &str) {
        self.log.push(format!("error {kind}: {error}"));
        self.failed = true;
    }

    /// Takes whatever the core has ready.
    fn drain(&mut self) {
        if self.events.is_some() {
            return self.drain_events();
        }
        match self.client.next_response() {
            Ok(Progress::NeedMoreInput) => {}
            Ok(Progress::Event(response)) => {
                let read = self.reader.take().expect("a response without a call");
                match read(&response) {
                    Ok(line) => self.log.push(line),
                    Err(error) => self.log.push(format!("error {}: {error}", error.kind())),
                }
            }
            Err(error) => self.error(&error, error.kind()),
        }
    }

    fn drain_events(&mut self) {
        while !self.failed {
            let bytes = match self.client.next_event() {
                Ok(Progress::NeedMoreInput) => return,
                Ok(Progress::Event(BodyEvent::Head(head))) => {
                    self.log.push(format!("stream {}", head.status));
                    continue;
                }
                Ok(Progress::Event(BodyEvent::End)) => {
                    self.log.push("stream ended".into());
                    continue;
                }
                Ok(Progress::Event(BodyEvent::Data(bytes))) => bytes,
                Err(error) => return self.error(&error, error.kind()),
            };
            let parser = self.events.as_mut().expect("streaming");
            parser.enqueue_input(&bytes);
            loop {
                match parser.next_event() {
                    Ok(None) => break,
                    Ok(Some(event)) => {
                        let line = match peakhour_jmap::eventsource::push_event(&event) {
                            Ok(PushEvent::StateChange(change)) => {
                                format!("push {:?}", change.changed)
                            }
                            Ok(other) => format!("push {other:?}"),
                            Err(error) => format!("push error: {error}"),
                        };
                        self.log.push(line);
                    }
                    Err(error) => return self.error(&error, "bad-event-stream"),
                }
            }
        }
    }
}

fn replay(transcript: &Transcript, split: Split) -> Vec<String> {
    let mut limits = Limits::default();
    if let Some(value) = transcript.directive("limit") {
        let n = value.strip_prefix("max_body ").expect("! limit max_body N");
        limits.max_body = n.parse().expect("number");
    }
    let auth = BasicAuth::new("user1", &Secret::new("pw1".to_owned()));
    let mut replay = Replay {
        client: HttpClient::new("127.0.0.1:8008", Some(auth), limits),
        log: Vec::new(),
        reader: None,
        events: None,
        failed: false,
    };
    let mut expected_out: Vec<u8> = Vec::new();
    let mut seed = 12345u32;
    for step in &transcript.steps {
        if replay.failed {
            break;
        }
        match step {
            Step::Directive { key, value, .. } if key == "call" => {
                let sent = if value == "events" {
                    replay.events = Some(EventStreamParser::new(StreamLimits {
                        max_line: 256,
                        max_event: 1024,
                    }));
                    let request = exchange::event_source_request(
                        "/jmap/eventsource/?types=*&closeafter=no&ping=30",
                    );
                    replay.client.send_streaming(&request)
                } else {
                    let (request, reader) = call(value);
                    replay.reader = Some(reader);
                    replay.client.send(&request)
                };
                sent.unwrap_or_else(|e| panic!("{}: {e}", transcript.path.display()));
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
                if !expected_out.is_empty() {
                    assert_eq!(
                        replay.client.pending_output().escape_ascii().to_string(),
                        expected_out.escape_ascii().to_string(),
                        "{}",
                        transcript.path.display()
                    );
                    let n = replay.client.pending_output().len();
                    replay.client.consume_output(n);
                    expected_out.clear();
                }
                let mut rest = &bytes[..];
                while !rest.is_empty() && !replay.failed {
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
                    replay.client.enqueue_input(piece);
                    replay.drain();
                }
            }
        }
    }
    if !replay.failed && (replay.reader.is_some() || replay.events.is_some()) {
        replay.client.input_closed();
        replay.drain();
    }
    replay.log
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
