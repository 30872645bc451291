//! Arbitrary bytes into the multistatus parser and the CalDAV outcomes.
//!
//! The input is used two ways: as a multistatus body given to
//! `parse_multistatus` directly, and as a server's HTTP response to a
//! calendar-query REPORT (the seeds, from the server side of
//! `crates/protocols/caldav/tests/transcripts/`, are such responses), whose
//! body then goes through `outcome::events`, `calendars`, `principal` and the
//! status interpretations, and through the scheduling readers (RFC 6638).
//!
//! Properties checked: nothing panics; parsing twice gives the same result;
//! the number of responses and the nesting stay within the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_caldav::requests::query_events;
use peakhour_caldav::{UtcDateTime, XmlLimits, outcome, parse_multistatus, scheduling};
use peakhour_http::{HttpClient, Limits, Progress};

const XML: XmlLimits = XmlLimits {
    max_depth: 16,
    max_responses: 64,
};

fuzz_target!(|input: &[u8]| {
    let direct = parse_multistatus(input, &XML);
    assert_eq!(direct, parse_multistatus(input, &XML));
    if let Ok(multistatus) = &direct {
        assert!(multistatus.responses.len() <= XML.max_responses);
        for response in &multistatus.responses {
            let _ = (response.etag(), response.calendar_data(), response.found());
        }
    }

    let mut client = HttpClient::new("fuzz.test", None, Limits::default());
    let start = UtcDateTime::from_unix(0);
    if client
        .send(&query_events(
            "/c/",
            start,
            start.plus_seconds(86_400),
            true,
        ))
        .is_err()
    {
        return;
    }
    client.enqueue_input(input);
    client.input_closed();
    if let Ok(Progress::Event(response)) = client.next_response() {
        let _ = outcome::events(&response, &XML);
        let _ = outcome::calendars(&response, &XML);
        let _ = outcome::principal(&response, &XML);
        let _ = outcome::calendar_home(&response, &XML);
        let _ = outcome::put(&response);
        let _ = outcome::delete(&response);
        let _ = outcome::make_calendar(&response);
        let _ = outcome::event("/c/e.ics", &response);
        // RFC 6638 scheduling: the home's listing with its inbox tag, the
        // inbox's members, the discovery of inbox and copies, OPTIONS.
        if let Ok(listing) = scheduling::home_listing(&response, &XML) {
            assert!(listing.calendars.len() <= XML.max_responses);
        }
        if let Ok(members) = scheduling::members("/c/Inbox/", &response, &XML) {
            assert!(members.len() <= XML.max_responses);
            assert!(members.iter().all(|m| m.data.is_none()));
        }
        let _ = scheduling::schedule_inbox(&response, &XML);
        let _ = scheduling::default_calendar(&response, &XML);
        let classes = scheduling::dav_classes(&response);
        assert!(classes.len() <= 64);
        // A header's tokens compare without regard to case (`schedules`),
        // while `dav_classes` keeps them as sent, and at most 64 of them.
        if scheduling::schedules(&response) && classes.len() < 64 {
            assert!(
                classes
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(scheduling::AUTO_SCHEDULE))
            );
        }
    }
});
