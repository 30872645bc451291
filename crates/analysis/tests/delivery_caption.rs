//! Issue 26 item 15: the delivery-latency caption names what the run used to
//! read mail, never "IMAP session ... IDLE" in a POP3 run.

use std::collections::BTreeMap;

use peakhour_analysis::{DELIVERY_LATENCY_INCLUDES, delivery_latency_includes};

fn spoke(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, p)| ((*a).to_owned(), (*p).to_owned()))
        .collect()
}

#[test]
fn issue_26_item_15_the_delivery_caption_names_the_protocol_that_read_the_mail() {
    let pop3 = delivery_latency_includes(&spoke(&[("download_mail", "pop3"), ("send", "smtp")]));
    assert!(pop3.contains("POP3 session"), "{pop3}");
    assert!(pop3.contains("polls"), "{pop3}");
    assert!(!pop3.contains("IMAP") && !pop3.contains("IDLE"), "{pop3}");

    let imap = delivery_latency_includes(&spoke(&[("read", "imap"), ("send", "smtp+imap")]));
    assert!(
        imap.contains("IMAP session") && imap.contains("IDLE"),
        "{imap}"
    );
    assert!(!imap.contains("POP3"), "{imap}");

    let jmap = delivery_latency_includes(&spoke(&[("read", "jmap"), ("send", "jmap")]));
    assert!(
        jmap.contains("JMAP session") && jmap.contains("push"),
        "{jmap}"
    );
    assert!(
        !jmap.contains("IMAP server") && !jmap.contains("IDLE"),
        "{jmap}"
    );

    let calendar = delivery_latency_includes(&spoke(&[("create_event", "caldav")]));
    assert!(!calendar.contains("IMAP"), "{calendar}");

    // A record from before the protocols were kept: the old words.
    assert_eq!(
        delivery_latency_includes(&BTreeMap::new()),
        DELIVERY_LATENCY_INCLUDES
    );
}
