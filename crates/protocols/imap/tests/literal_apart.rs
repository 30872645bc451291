//! Issue 16: a FETCH whose only literal is a large message body is decoded
//! with that literal left out (imap-codec checks each byte of a literal for
//! NUL, 4% of the generator's CPU), and the body's bytes are put back. These
//! tests feed such responses, and the ones that must not take that path,
//! through the core and check that what comes out is what the server sent,
//! whether the bytes arrive whole or one at a time.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use peakhour_imap::{
    BodySection, ClientCore, Event, FetchItem, FetchedMessage, ImapError, Limits, Progress, Reply,
    Request,
};

/// A core past the greeting, with a UID FETCH of `items` in flight.
fn fetching(items: Vec<FetchItem>) -> ClientCore {
    let mut core = ClientCore::new(Limits::default());
    core.enqueue_input(b"* OK [CAPABILITY IMAP4rev1 IDLE] ready\r\n");
    assert!(matches!(
        core.next().unwrap(),
        Progress::Event(Event::Greeting { .. })
    ));
    core.send(&Request::Fetch {
        set: "7".into(),
        items,
        uid: true,
    })
    .unwrap();
    assert!(matches!(core.next().unwrap(), Progress::Output(_)));
    core
}

fn body_items() -> Vec<FetchItem> {
    vec![FetchItem::Body {
        section: BodySection::Full,
        peek: false,
    }]
}

/// Feeds `server` (whole, or a byte at a time) and returns the FETCH's reply.
fn fetched(
    items: Vec<FetchItem>,
    server: &[u8],
    bytewise: bool,
) -> Result<Vec<FetchedMessage>, ImapError> {
    let mut core = fetching(items);
    let chunks: Vec<&[u8]> = if bytewise {
        server.chunks(1).collect()
    } else {
        vec![server]
    };
    for chunk in chunks {
        core.enqueue_input(chunk);
        match core.next()? {
            Progress::NeedMoreInput => {}
            Progress::Event(Event::Completed {
                reply: Reply::Fetch(messages),
                ..
            }) => return Ok(messages),
            Progress::Event(other) => panic!("unexpected {other:?}"),
            Progress::Output(bytes) => panic!("unexpected write {bytes:?}"),
        }
    }
    panic!("no completion")
}

fn both_ways(items: Vec<FetchItem>, server: &[u8]) -> Result<Vec<FetchedMessage>, ImapError> {
    let whole = fetched(items.clone(), server, false);
    let bytewise = fetched(items, server, true);
    match (&whole, &bytewise) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "whole and byte-at-a-time disagree"),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind()),
        _ => panic!("whole {whole:?}, byte at a time {bytewise:?}"),
    }
    whole
}

/// A body of `len` bytes with CRLFs, braces and things that look like IMAP.
fn body(len: usize) -> Vec<u8> {
    let pattern = b"Line {0}\r\n) A0001 OK fake\r\n* 1 EXISTS\r\n\xc3\xa9{12}\r\n";
    pattern.iter().copied().cycle().take(len).collect()
}

fn response(prefix: &str, body: &[u8], suffix: &str) -> Vec<u8> {
    let mut out = format!("{prefix}{{{}}}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(suffix.as_bytes());
    out.extend_from_slice(b"A0001 OK done\r\n");
    out
}

#[test]
fn issue_16_a_large_body_comes_out_as_the_server_sent_it() {
    for len in [0, 1, 255, 256, 257, 4096, 70_000] {
        let body = body(len);
        let server = response("* 3 FETCH (UID 7 BODY[] ", &body, " FLAGS (\\Seen))\r\n");
        let messages = both_ways(body_items(), &server).unwrap();
        assert_eq!(messages.len(), 1, "{len}");
        let message = &messages[0];
        assert_eq!(message.seq, 3);
        assert_eq!(message.uid, Some(7));
        assert_eq!(message.flags, Some(vec!["\\Seen".to_owned()]));
        assert_eq!(
            message.section(&BodySection::Full),
            Some(body.as_slice()),
            "{len}"
        );
    }
}

#[test]
fn issue_16_rfc822_and_a_section_with_an_origin_come_out_whole_too() {
    let body = body(1000);
    let server = response("* 3 FETCH (RFC822 ", &body, ")\r\n");
    let messages = both_ways(vec![FetchItem::Uid], &server).unwrap();
    assert_eq!(
        messages[0].section(&BodySection::Full),
        Some(body.as_slice())
    );
    let server = response("* 3 FETCH (BODY[TEXT]<0> ", &body, " UID 7)\r\n");
    let messages = both_ways(vec![FetchItem::Uid], &server).unwrap();
    assert_eq!(
        messages[0].section(&BodySection::Text),
        Some(body.as_slice())
    );
    assert_eq!(messages[0].uid, Some(7));
}

#[test]
fn issue_16_a_nul_in_a_large_body_is_still_refused() {
    for at in [0, 300, 999] {
        let mut body = body(1000);
        body[at] = 0;
        let server = response("* 3 FETCH (UID 7 BODY[] ", &body, ")\r\n");
        let error = both_ways(body_items(), &server).unwrap_err();
        assert_eq!(error.kind(), "malformed", "NUL at {at}");
    }
}

#[test]
fn issue_16_a_large_literal_that_is_not_a_body_is_decoded_whole() {
    // The subject of an envelope as a literal: left out, the envelope would
    // lose it, so the message is decoded whole.
    let subject = vec![b's'; 600];
    let server = response(
        "* 3 FETCH (UID 7 ENVELOPE (NIL ",
        &subject,
        " NIL NIL NIL NIL NIL NIL NIL NIL))\r\n",
    );
    let messages = both_ways(vec![FetchItem::Envelope], &server).unwrap();
    let envelope = messages[0].envelope.as_ref().unwrap();
    assert_eq!(envelope.subject.as_deref(), Some("s".repeat(600).as_str()));
}

#[test]
fn issue_16_two_literals_are_decoded_whole() {
    let first = body(500);
    let second = body(700);
    let mut server = format!("* 3 FETCH (BODY[1] {{{}}}\r\n", first.len()).into_bytes();
    server.extend_from_slice(&first);
    server.extend_from_slice(format!(" BODY[2] {{{}}}\r\n", second.len()).as_bytes());
    server.extend_from_slice(&second);
    server.extend_from_slice(b")\r\nA0001 OK done\r\n");
    let messages = both_ways(vec![FetchItem::Uid], &server).unwrap();
    assert_eq!(
        messages[0].section(&BodySection::Part(vec![1])),
        Some(first.as_slice())
    );
    assert_eq!(
        messages[0].section(&BodySection::Part(vec![2])),
        Some(second.as_slice())
    );
}

#[test]
fn issue_16_a_broken_response_around_a_large_body_is_still_refused() {
    let body = body(1000);
    // No closing parenthesis.
    let server = response("* 3 FETCH (UID 7 BODY[] ", &body, "\r\n");
    assert_eq!(
        both_ways(body_items(), &server).unwrap_err().kind(),
        "malformed"
    );
}
