//! Arbitrary bytes into the EventSource (text/event-stream) parser and JMAP's
//! push events.
//!
//! The seeds (the server side of `crates/protocols/jmap/tests/transcripts/`)
//! include HTTP heads; the parser takes them as field lines it ignores, which
//! is fine for exploring it.
//!
//! Properties checked:
//!
//! * nothing panics;
//! * the events do not depend on how the input is split: whole, in two
//!   pieces, or (for short inputs) one byte at a time;
//! * no event's data exceeds the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_jmap::eventsource::push_event;
use peakhour_jmap::{EventStreamParser, ServerEvent, StreamLimits};

const LIMITS: StreamLimits = StreamLimits {
    max_line: 128,
    max_event: 512,
};

fn run(pieces: &[&[u8]]) -> (Vec<ServerEvent>, Option<String>) {
    let mut parser = EventStreamParser::new(LIMITS);
    let mut events = Vec::new();
    for piece in pieces {
        parser.enqueue_input(piece);
        loop {
            match parser.next_event() {
                Ok(Some(event)) => {
                    assert!(event.data.len() <= LIMITS.max_event);
                    let _ = push_event(&event);
                    events.push(event);
                }
                Ok(None) => break,
                Err(error) => return (events, Some(error.to_string())),
            }
        }
    }
    (events, None)
}

fuzz_target!(|input: &[u8]| {
    let hash = input.iter().fold(0usize, |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    let at = hash % (input.len() + 1);
    let (head, tail) = input.split_at(at);
    let whole = run(&[input]);
    assert_eq!(whole, run(&[head, tail]), "split at {at}");
    if input.len() <= 512 {
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(whole, run(&bytes), "one byte at a time");
    }
});
