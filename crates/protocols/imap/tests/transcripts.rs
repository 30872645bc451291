//! Replays every `tests/transcripts/*.txt` against the sans-I/O core: server
//! bytes go in, and the client must write exactly the `C:` bytes, in order,
//! each before the server's next reply. Every transcript runs twice, with
//! server bytes fed whole and one byte at a time; both runs must agree.
//!
//! Directives (`! key value`):
//! * `! limit max_line N`, `! limit max_literal N`: core limits (put first);
//! * `! send <command>`: queue a command (see `parse_request`); queued
//!   commands start one after the other as each completes;
//! * `! move <set> <mailbox>` / `! uid-move ...`: MOVE or its fallback;
//! * `! idle-done`: end IDLE;  `! eof`: the server closes the connection;
//! * `! event <text>`: some event so far (Debug form) contains `text`;
//! * `! last <text>`: the latest event contains `text`;
//! * `! mailbox <text>`: the tracked mailbox state contains `text`;
//! * `! expect-error <kind>`: the run ends with a fatal error of that kind.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::VecDeque;
use std::path::Path;

use peakhour_imap::{
    BodySection, ClientCore, Event, FetchItem, ImapError, Limits, Progress, Request, SearchKey,
    SortCriterion, SortKey, StatusItem, StoreMode, ThreadAlgorithm,
};
use peakhour_net::Secret;
use peakhour_net::transcript::{Side, Step, Transcript};

#[derive(Debug, Default)]
struct Run {
    written: Vec<u8>,
    log: Vec<String>,
    /// The fatal error's message; not compared between runs, because its
    /// excerpt shows however many bytes had arrived when a limit broke.
    error: Option<String>,
}

impl PartialEq for Run {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
            && self.log == other.log
            && self.error.is_some() == other.error.is_some()
    }
}

struct Runner {
    core: ClientCore,
    greeted: bool,
    queue: VecDeque<Request>,
    run: Run,
    error_kind: Option<&'static str>,
}

impl Runner {
    fn pump(&mut self) {
        loop {
            if self.error_kind.is_some() {
                return;
            }
            if self.greeted
                && !self.core.is_busy()
                && let Some(request) = self.queue.pop_front()
            {
                if let Err(e) = self.core.send(&request) {
                    self.run.log.push(format!("send-error: {}", e.kind()));
                }
                continue;
            }
            match self.core.next() {
                Ok(Progress::Output(bytes)) => self.run.written.extend_from_slice(&bytes),
                Ok(Progress::Event(event)) => {
                    if matches!(event, Event::Greeting { .. }) {
                        self.greeted = true;
                    }
                    self.run.log.push(format!("{event:?}"));
                }
                Ok(Progress::NeedMoreInput) => return,
                Err(error) => self.fail(error),
            }
        }
    }

    fn fail(&mut self, error: ImapError) {
        self.error_kind = Some(error.kind());
        self.run.error = Some(error.to_string());
    }
}

fn limits_of(transcript: &Transcript) -> Limits {
    let mut limits = Limits::default();
    for step in &transcript.steps {
        if let Step::Directive { key, value, .. } = step
            && key == "limit"
        {
            let (name, n) = value.split_once(' ').expect("limit name value");
            let n: u64 = n.parse().expect("limit value");
            match name {
                "max_line" => limits.max_line = n as usize,
                "max_literal" => limits.max_literal = n,
                other => panic!("unknown limit {other}"),
            }
        }
    }
    limits
}

fn replay(transcript: &Transcript, byte_at_a_time: bool) -> Run {
    let name = transcript.path.display();
    let mut runner = Runner {
        core: ClientCore::new(limits_of(transcript)),
        greeted: false,
        queue: VecDeque::new(),
        run: Run::default(),
        error_kind: None,
    };
    let mut expected = Vec::new();
    let mut expected_error = None;
    for step in &transcript.steps {
        match step {
            Step::Bytes {
                side: Side::Client,
                bytes,
                ..
            } => expected.extend_from_slice(bytes),
            Step::Bytes {
                side: Side::Server,
                bytes,
                line,
            } => {
                runner.pump();
                assert_eq!(
                    String::from_utf8_lossy(&runner.run.written),
                    String::from_utf8_lossy(&expected),
                    "{name}:{line}: client bytes before this server line"
                );
                if byte_at_a_time {
                    for byte in bytes {
                        runner.core.enqueue_input(std::slice::from_ref(byte));
                        runner.pump();
                    }
                } else {
                    runner.core.enqueue_input(bytes);
                    runner.pump();
                }
            }
            Step::Directive { key, value, line } => {
                runner.pump();
                let last = runner.run.log.last().cloned().unwrap_or_default();
                match key.as_str() {
                    "limit" => {}
                    "send" => runner.queue.push_back(parse_request(value)),
                    "move" | "uid-move" => {
                        let (set, mailbox) = value.split_once(' ').expect("set mailbox");
                        let requests = Request::move_messages(
                            runner.core.capabilities(),
                            set,
                            mailbox,
                            key == "uid-move",
                        );
                        runner.queue.extend(requests);
                    }
                    "idle-done" => runner.core.idle_done(),
                    "eof" => {
                        runner.core.input_closed();
                        runner.pump();
                    }
                    "event" => assert!(
                        runner.run.log.iter().any(|e| e.contains(value.as_str())),
                        "{name}:{line}: no event contains {value:?}; events: {:#?}",
                        runner.run.log
                    ),
                    "last" => assert!(
                        last.contains(value.as_str()),
                        "{name}:{line}: last event {last:?} lacks {value:?}"
                    ),
                    "mailbox" => {
                        let state = format!("{:?}", runner.core.mailbox());
                        assert!(
                            state.contains(value.as_str()),
                            "{name}:{line}: mailbox {state} lacks {value:?}"
                        );
                    }
                    "expect-error" => expected_error = Some(value.clone()),
                    other => panic!("{name}:{line}: unknown directive {other}"),
                }
                runner.pump();
            }
        }
    }
    runner.pump();
    assert_eq!(
        String::from_utf8_lossy(&runner.run.written),
        String::from_utf8_lossy(&expected),
        "{name}: all client bytes"
    );
    match (&expected_error, runner.error_kind) {
        (Some(want), Some(got)) => assert_eq!(want, got, "{name}: {:?}", runner.run.error),
        (Some(want), None) => panic!("{name}: expected a {want} error, got none"),
        (None, Some(_)) => panic!("{name}: unexpected error {:?}", runner.run.error),
        (None, None) => {}
    }
    runner.run
}

/// `! send` syntax: a command name, then space-separated arguments; `\r\n`
/// in an APPEND body stands for CRLF.
fn parse_request(spec: &str) -> Request {
    let words: Vec<&str> = spec.split(' ').collect();
    let arg = |i: usize| words.get(i).copied().unwrap_or("").to_owned();
    let rest = |i: usize| words.get(i..).map(|w| w.join(" ")).unwrap_or_default();
    let (uid, command) = match words[0].strip_prefix("uid-") {
        Some(command) => (true, command),
        None => (false, words[0]),
    };
    match command {
        "capability" => Request::Capability,
        "noop" => Request::Noop,
        "logout" => Request::Logout,
        "starttls" => Request::StartTls,
        "idle" => Request::Idle,
        "namespace" => Request::Namespace,
        "expunge" if uid => Request::UidExpunge(arg(1)),
        "expunge" => Request::Expunge,
        "id" => Request::Id(vec![(arg(1), arg(2))]),
        "login" => Request::Login {
            username: arg(1),
            password: Secret::new(arg(2)),
        },
        "authenticate" => Request::AuthenticatePlain {
            username: arg(1),
            password: Secret::new(arg(2)),
        },
        "list" => Request::List {
            reference: arg(1).trim_matches('"').to_owned(),
            pattern: arg(2),
        },
        "create" => Request::Create(arg(1)),
        "select" => Request::Select(arg(1)),
        "examine" => Request::Examine(arg(1)),
        "status" => Request::Status {
            mailbox: arg(1),
            items: vec![
                StatusItem::Messages,
                StatusItem::UidNext,
                StatusItem::Unseen,
            ],
        },
        "fetch" => Request::Fetch {
            set: arg(1),
            items: arg(2).split(',').map(fetch_item).collect(),
            uid,
        },
        "store" => Request::Store {
            set: arg(1),
            mode: match arg(2).trim_end_matches(".silent") {
                "+flags" => StoreMode::Add,
                "-flags" => StoreMode::Remove,
                _ => StoreMode::Replace,
            },
            silent: arg(2).ends_with(".silent"),
            flags: words[3..].iter().map(|w| (*w).to_owned()).collect(),
            uid,
        },
        "copy" => Request::Copy {
            set: arg(1),
            mailbox: arg(2),
            uid,
        },
        "append" => Request::Append {
            mailbox: arg(1),
            flags: arg(2)
                .split(',')
                .filter(|f| !f.is_empty() && *f != "-")
                .map(str::to_owned)
                .collect(),
            internal_date: None,
            message: rest(3).replace("\\r\\n", "\r\n").into_bytes(),
        },
        // Messages separated by ` | `.
        "multiappend" => Request::MultiAppend {
            mailbox: arg(1),
            flags: arg(2)
                .split(',')
                .filter(|f| !f.is_empty() && *f != "-")
                .map(str::to_owned)
                .collect(),
            messages: rest(3)
                .split(" | ")
                .map(|m| m.replace("\\r\\n", "\r\n").into_bytes())
                .collect(),
        },
        "search" => Request::Search {
            criteria: search_key(&words[1..]),
            uid,
        },
        "sort" => Request::Sort {
            by: vec![SortCriterion {
                key: SortKey::Date,
                reverse: true,
            }],
            criteria: search_key(&words[1..]),
            uid,
        },
        "thread" => Request::Thread {
            algorithm: ThreadAlgorithm::References,
            criteria: search_key(&words[1..]),
            uid,
        },
        other => panic!("unknown command in ! send: {other}"),
    }
}

fn fetch_item(name: &str) -> FetchItem {
    match name {
        "uid" => FetchItem::Uid,
        "flags" => FetchItem::Flags,
        "envelope" => FetchItem::Envelope,
        "bodystructure" => FetchItem::BodyStructure,
        "size" => FetchItem::Size,
        "internaldate" => FetchItem::InternalDate,
        "body[]" => FetchItem::Body {
            section: BodySection::Full,
            peek: false,
        },
        "body.peek[]" => FetchItem::Body {
            section: BodySection::Full,
            peek: true,
        },
        "body[header]" => FetchItem::Body {
            section: BodySection::Header,
            peek: false,
        },
        "body.peek[header.fields]" => FetchItem::Body {
            section: BodySection::HeaderFields(vec!["Subject".into(), "Message-ID".into()]),
            peek: true,
        },
        "body[1]" => FetchItem::Body {
            section: BodySection::Part(vec![1]),
            peek: false,
        },
        other => panic!("unknown fetch item {other}"),
    }
}

fn search_key(words: &[&str]) -> SearchKey {
    match words {
        ["all"] => SearchKey::All,
        ["unseen"] => SearchKey::Unseen,
        ["header", name, value] => SearchKey::Header((*name).into(), (*value).into()),
        ["uid", set] => SearchKey::Uid((*set).into()),
        ["unseen", "uid", set] => {
            SearchKey::And(vec![SearchKey::Unseen, SearchKey::Uid((*set).into())])
        }
        other => panic!("unknown search {other:?}"),
    }
}

fn transcripts() -> Vec<Transcript> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
    let all = Transcript::load_dir(&dir).expect("transcripts load");
    assert!(
        all.len() >= 10,
        "transcripts missing from {}",
        dir.display()
    );
    all
}

#[test]
fn every_transcript_replays_with_server_bytes_fed_whole() {
    for transcript in transcripts() {
        replay(&transcript, false);
    }
}

#[test]
fn feeding_server_bytes_one_at_a_time_gives_the_same_events() {
    for transcript in transcripts() {
        let whole = replay(&transcript, false);
        let bytewise = replay(&transcript, true);
        assert_eq!(whole, bytewise, "{}", transcript.path.display());
        // The error kinds were already checked against `! expect-error`.
    }
}

#[test]
fn server_bytes_of_every_transcript_never_panic_in_any_split() {
    // The same bytes cut at every position and fed to fresh cores: a parser
    // that mishandles a boundary would panic or disagree here.
    for transcript in transcripts() {
        let server = transcript.bytes_of(Side::Server);
        for cut in (0..server.len()).step_by(7) {
            let mut core = ClientCore::new(Limits::default());
            core.enqueue_input(&server[..cut]);
            while let Ok(Progress::Event(_) | Progress::Output(_)) = core.next() {}
            core.enqueue_input(&server[cut..]);
            while let Ok(Progress::Event(_) | Progress::Output(_)) = core.next() {}
        }
    }
}
