//! Arbitrary server bytes must never panic the SMTP reply parser or the client
//! core, whatever state the core is in.
//!
//! The first byte picks a scenario (the core waiting for the greeting, for
//! EHLO, mid-transaction pipelined or lock-step, SMTP or LMTP, mid AUTH
//! LOGIN); the second picks how to cut the rest into reads. The rest is fed to
//! the stateless parser and then to the core.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_smtp::{DecodeError, Flavor, Progress, Secret, Session, decode_reply};

/// Runs the session until it needs input; false once it errs, or once no
/// operation runs (an idle session needs input but will parse none of it).
fn pump(session: &mut Session) -> bool {
    loop {
        match session.next() {
            Ok(Progress::Output(_) | Progress::Event(_)) => {}
            Ok(Progress::NeedMoreInput) => return !session.is_idle(),
            Err(_) => return false,
        }
    }
}

fn feed(session: &mut Session, bytes: &[u8]) -> bool {
    session.enqueue_input(bytes);
    pump(session)
}

/// A session brought to the state `scenario` names with well-formed replies.
fn prepared(scenario: u8) -> Session {
    let flavor = if scenario & 1 == 0 {
        Flavor::Smtp
    } else {
        Flavor::Lmtp
    };
    let mut session = Session::new(flavor);
    let stage = (scenario >> 1) % 5;
    if stage == 0 {
        return session;
    }
    feed(&mut session, b"220 ready\r\n");
    if session.ehlo("fuzz.test").is_err() || !pump(&mut session) {
        return session;
    }
    if stage == 1 {
        return session;
    }
    let caps: &[u8] = if stage == 2 {
        b"250-mx\r\n250-PIPELINING\r\n250-SIZE 100\r\n250 8BITMIME\r\n"
    } else {
        b"250-mx\r\n250 AUTH LOGIN\r\n"
    };
    feed(&mut session, caps);
    let recipients = ["a@x".to_owned(), "b@x".to_owned(), "c@x".to_owned()];
    let started = match stage {
        2 | 3 => session.send_mail("f@x", &recipients, b"hi\r\n.\r\n"),
        _ => session.auth_login("user", &Secret::new("pw".to_owned())),
    };
    if started.is_ok() {
        pump(&mut session);
    }
    if stage == 3 {
        // Lock-step, past MAIL: the fuzz input answers the RCPTs onwards.
        feed(&mut session, b"250 ok\r\n");
    }
    session
}

fuzz_target!(|data: &[u8]| {
    let [scenario, cut, input @ ..] = data else {
        return;
    };

    // The stateless parser: replies one after another until it stops.
    let mut rest = input;
    loop {
        match decode_reply(rest) {
            Ok((after, _reply)) => {
                assert!(after.len() < rest.len(), "a reply consumed no byte");
                rest = after;
            }
            Err(DecodeError::Incomplete | DecodeError::Malformed(_)) => break,
        }
    }

    // The core, fed in reads of `cut` bytes (at least one), then closed.
    let mut session = prepared(*scenario);
    let chunk = usize::from(*cut).max(1);
    for part in input.chunks(chunk) {
        if !feed(&mut session, part) {
            break;
        }
    }
    session.input_closed();
    pump(&mut session);
});
