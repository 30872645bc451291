//! Arbitrary server bytes into the POP3 core, in every session state.
//!
//! Each input is fed to the core in several states: greeting awaited; the
//! RFC 1939 example session's commands pipelined behind the greeting; and,
//! after a canned greeting, RETR, TOP, LIST, UIDL or CAPA outstanding, a mixed
//! pipeline, or STLS. Because the input is raw server bytes (no selector byte),
//! the server side of a transcript is a good seed as it is.
//!
//! Properties checked:
//!
//! * the core never panics, whatever the bytes;
//! * the result does not depend on how the input is split: whole, in two
//!   pieces, or (for short inputs) one byte at a time give the same responses
//!   and the same error.
//!
//! The limits are small so that the fuzzer reaches the "too long" and "too
//! large" paths with short inputs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_pop3::{Command, Limits, Pop3Client, Progress, ProtocolError, Response, Secret};

const LIMITS: Limits = Limits {
    max_line: 128,
    max_message_line: 512,
    max_response: 16 * 1024,
    max_entries: 64,
};

#[derive(Debug, Clone, Copy)]
enum State {
    /// Nothing sent: the input starts with the greeting.
    Greeting,
    /// The RFC 1939 §10 session's commands, pipelined behind the greeting.
    Rfc1939Session,
    /// After the greeting, these commands outstanding.
    After(fn() -> Vec<Command>),
}

const STATES: &[State] = &[
    State::Greeting,
    State::Rfc1939Session,
    State::After(|| vec![Command::Retr(1)]),
    State::After(|| vec![Command::Top { msg: 1, lines: 10 }]),
    State::After(|| vec![Command::List(None)]),
    State::After(|| vec![Command::Uidl(None)]),
    State::After(|| vec![Command::Capa]),
    State::After(|| {
        vec![
            Command::Stat,
            Command::List(Some(1)),
            Command::Uidl(Some(1)),
            Command::Retr(1),
            Command::Uidl(None),
            Command::Dele(1),
            Command::Quit,
        ]
    }),
    State::After(|| vec![Command::Stls]),
];

fn start(state: State) -> Pop3Client {
    let mut client = Pop3Client::new(LIMITS);
    let commands: Vec<Command> = match state {
        State::Greeting => Vec::new(),
        State::Rfc1939Session => vec![
            Command::User("mrose".into()),
            Command::Pass(Secret::new("tanstaaf".into())),
            Command::Stat,
            Command::List(None),
            Command::Retr(1),
            Command::Dele(1),
            Command::Retr(2),
            Command::Dele(2),
            Command::Quit,
        ],
        State::After(commands) => {
            client.enqueue_input(b"+OK ready <1.2@host>\r\n");
            assert!(matches!(client.next(), Ok(Progress::Event(_))));
            commands()
        }
    };
    for command in &commands {
        assert!(client.send(command).is_ok());
    }
    client
}

/// Feeds the pieces in order, then EOF; returns every response and the error
/// that ended the session, if any.
fn run(state: State, pieces: &[&[u8]]) -> Vec<Result<Response, ProtocolError>> {
    let mut client = start(state);
    let mut log = Vec::new();
    let drain = |client: &mut Pop3Client, log: &mut Vec<_>| loop {
        match client.next() {
            // The commands' bytes; the same whatever the split.
            Ok(Progress::Output(_)) => {}
            Ok(Progress::Event(response)) => log.push(Ok(response)),
            Ok(Progress::NeedMoreInput) => return true,
            Err(error) => {
                log.push(Err(error));
                return false;
            }
        }
    };
    for piece in pieces {
        client.enqueue_input(piece);
        if !drain(&mut client, &mut log) {
            return log;
        }
    }
    client.input_closed();
    drain(&mut client, &mut log);
    log
}

fuzz_target!(|input: &[u8]| {
    // A split point that moves with the content, so the fuzzer explores it.
    let hash = input.iter().fold(0usize, |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    let at = hash % (input.len() + 1);
    let (head, tail) = input.split_at(at);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    for &state in STATES {
        let whole = run(state, &[input]);
        assert_eq!(whole, run(state, &[head, tail]), "{state:?}: split at {at}");
        if input.len() <= 512 {
            assert_eq!(whole, run(state, &bytes), "{state:?}: one byte at a time");
        }
    }
});
