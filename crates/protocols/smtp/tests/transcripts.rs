//! Replays every C:/S: transcript in `tests/transcripts/` against the
//! sans-I/O [`Session`].
//!
//! `S:` bytes are fed to the session; `C:` bytes must be exactly what it sent,
//! in order, with nothing left over at the end. Directives drive it:
//!
//! * `! flavor lmtp` — LMTP instead of SMTP (read before the first step);
//! * `! ehlo DOMAIN`, `! helo DOMAIN`, `! starttls`, `! tls` (handshake
//!   done), `! auth-plain USER PASS`, `! auth-login USER PASS`, `! rset`,
//!   `! noop`, `! quit` — start an operation;
//! * `! body TEXT` — append `TEXT` (with transcript escapes) to the message;
//!   `! send FROM RCPT...` — start a transaction with it (`<>` is the null
//!   sender);
//! * `! eof` — the server closes the connection;
//! * `! whole-only REASON` — skip the byte-at-a-time run, for checks that
//!   depend on bytes arriving in one read;
//! * `! expect SUMMARY` — the oldest unchecked thing the session reported
//!   (a completion or an error, see [`summary`]) must read `SUMMARY`. Every
//!   report must be expected.
//!
//! Each transcript runs twice: with each `S:` step fed whole, and one byte at a
//! time. Both runs must pass and report the same things.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::Path;

use peakhour_net::Secret;
use peakhour_net::transcript::{Side, Step, Transcript};
use peakhour_smtp::{
    Completion, Extensions, Flavor, Progress, Reply, Session, SmtpError, TransactionOutcome,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feed {
    Whole,
    ByteAtATime,
}

struct Replay {
    session: Session,
    feed: Feed,
    /// Bytes the session sent that no `C:` step has matched yet.
    sent: Vec<u8>,
    /// Reports not yet matched by `! expect`.
    unchecked: VecDeque<String>,
    /// Everything reported, to compare the two feeds.
    all_reports: Vec<String>,
    /// Stop pumping after an error until the next operation starts; a broken
    /// session would otherwise report the same error for every byte.
    halted: bool,
    body: Vec<u8>,
}

impl Replay {
    fn report(&mut self, line: String) {
        self.unchecked.push_back(line.clone());
        self.all_reports.push(line);
    }

    fn pump(&mut self) {
        while !self.halted {
            match self.session.next() {
                Ok(Progress::Output(bytes)) => self.sent.extend(bytes),
                Ok(Progress::NeedMoreInput) => return,
                Ok(Progress::Event(completion)) => self.report(summary(&completion)),
                Err(error) => {
                    self.report(error_summary(&error));
                    self.halted = true;
                }
            }
        }
    }

    fn start(&mut self, started: Result<(), SmtpError>) {
        self.halted = false;
        match started {
            Ok(()) => self.pump(),
            Err(error) => self.report(error_summary(&error)),
        }
    }
}

fn code(reply: &Reply) -> String {
    match reply.enhanced() {
        Some(enhanced) => format!("{}({enhanced})", reply.code()),
        None => reply.code().to_string(),
    }
}

fn extensions_summary(e: &Extensions) -> String {
    let mut out = format!("hello {}", e.server);
    let flags = [
        (e.pipelining, "pipelining"),
        (e.starttls, "starttls"),
        (e.eight_bit_mime, "8bitmime"),
        (e.enhanced_status_codes, "enhancedstatuscodes"),
        (e.smtputf8, "smtputf8"),
        (e.chunking, "chunking"),
        (e.binary_mime, "binarymime"),
        (e.dsn, "dsn"),
    ];
    for (on, name) in flags {
        if on {
            let _ = write!(out, " {name}");
        }
    }
    if let Some(size) = e.size {
        let _ = write!(out, " size={size}");
    }
    if !e.auth.is_empty() {
        let _ = write!(out, " auth={}", e.auth.join(","));
    }
    out
}

fn outcome_summary(o: &TransactionOutcome) -> String {
    let mut out = String::from("sent");
    if o.pipelined {
        out.push_str(" pipelined");
    }
    let _ = write!(out, " mail={}", code(&o.mail.value));
    let rcpts: Vec<String> = o
        .recipients
        .iter()
        .map(|r| format!("{}:{}", r.address, code(&r.rcpt.value)))
        .collect();
    let _ = write!(out, " rcpt={}", rcpts.join(","));
    if let Some(data) = &o.data {
        let _ = write!(out, " data={}", code(&data.value));
    }
    if let Some(message) = &o.message {
        let _ = write!(out, " message={}", code(&message.value));
    }
    let delivered: Vec<String> = o
        .recipients
        .iter()
        .filter_map(|r| {
            let delivery = r.delivery.as_ref()?;
            Some(format!("{}:{}", r.address, code(&delivery.value)))
        })
        .collect();
    if !delivered.is_empty() {
        let _ = write!(out, " delivery={}", delivered.join(","));
    }
    if let Some(reset) = &o.reset {
        let _ = write!(out, " reset={}", code(&reset.value));
    }
    out
}

/// One line per completion, as `! expect` writes it.
fn summary(completion: &Completion) -> String {
    match completion {
        Completion::Greeting(reply) => format!("greeting {}", code(reply)),
        Completion::Hello(extensions) => extensions_summary(extensions),
        Completion::StartTls => "starttls".into(),
        Completion::Authenticated(reply) => format!("authenticated {}", code(reply)),
        Completion::Transaction(outcome) => outcome_summary(outcome),
        Completion::Reply(reply) => format!("reply {}", code(reply)),
        Completion::Quit(reply) => format!("quit {}", code(reply)),
    }
}

fn error_summary(error: &SmtpError) -> String {
    format!("error {}", error.kind())
}

/// Resolves the transcript escapes in a directive's value.
fn unescape(text: &str) -> Vec<u8> {
    let parsed = Transcript::parse(Path::new("directive"), &format!("C| {text}"))
        .unwrap_or_else(|e| panic!("bad escape in directive {text:?}: {e}"));
    parsed.bytes_of(Side::Client)
}

fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn credentials(value: &str) -> (String, Secret<String>) {
    let (user, password) = value.split_once(' ').unwrap_or((value, ""));
    (user.to_owned(), Secret::new(password.to_owned()))
}

/// Replays one transcript; returns every report, or why it failed.
fn replay(transcript: &Transcript, feed: Feed) -> Result<Vec<String>, String> {
    let flavor = match transcript.directive("flavor") {
        Some("lmtp") => Flavor::Lmtp,
        Some("smtp") | None => Flavor::Smtp,
        Some(other) => return Err(format!("unknown flavor {other:?}")),
    };
    let mut replay = Replay {
        session: Session::new(flavor),
        feed,
        sent: Vec::new(),
        unchecked: VecDeque::new(),
        all_reports: Vec::new(),
        halted: false,
        body: Vec::new(),
    };
    for step in &transcript.steps {
        match step {
            Step::Bytes {
                side: Side::Server,
                bytes,
                ..
            } => match replay.feed {
                Feed::Whole => {
                    replay.session.enqueue_input(bytes);
                    replay.pump();
                }
                Feed::ByteAtATime => {
                    for byte in bytes {
                        replay.session.enqueue_input(&[*byte]);
                        replay.pump();
                    }
                }
            },
            Step::Bytes {
                side: Side::Client,
                bytes,
                line,
            } => {
                if !replay.sent.starts_with(bytes) {
                    let shown = &replay.sent[..replay.sent.len().min(bytes.len() + 40)];
                    return Err(format!(
                        "line {line}: expected the client to send \"{}\", it sent \"{}\"",
                        escaped(bytes),
                        escaped(shown)
                    ));
                }
                replay.sent.drain(..bytes.len());
            }
            Step::Directive { key, value, line } => {
                let session = &mut replay.session;
                let started = match key.as_str() {
                    "flavor" | "whole-only" => continue,
                    "body" => {
                        replay.body.extend(unescape(value));
                        continue;
                    }
                    "eof" => {
                        session.input_closed();
                        replay.pump();
                        continue;
                    }
                    "expect" => {
                        let Some(report) = replay.unchecked.pop_front() else {
                            return Err(format!(
                                "line {line}: expected `{value}`, nothing was reported"
                            ));
                        };
                        if report != *value {
                            return Err(format!("line {line}: expected `{value}`, got `{report}`"));
                        }
                        continue;
                    }
                    "ehlo" => session.ehlo(value),
                    "helo" => session.helo(value),
                    "starttls" => session.starttls(),
                    "tls" => session.tls_established(),
                    "auth-plain" => {
                        let (user, password) = credentials(value);
                        session.auth_plain(&user, &password)
                    }
                    "auth-login" => {
                        let (user, password) = credentials(value);
                        session.auth_login(&user, &password)
                    }
                    "send" => {
                        let mut words = value.split(' ');
                        let from = match words.next() {
                            Some("<>") | None => "",
                            Some(from) => from,
                        };
                        let rcpts: Vec<String> = words.map(str::to_owned).collect();
                        let body = std::mem::take(&mut replay.body);
                        session.send_mail(from, &rcpts, &body)
                    }
                    "rset" => session.rset(),
                    "noop" => session.noop(),
                    "quit" => session.quit(),
                    other => return Err(format!("line {line}: unknown directive `{other}`")),
                };
                replay.start(started);
            }
        }
    }
    if !replay.sent.is_empty() {
        return Err(format!(
            "the client sent more than the transcript shows: \"{}\"",
            escaped(&replay.sent)
        ));
    }
    if let Some(report) = replay.unchecked.front() {
        return Err(format!(
            "unexpected report `{report}` (add `! expect {report}`)"
        ));
    }
    Ok(replay.all_reports)
}

#[test]
fn transcripts_replay_whole_and_byte_at_a_time() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let transcripts = Transcript::load_dir(&dir).expect("transcripts load");
    assert!(
        transcripts.len() >= 20,
        "only {} transcripts",
        transcripts.len()
    );
    let mut failures = Vec::new();
    for transcript in &transcripts {
        let name = transcript.path.display();
        let whole = replay(transcript, Feed::Whole);
        let bytewise = match transcript.directive("whole-only") {
            Some(_) => whole.clone(),
            None => replay(transcript, Feed::ByteAtATime),
        };
        match (whole, bytewise) {
            (Ok(whole), Ok(bytewise)) if whole != bytewise => failures.push(format!(
                "{name}: whole and byte-at-a-time differ: {whole:?} vs {bytewise:?}"
            )),
            (Ok(_), Ok(_)) => {}
            (Err(e), _) => failures.push(format!("{name} (whole): {e}")),
            (_, Err(e)) => failures.push(format!("{name} (byte at a time): {e}")),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The server bytes of every transcript, split at every point into two reads,
/// must never panic the session, whatever state it is in.
#[test]
fn any_split_of_server_bytes_is_harmless() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    for transcript in Transcript::load_dir(&dir).expect("transcripts load") {
        let server = transcript.bytes_of(Side::Server);
        for cut in (0..server.len()).step_by(7) {
            let mut session = Session::new(Flavor::Smtp);
            for part in [&server[..cut], &server[cut..]] {
                session.enqueue_input(part);
                while let Ok(Progress::Output(_) | Progress::Event(_)) = session.next() {}
            }
        }
    }
}
