//! Arbitrary server bytes fed to the IMAP core while a LIST, SEARCH,
//! STATUS or THREAD is in flight (the responses whose untagged data the
//! core collects: mailbox lists with their flags and delimiters, number
//! lists, status items, nested thread parentheses). Errors, never panics,
//! and never more collected than the limits allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_imap::{ClientCore, Limits, Progress, Request, SearchKey, StatusItem, ThreadAlgorithm};

const GREETING: &[u8] = b"* OK [CAPABILITY IMAP4rev1 IDLE UIDPLUS MOVE SORT THREAD=REFERENCES] ready\r\n";

fn drain(core: &mut ClientCore) {
    // Bounded: each call consumes input or returns NeedMoreInput/Err.
    for _ in 0..100_000 {
        match core.next() {
            Ok(Progress::NeedMoreInput) | Err(_) => return,
            Ok(Progress::Output(_) | Progress::Event(_)) => {}
        }
    }
}

fn limits() -> Limits {
    Limits {
        max_line: 4096,
        max_literal: 64 * 1024,
        max_response: 128 * 1024,
        max_collected_bytes: 256 * 1024,
        max_collected_responses: 1_000,
    }
}

fuzz_target!(|data: &[u8]| {
    let (command, split, data) = match data {
        [command, split, rest @ ..] => (*command % 4, usize::from(*split), rest),
        _ => return,
    };
    let request = match command {
        0 => Request::List {
            reference: String::new(),
            pattern: "*".into(),
        },
        1 => Request::Search {
            criteria: SearchKey::Unseen,
            uid: true,
        },
        2 => Request::Status {
            mailbox: "INBOX".into(),
            items: vec![
                StatusItem::Messages,
                StatusItem::UidNext,
                StatusItem::UidValidity,
                StatusItem::Unseen,
            ],
        },
        _ => Request::Thread {
            algorithm: ThreadAlgorithm::References,
            criteria: SearchKey::All,
            uid: true,
        },
    };
    let mut core = ClientCore::new(limits());
    core.enqueue_input(GREETING);
    drain(&mut core);
    if core.send(&request).is_err() {
        return;
    }
    drain(&mut core);
    let split = split.min(data.len());
    core.enqueue_input(&data[..split]);
    drain(&mut core);
    core.enqueue_input(&data[split..]);
    drain(&mut core);
    core.input_closed();
    drain(&mut core);
});
