//! Arbitrary server bytes into the HTTP/1.1 client core.
//!
//! Each input is fed as the response to a GET (collected whole), to a HEAD,
//! and to a streamed GET (read piece by piece). The seeds are the server side
//! of `crates/protocols/http/tests/transcripts/`.
//!
//! Properties checked:
//!
//! * the core never panics, whatever the bytes;
//! * the response to one request (or the error) does not depend on how the
//!   input is split: whole, in two pieces, or (for short inputs) one byte at
//!   a time;
//! * a collected body never exceeds the limit.
//!
//! The input is also read as a run of kept-alive responses, a new request
//! sent after each; that checks only that nothing panics, because when the
//! next request goes out relative to a server's stray extra bytes depends on
//! how they were split (whole, the core refuses them as unsolicited; one byte
//! at a time, they start the next response), as it does on a real socket.
//!
//! The limits are small so that the fuzzer reaches the "too large" paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_http::{BodyEvent, HttpClient, Limits, Method, Progress, Request};

const LIMITS: Limits = Limits {
    max_head: 512,
    max_headers: 16,
    max_body: 4096,
    max_chunk_line: 64,
};

#[derive(Debug, Clone, Copy)]
enum State {
    Get,
    Head,
    Stream,
}

/// A response, a streamed body's pieces joined, or the error that ended it.
type Log = Vec<Result<String, String>>;

fn run(state: State, pieces: &[&[u8]], keep_alive: bool) -> Log {
    let mut client = HttpClient::new("fuzz.test", None, LIMITS);
    let mut log = Log::new();
    let mut streamed = Vec::new();
    let send = |client: &mut HttpClient| {
        let result = match state {
            State::Get => client.send(&Request::new(Method::Get, "/")),
            State::Head => client.send(&Request::new(Method::Head, "/")),
            State::Stream => client.send_streaming(&Request::new(Method::Get, "/events")),
        };
        let n = client.pending_output().len();
        client.consume_output(n);
        result
    };
    if send(&mut client).is_err() {
        return log;
    }
    // Returns false once the session is over.
    let mut drain = |client: &mut HttpClient, log: &mut Log| loop {
        let step = match state {
            State::Get | State::Head => client.next_response().map(|p| match p {
                Progress::Event(response) => {
                    assert!(response.body.len() <= LIMITS.max_body);
                    Some(format!("{:?}", response))
                }
                Progress::NeedMoreInput => None,
            }),
            State::Stream => client.next_event().map(|p| match p {
                Progress::Event(BodyEvent::Data(bytes)) => {
                    assert!(!bytes.is_empty());
                    streamed.extend_from_slice(&bytes);
                    Some(String::new())
                }
                Progress::Event(BodyEvent::End) => {
                    Some(format!("end {:?}", std::mem::take(&mut streamed)))
                }
                Progress::Event(head) => Some(format!("{head:?}")),
                Progress::NeedMoreInput => None,
            }),
        };
        match step {
            Ok(Some(line)) => {
                if !line.is_empty() {
                    let complete = !line.starts_with("Head(");
                    log.push(Ok(line));
                    if complete && keep_alive && !client.is_busy() && send(client).is_err() {
                        return false;
                    }
                }
            }
            Ok(None) => return true,
            Err(error) => {
                log.push(Err(error.to_string()));
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
    let hash = input.iter().fold(0usize, |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    let at = hash % (input.len() + 1);
    let (head, tail) = input.split_at(at);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    for state in [State::Get, State::Head, State::Stream] {
        let whole = run(state, &[input], false);
        assert_eq!(
            whole,
            run(state, &[head, tail], false),
            "{state:?}: split at {at}"
        );
        if input.len() <= 512 {
            assert_eq!(
                whole,
                run(state, &bytes, false),
                "{state:?}: one byte at a time"
            );
        }
        run(state, &[input], true);
        run(state, &[head, tail], true);
    }
});
