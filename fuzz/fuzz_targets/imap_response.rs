//! Arbitrary server bytes fed to the IMAP core in several states: while
//! waiting for the greeting, after it with a FETCH outstanding, during IDLE,
//! and while an APPEND waits for its continuation. The core must return
//! errors, never panic, and never buffer past its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_imap::{BodySection, ClientCore, FetchItem, Limits, Progress, Request};

const GREETING: &[u8] = b"* OK [CAPABILITY IMAP4rev1 IDLE UIDPLUS MOVE SORT] ready\r\n";

fn drain(core: &mut ClientCore) {
    // Bounded: each call consumes input or returns NeedMoreInput/Err.
    for _ in 0..100_000 {
        match core.next() {
            Ok(Progress::NeedMoreInput) | Err(_) => return,
            Ok(Progress::Output(_) | Progress::Event(_)) => {}
        }
    }
}

fn feed(core: &mut ClientCore, data: &[u8], split: usize) {
    let split = split.min(data.len());
    core.enqueue_input(&data[..split]);
    drain(core);
    core.enqueue_input(&data[split..]);
    drain(core);
    core.input_closed();
    drain(core);
}

fn limits() -> Limits {
    Limits {
        max_line: 4096,
        max_literal: 64 * 1024,
        max_response: 128 * 1024,
        ..Limits::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let (state, split, data) = match data {
        [state, split, rest @ ..] => (*state % 4, usize::from(*split), rest),
        _ => return,
    };
    let mut core = ClientCore::new(limits());
    if state != 0 {
        core.enqueue_input(GREETING);
        drain(&mut core);
        let request = match state {
            1 => Request::Fetch {
                set: "1:*".into(),
                items: vec![
                    FetchItem::Uid,
                    FetchItem::Flags,
                    FetchItem::Envelope,
                    FetchItem::BodyStructure,
                    FetchItem::Body {
                        section: BodySection::Full,
                        peek: true,
                    },
                ],
                uid: true,
            },
            2 => Request::Idle,
            _ => Request::Append {
                mailbox: "INBOX".into(),
                flags: vec![],
                internal_date: None,
                message: b"Subject: x\r\n\r\nbody".to_vec(),
            },
        };
        if core.send(&request).is_err() {
            return;
        }
        drain(&mut core);
        if state == 2 {
            core.enqueue_input(b"+ idling\r\n");
            drain(&mut core);
        }
    }
    feed(&mut core, data, split);
});
