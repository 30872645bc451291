//! Replays the C:/S: transcripts in `tests/transcripts/` through the sans-I/O
//! core.
//!
//! For each file the `C:` lines are parsed into [`Command`]s and sent; the
//! core must emit exactly those bytes. The `S:` bytes are fed in, and every
//! response or error the core returns is rendered as one line and compared,
//! in order, with the file's `! expect` directives. At the end of the file the
//! input is closed, as if the server hung up.
//!
//! Each transcript is replayed with the server bytes split several ways (whole,
//! one byte at a time, uneven chunks) and must give the same result each time.
//! Files with `! pipeline` are also replayed with every command sent up front.
//! `! limit <name> <value>` lowers one of the core's [`Limits`].

use std::path::Path;

use peakhour_net::Secret;
use peakhour_net::transcript::{Side, Step, Transcript};
use peakhour_pop3::{Command, Limits, Pop3Client, Progress, Reply, Response};

/// How the server's bytes are cut before they are fed to the core.
#[derive(Debug, Clone, Copy)]
enum Split {
    /// Each run of consecutive `S:` lines in one piece.
    Whole,
    /// One byte at a time.
    Bytewise,
    /// Pieces of 1 to 7 bytes, from a fixed sequence.
    Uneven,
}

struct Replay {
    client: Pop3Client,
    /// Bytes the client asked to write, not yet compared with the transcript.
    sent: Vec<u8>,
    log: Vec<String>,
    failed: bool,
    split: Split,
    seed: u32,
}

impl Replay {
    fn new(limits: Limits, split: Split) -> Self {
        Self {
            client: Pop3Client::new(limits),
            sent: Vec::new(),
            log: Vec::new(),
            failed: false,
            split,
            seed: 12345,
        }
    }

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
            match self.client.next() {
                Ok(Progress::Output(bytes)) => self.sent.extend_from_slice(&bytes),
                Ok(Progress::Event(response)) => self.log.push(render(&response)),
                Ok(Progress::NeedMoreInput) => break,
                Err(error) => {
                    self.log.push(format!("error: {error}"));
                    self.failed = true;
                }
            }
        }
    }

    fn hang_up(&mut self) {
        self.client.input_closed();
        self.drain();
    }

    /// Everything the client asked to write since the last call.
    fn take_sent(&mut self) -> Vec<u8> {
        self.drain();
        std::mem::take(&mut self.sent)
    }
}

fn render(response: &Response) -> String {
    let kind = response.command.as_str().to_ascii_uppercase();
    let line = match &response.outcome {
        Err(reply) => format!("{kind} {reply}"),
        Ok(Reply::Greeting(g)) => format!(
            "GREETING +OK apop={} {}",
            g.apop_timestamp.as_deref().unwrap_or("none"),
            g.text
        ),
        Ok(Reply::Ok(text)) => format!("{kind} +OK {text}"),
        Ok(Reply::Capabilities(caps)) => format!("{kind} +OK {}", caps.lines().join(" | ")),
        Ok(Reply::Stat(s)) => format!("{kind} +OK count={} octets={}", s.count, s.octets),
        Ok(Reply::ListOne(e)) => format!("{kind} +OK {}:{}", e.msg, e.octets),
        Ok(Reply::List(entries)) => {
            let items: Vec<String> = entries
                .iter()
                .map(|e| format!("{}:{}", e.msg, e.octets))
                .collect();
            format!("{kind} +OK ({}) {}", items.len(), items.join(" "))
        }
        Ok(Reply::UidlOne(e)) => format!("{kind} +OK {}:{}", e.msg, e.uid),
        Ok(Reply::Uidl(entries)) => {
            let items: Vec<String> = entries
                .iter()
                .map(|e| format!("{}:{}", e.msg, e.uid))
                .collect();
            format!("{kind} +OK ({}) {}", items.len(), items.join(" "))
        }
        Ok(Reply::Message(bytes)) => {
            format!(
                "{kind} +OK {} octets \"{}\"",
                bytes.len(),
                bytes.escape_ascii()
            )
        }
    };
    line.trim_end().to_owned()
}

/// The command a `C:` line stands for, so the test can check the core encodes
/// it back to the very same bytes.
fn parse_command(wire: &[u8], line: usize) -> Command {
    let text = std::str::from_utf8(wire).expect("C: lines are UTF-8");
    let text = text.strip_suffix("\r\n").unwrap_or(text);
    let (verb, arg) = text.split_once(' ').unwrap_or((text, ""));
    let num = |s: &str| -> u32 {
        s.parse()
            .unwrap_or_else(|_| panic!("line {line}: bad number {s:?}"))
    };
    let opt = |s: &str| (!s.is_empty()).then(|| num(s));
    match verb {
        "USER" => Command::User(arg.to_owned()),
        "PASS" => Command::Pass(Secret::new(arg.to_owned())),
        "CAPA" => Command::Capa,
        "STLS" => Command::Stls,
        "STAT" => Command::Stat,
        "LIST" => Command::List(opt(arg)),
        "UIDL" => Command::Uidl(opt(arg)),
        "RETR" => Command::Retr(num(arg)),
        "DELE" => Command::Dele(num(arg)),
        "TOP" => {
            let (msg, lines) = arg.split_once(' ').expect("TOP msg lines");
            Command::Top {
                msg: num(msg),
                lines: num(lines),
            }
        }
        "NOOP" => Command::Noop,
        "RSET" => Command::Rset,
        "QUIT" => Command::Quit,
        other => panic!("line {line}: unknown command {other:?}"),
    }
}

fn limits_of(transcript: &Transcript) -> Limits {
    let mut limits = Limits::default();
    for step in &transcript.steps {
        if let Step::Directive { key, value, line } = step
            && key == "limit"
        {
            let (name, n) = value.split_once(' ').expect("! limit <name> <value>");
            let n: usize = n.trim().parse().expect("limit value");
            match name {
                "max_line" => limits.max_line = n,
                "max_message_line" => limits.max_message_line = n,
                "max_response" => limits.max_response = n,
                "max_entries" => limits.max_entries = n,
                other => panic!("line {line}: unknown limit {other}"),
            }
        }
    }
    limits
}

fn expectations(transcript: &Transcript) -> Vec<String> {
    transcript
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Directive { key, value, .. } if key == "expect" => {
                Some(value.trim_end().to_owned())
            }
            _ => None,
        })
        .collect()
}

/// Replays in lock step: each command is sent when the transcript sends it.
fn replay(transcript: &Transcript, split: Split) -> Vec<String> {
    let name = transcript.path.display();
    let mut replay = Replay::new(limits_of(transcript), split);
    let mut from_server = Vec::new();
    for step in &transcript.steps {
        let Step::Bytes { side, bytes, line } = step else {
            continue;
        };
        match side {
            Side::Server => from_server.extend_from_slice(bytes),
            Side::Client => {
                replay.feed(&std::mem::take(&mut from_server));
                if replay.failed {
                    break;
                }
                let command = parse_command(bytes, *line);
                replay
                    .client
                    .send(&command)
                    .unwrap_or_else(|e| panic!("{name}:{line}: cannot send: {e}"));
                let sent = replay.take_sent();
                assert_eq!(
                    sent.escape_ascii().to_string(),
                    bytes.escape_ascii().to_string(),
                    "{name}:{line}: the core sent other bytes than the transcript"
                );
            }
        }
    }
    replay.feed(&from_server);
    replay.hang_up();
    replay.log
}

/// Replays with every command sent before the first server byte is read.
fn replay_pipelined(transcript: &Transcript) -> Vec<String> {
    let mut replay = Replay::new(limits_of(transcript), Split::Whole);
    for step in &transcript.steps {
        if let Step::Bytes {
            side: Side::Client,
            bytes,
            line,
        } = step
        {
            replay
                .client
                .send(&parse_command(bytes, *line))
                .expect("send");
        }
    }
    assert_eq!(replay.take_sent(), transcript.bytes_of(Side::Client));
    replay.feed(&transcript.bytes_of(Side::Server));
    replay.hang_up();
    replay.log
}

fn transcripts() -> Vec<Transcript> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let all = Transcript::load_dir(&dir).expect("transcripts load");
    assert!(
        all.len() >= 10,
        "expected the transcript files in {}",
        dir.display()
    );
    all
}

#[test]
fn every_transcript_gives_its_expected_responses_however_the_input_is_split() {
    let mut failures = Vec::new();
    for transcript in transcripts() {
        let name = transcript
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expected = expectations(&transcript);
        assert!(!expected.is_empty(), "{name} has no `! expect` line");
        let mut runs = vec![
            ("whole", replay(&transcript, Split::Whole)),
            ("bytewise", replay(&transcript, Split::Bytewise)),
            ("uneven", replay(&transcript, Split::Uneven)),
        ];
        if transcript.directive("pipeline").is_some() {
            runs.push(("pipelined", replay_pipelined(&transcript)));
        }
        for (how, got) in runs {
            if got != expected {
                failures.push(format!(
                    "{name} ({how}):\n  expected:\n    {}\n  got:\n    {}",
                    expected.join("\n    "),
                    got.join("\n    ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Hostile transcripts must end in an error, never in a panic or in silence.
#[test]
fn every_hostile_transcript_ends_in_an_error() {
    for transcript in transcripts() {
        let name = transcript
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("hostile_") {
            let log = replay(&transcript, Split::Whole);
            assert!(
                log.last().is_some_and(|l| l.starts_with("error: ")),
                "{name}: {log:?}"
            );
        }
    }
}

/// A multi-megabyte dot-stuffed message arrives intact, and the core's result
/// does not depend on the read size the driver happens to use.
#[test]
fn large_dot_stuffed_message_round_trips() {
    let mut message = Vec::new();
    let mut wire = b"+OK\r\n".to_vec();
    for i in 0..50_000 {
        let line = if i % 3 == 0 {
            format!(".line {i}")
        } else {
            format!("line {i} {}", "x".repeat(i % 90))
        };
        message.extend_from_slice(line.as_bytes());
        message.extend_from_slice(b"\r\n");
        if line.starts_with('.') {
            wire.push(b'.');
        }
        wire.extend_from_slice(line.as_bytes());
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b".\r\n");
    for chunk in [1usize, 3, 1024, 16 * 1024, wire.len()] {
        let mut client = Pop3Client::default();
        client.enqueue_input(b"+OK\r\n");
        assert!(matches!(client.next(), Ok(Progress::Event(_))));
        client.send(&Command::Retr(1)).expect("send");
        assert!(matches!(client.next(), Ok(Progress::Output(_))));
        let mut got = None;
        for piece in wire.chunks(chunk) {
            client.enqueue_input(piece);
            if let Progress::Event(r) = client.next().expect("no error") {
                got = Some(r);
            }
        }
        match got.map(|r| r.outcome) {
            Some(Ok(Reply::Message(bytes))) => assert!(bytes == message, "chunk {chunk}"),
            other => panic!("chunk {chunk}: {other:?}"),
        }
    }
}
