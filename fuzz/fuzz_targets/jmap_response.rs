//! Arbitrary bytes into the JMAP response readers.
//!
//! The input is used two ways: as a JSON body read as a response envelope, a
//! session and an upload result; and as a server's HTTP response to an API
//! POST (the seeds, from the server side of
//! `crates/protocols/jmap/tests/transcripts/`, are such responses), whose
//! body then goes through `exchange::api_response` and `method_result` for
//! each typed result, and through `exchange::session` and `upload`.
//!
//! Property checked: nothing panics (serde_json's recursion limit bounds
//! nesting; the HTTP layer bounds size).
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_http::{HttpClient, Limits, Progress, Response};
use peakhour_jmap::envelope::{
    Email, GetResponse, Identity, Mailbox, QueryResponse, SetResponse, Upload,
};
use peakhour_jmap::{JmapResponse, Session, calls, exchange};

fn read_all(envelope: &JmapResponse) {
    let _ = exchange::method_result::<GetResponse<Mailbox>>(envelope, "Mailbox/get", "0");
    let _ = exchange::method_result::<GetResponse<Email>>(envelope, "Email/get", "0");
    let _ = exchange::method_result::<GetResponse<Identity>>(envelope, "Identity/get", "0");
    let _ = exchange::method_result::<QueryResponse>(envelope, "Email/query", "0");
    // Email/set, and the send's Email/import with EmailSubmission/set (and
    // the calendar's Email/import alone), all read as a SetResponse.
    for (method, call) in [
        ("Email/set", "0"),
        ("Email/import", "0"),
        ("EmailSubmission/set", "1"),
    ] {
        if let Ok(set) = exchange::method_result::<SetResponse>(envelope, method, call) {
            let _ = (set.failures(), set.created_id("m"), set.created_id("s"));
        }
    }
}

fn read_response(response: &Response) {
    if let Ok(envelope) = exchange::api_response(response) {
        read_all(&envelope);
    }
    if let Ok(exchange::SessionStep::Session(session)) = exchange::session(response) {
        let _ = (
            session.api_path(),
            session.upload_path("u"),
            session.event_source_path("*", 30),
        );
        let _ = session.primary_account(peakhour_jmap::session::MAIL);
    }
    let _ = exchange::upload(response);
}

fuzz_target!(|input: &[u8]| {
    if let Ok(envelope) = serde_json::from_slice::<JmapResponse>(input) {
        read_all(&envelope);
    }
    let _ = serde_json::from_slice::<Session>(input);
    let _ = serde_json::from_slice::<Upload>(input);

    let mut client = HttpClient::new("fuzz.test", None, Limits::default());
    let request = exchange::api_request("/jmap/", &calls::email_query("u", "m", 10));
    if client.send(&request).is_err() {
        return;
    }
    client.enqueue_input(input);
    client.input_closed();
    if let Ok(Progress::Event(response)) = client.next_response() {
        read_response(&response);
    }
});
