//! Replays the C:/S: transcripts in `tests/transcripts/` through the sans-I/O
//! core.
//!
//! Each run of `C:` lines is one request. It is parsed back into a
//! [`Request`] (the client's own headers — Host, User-Agent, Authorization,
//! Content-Length — left out) and sent; the core must encode it to exactly
//! those bytes. The `S:` bytes are fed in, and every response or error is
//! rendered as one line and compared, in order, with the `! expect`
//! directives. At the end the input is closed, as if the server hung up.
//!
//! Every file is replayed with the server's bytes whole, one byte at a time
//! and in uneven pieces; all must give the same lines. Directives:
//! `! auth USER PASSWORD`, `! limit NAME VALUE` (a [`Limits`] field),
//! `! stream` (read the bodies with `next_event` and render the pieces'
//! total instead).

use std::path::Path;

use peakhour_http::{
    BasicAuth, BodyEvent, HttpClient, Limits, Method, Progress, Request, Response, Secret,
};
use peakhour_net::transcript::{Side, Step, Transcript};

#[derive(Debug, Clone, Copy)]
enum Split {
    Whole,
    Bytewise,
    Uneven,
}

struct Replay {
    client: HttpClient,
    log: Vec<String>,
    failed: bool,
    split: Split,
    stream: bool,
    streamed: Vec<u8>,
    seed: u32,
}

impl Replay {
    fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() && !self.failed {
            let n = match self.split {
                Split::Whole => rest.len(),
                Split::Bytewise => 1,
                Split::Uneven => {
                    self.seed = self.seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    1 + (self.seed >> 16) as usize % 7
                }
            };
            let (piece, tail) = rest.split_at(n.min(rest.len()));
            self.client.enqueue_input(piece);
            self.drain();
            rest = tail;
        }
    }

    fn drain(&mut self) {
        while !self.failed {
            let step = if self.stream {
                self.client.next_event().map(|p| match p {
                    Progress::Event(BodyEvent::Head(head)) => {
                        self.log
                            .push(format!("head {} {}", head.status, head.reason));
                        true
                    }
                    Progress::Event(BodyEvent::Data(bytes)) => {
                        assert!(!bytes.is_empty(), "an empty Data event");
                        self.streamed.extend_from_slice(&bytes);
                        true
                    }
                    Progress::Event(BodyEvent::End) => {
                        let body = std::mem::take(&mut self.streamed);
                        self.log
                            .push(format!("end {} \"{}\"", body.len(), body.escape_ascii()));
                        true
                    }
                    Progress::NeedMoreInput => false,
                })
            } else {
                self.client.next_response().map(|p| match p {
                    Progress::Event(response) => {
                        self.log.push(render(&response));
                        true
                    }
                    Progress::NeedMoreInput => false,
                })
            };
            match step {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    self.log.push(format!("error: {error}"));
                    self.failed = true;
                }
            }
        }
    }
}

fn render(response: &Response) -> String {
    let head = &response.head;
    let mut line = format!(
        "{} {} {}",
        head.status,
        head.reason,
        if head.keep_alive {
            "keep-alive"
        } else {
            "close"
        }
    );
    if let Some(etag) = head.headers.get("etag") {
        line.push_str(&format!(" etag={etag}"));
    }
    line.push_str(&format!(
        " body={} \"{}\"",
        response.body.len(),
        response.body[..response.body.len().min(80)].escape_ascii()
    ));
    line
}

/// Parses the client's bytes back into a request, leaving out the headers the
/// client adds itself.
fn parse_request(wire: &[u8], line: usize) -> (Request, String) {
    let split = wire
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("line {line}: request without a blank line"));
    let head = std::str::from_utf8(&wire[..split]).expect("request head is UTF-8");
    let body = wire[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().expect("request line");
    let mut parts = request_line.split(' ');
    let method = Method::parse(parts.next().expect("method")).expect("known method");
    let target = parts.next().expect("target");
    let mut request = Request::new(method, target);
    let mut host = String::new();
    for header in lines {
        let (name, value) = header.split_once(": ").expect("header line");
        match name {
            "Host" => host = value.to_owned(),
            "User-Agent" | "Authorization" | "Content-Length" => {}
            _ => request = request.header(name, value),
        }
    }
    (request.raw_body(body), host)
}

fn replay(transcript: &Transcript, split: Split) -> Vec<String> {
    let mut limits = Limits::default();
    let mut auth = None;
    for step in &transcript.steps {
        if let Step::Directive { key, value, .. } = step {
            match key.as_str() {
                "limit" => {
                    let (name, n) = value.split_once(' ').expect("! limit NAME VALUE");
                    let n: usize = n.parse().expect("limit value");
                    match name {
                        "max_head" => limits.max_head = n,
                        "max_headers" => limits.max_headers = n,
                        "max_body" => limits.max_body = n,
                        "max_chunk_line" => limits.max_chunk_line = n,
                        other => panic!("unknown limit {other}"),
                    }
                }
                "auth" => {
                    let (user, password) = value.split_once(' ').expect("! auth USER PASSWORD");
                    auth = Some(BasicAuth::new(user, &Secret::new(password.to_owned())));
                }
                _ => {}
            }
        }
    }
    let is_client = |s: &&Step| {
        matches!(
            s,
            Step::Bytes {
                side: Side::Client,
                ..
            }
        )
    };
    let first_request: Vec<u8> = transcript
        .steps
        .iter()
        .skip_while(|s| !is_client(s))
        .take_while(is_client)
        .flat_map(|s| match s {
            Step::Bytes { bytes, .. } => bytes.clone(),
            Step::Directive { .. } => Vec::new(),
        })
        .collect();
    let host = if first_request.is_empty() {
        "example.test".to_owned()
    } else {
        parse_request(&first_request, 0).1
    };
    let mut replay = Replay {
        client: HttpClient::new(host, auth, limits),
        log: Vec::new(),
        failed: false,
        split,
        stream: transcript.directive("stream").is_some(),
        streamed: Vec::new(),
        seed: 12345,
    };
    let mut pending_client: Vec<u8> = Vec::new();
    let mut pending_line = 0;
    let flush_request = |replay: &mut Replay, bytes: &mut Vec<u8>, line: usize| {
        if bytes.is_empty() {
            return;
        }
        let (request, _) = parse_request(bytes, line);
        let sent = if replay.stream {
            replay.client.send_streaming(&request)
        } else {
            replay.client.send(&request)
        };
        match sent {
            Ok(()) => {
                assert_eq!(
                    replay.client.pending_output().escape_ascii().to_string(),
                    bytes.escape_ascii().to_string(),
                    "{}: request ending at line {line}",
                    transcript.path.display()
                );
                let n = replay.client.pending_output().len();
                replay.client.consume_output(n);
            }
            Err(error) => {
                replay.log.push(format!("send error: {error}"));
                replay.failed = true;
            }
        }
        bytes.clear();
    };
    for step in &transcript.steps {
        match step {
            Step::Bytes {
                side: Side::Client,
                bytes,
                line,
            } => {
                pending_client.extend_from_slice(bytes);
                pending_line = *line;
            }
            Step::Bytes {
                side: Side::Server,
                bytes,
                ..
            } => {
                flush_request(&mut replay, &mut pending_client, pending_line);
                replay.feed(bytes);
            }
            Step::Directive { .. } => {}
        }
    }
    flush_request(&mut replay, &mut pending_client, pending_line);
    if !replay.failed {
        replay.client.input_closed();
        replay.drain();
    }
    replay.log
}

fn expectations(transcript: &Transcript) -> Vec<String> {
    transcript
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Directive { key, value, .. } if key == "expect" => Some(value.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_transcript_replays_the_same_however_the_input_is_split() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let transcripts = Transcript::load_dir(&dir).expect("transcripts");
    assert!(
        transcripts.len() >= 20,
        "only {} transcripts",
        transcripts.len()
    );
    for transcript in &transcripts {
        let expected = expectations(transcript);
        assert!(
            !expected.is_empty(),
            "{} has no ! expect",
            transcript.path.display()
        );
        for split in [Split::Whole, Split::Bytewise, Split::Uneven] {
            let got = replay(transcript, split);
            assert_eq!(got, expected, "{} ({split:?})", transcript.path.display());
        }
    }
}

/// A body far larger than the limit is refused once the limit is passed,
/// without buffering the rest: the core's memory stays near the limit.
#[test]
fn a_huge_close_delimited_body_is_refused_at_the_cap() {
    let limits = Limits {
        max_body: 64 * 1024,
        ..Limits::default()
    };
    let mut client = HttpClient::new("h", None, limits);
    client.send(&Request::new(Method::Get, "/")).unwrap();
    client.enqueue_input(b"HTTP/1.0 200 OK\r\n\r\n");
    let piece = vec![b'x'; 16 * 1024];
    let mut fed = 0;
    let error = loop {
        client.enqueue_input(&piece);
        fed += piece.len();
        assert!(fed < 1024 * 1024, "never refused");
        match client.next_response() {
            Ok(Progress::NeedMoreInput) => continue,
            Ok(Progress::Event(r)) => panic!("got a response of {}", r.body.len()),
            Err(error) => break error,
        }
    };
    assert_eq!(error.kind(), "body-too-large");
    assert!(fed <= 64 * 1024 + 16 * 1024, "fed {fed}");
}
