//! Delivery checks: a copy delivered by the Cyrus or the Dovecot lab
//! (Postfix, then LMTP) is the message submitted, and each corruption of it
//! is caught.

use std::path::Path;

use peakhour_state_check::{
    CheckKind, DeliveryOptions, FoundCopy, SubmittedMessage, Violation, check_delivery,
    check_delivery_as,
};
use serde_json::Value;

/// The Cyrus recording: (the submitted message, the copies found).
fn recording() -> (Vec<u8>, Vec<FoundCopy>) {
    recorded("cyrus_delivery.json")
}

/// A recording (`capture_groupware.py delivery`).
fn recorded(name: &str) -> (Vec<u8>, Vec<FoundCopy>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/groupware")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let found = v["found"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| FoundCopy {
            folder: c["folder"].as_str().unwrap_or_default().to_owned(),
            uid: c["uid"].as_u64().map(|u| u as u32),
            size: c["size"].as_u64().unwrap_or_default(),
            header: c["header"].as_str().unwrap_or_default().as_bytes().to_vec(),
        })
        .collect();
    (
        v["submitted"]
            .as_str()
            .unwrap_or_default()
            .as_bytes()
            .to_vec(),
        found,
    )
}

fn one(found: Vec<Violation>) -> Violation {
    match found.as_slice() {
        [only] => only.clone(),
        other => panic!("expected one violation, found {other:#?}"),
    }
}

fn replace(copy: &FoundCopy, from: &str, to: &str) -> FoundCopy {
    let header = String::from_utf8_lossy(&copy.header).replacen(from, to, 1);
    assert_ne!(header.as_bytes(), copy.header, "{from} not in the header");
    FoundCopy {
        header: header.into_bytes(),
        ..copy.clone()
    }
}

#[test]
fn issue_27_item_4_a_real_delivery_through_postfix_and_cyrus_gives_no_violation() {
    let (message, found) = recording();
    let submitted = SubmittedMessage::from_message(&message);
    assert_eq!(found.len(), 1);
    // Cyrus reports a larger size: Postfix's Received, and lmtpd's
    // Return-Path, Received, X-Cyrus-Session-Id and X-Sieve.
    assert!(found[0].size > message.len() as u64);
    let outcome = check_delivery("user3@bench.test", &submitted, &found);
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks.get(CheckKind::DeliveryDuplicated), 1);
    assert_eq!(outcome.checks.get(CheckKind::DeliveryHeaderChanged), 4);
    assert_eq!(outcome.checks.get(CheckKind::DeliverySizeMismatch), 1);
    // What a ledger would keep instead of the message gives the same.
    let header_end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(0)
        + 4;
    let kept = SubmittedMessage::from_header(&message[..header_end], message.len() as u64);
    assert_eq!(check_delivery("user3@bench.test", &kept, &found), outcome);
    assert_eq!(
        submitted.message_id().as_deref(),
        Some("<s0.1.capture1795688533@bench.test>")
    );
}

#[test]
fn issue_27_item_4_a_copy_delivered_twice_is_caught() {
    let (message, found) = recording();
    let mut twice = found.clone();
    twice.push(FoundCopy {
        uid: Some(2),
        ..found[0].clone()
    });
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &twice,
    );
    assert_eq!(
        one(outcome.violations),
        Violation {
            kind: CheckKind::DeliveryDuplicated,
            client: "user3@bench.test".to_owned(),
            mailbox: "INBOX".to_owned(),
            seq: None,
            uid: Some(2),
            expected: "1 copy".to_owned(),
            seen: "2 copies: INBOX UID 1, INBOX UID 2".to_owned(),
        }
    );
}

#[test]
fn issue_27_item_4_two_sessions_moving_one_copy_at_once_is_no_duplicate_delivery() {
    // Two sessions of a shared account moved the one copy at once, one to a
    // folder, one to Trash: the lab's Dovecot kept a copy in each (found in
    // a 20-user run with two sessions per account). Not a delivery fault.
    let (message, found) = recording();
    let submitted = SubmittedMessage::from_message(&message);
    let moved = |folder: &str, uid| FoundCopy {
        folder: folder.to_owned(),
        uid: Some(uid),
        ..found[0].clone()
    };
    let raced = [moved("Folder33", 11), moved("Trash", 114)];
    let shared = DeliveryOptions { sole_mover: false };
    let outcome = check_delivery_as("user7@bench.test", &submitted, &raced, shared);
    assert!(outcome.violations.is_empty(), "{:#?}", outcome.violations);
    assert_eq!(outcome.checks.get(CheckKind::DeliveryDuplicated), 1);
    // Two copies in the Inbox are a duplicate delivery however the
    // mailbox is shared; any two copies are when one session moves alone.
    let twice = [found[0].clone(), moved("INBOX", 2)];
    let outcome = check_delivery_as("user7@bench.test", &submitted, &twice, shared);
    assert_eq!(one(outcome.violations).kind, CheckKind::DeliveryDuplicated);
    let outcome = check_delivery("user7@bench.test", &submitted, &raced);
    assert_eq!(one(outcome.violations).kind, CheckKind::DeliveryDuplicated);
}

#[test]
fn issue_27_item_4_a_changed_subject_is_caught() {
    let (message, found) = recording();
    // Same length: the size adds up, only the header check sees it.
    let changed = replace(
        &found[0],
        "Subject: state check 1",
        "Subject: state check 7",
    );
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &[changed],
    );
    assert_eq!(
        one(outcome.violations),
        Violation {
            kind: CheckKind::DeliveryHeaderChanged,
            client: "user3@bench.test".to_owned(),
            mailbox: "INBOX".to_owned(),
            seq: None,
            uid: Some(1),
            expected: "subject: state check 1".to_owned(),
            seen: "subject: state check 7".to_owned(),
        }
    );
}

#[test]
fn issue_27_item_4_a_size_that_the_added_fields_do_not_explain_is_caught() {
    let (message, found) = recording();
    let bigger = FoundCopy {
        size: found[0].size + 10,
        ..found[0].clone()
    };
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &[bigger],
    );
    let violation = one(outcome.violations);
    assert_eq!(violation.kind, CheckKind::DeliverySizeMismatch);
    assert_eq!(violation.seen, format!("{} bytes", found[0].size + 10));
    assert_eq!(
        violation.expected,
        format!(
            "{} bytes ({} submitted + {} of 5 added trace fields)",
            found[0].size,
            message.len(),
            found[0].size - message.len() as u64
        )
    );
}

#[test]
fn issue_27_item_4_a_header_the_mta_is_not_known_to_add_is_caught() {
    let (message, found) = recording();
    let extra = "X-Rewritten: yes\r\n";
    let added = FoundCopy {
        size: found[0].size + extra.len() as u64,
        ..replace(
            &found[0],
            "X-Mailer: peakhour\r\n",
            &format!("X-Mailer: peakhour\r\n{extra}"),
        )
    };
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &[added],
    );
    let violation = one(outcome.violations);
    assert_eq!(violation.kind, CheckKind::DeliverySizeMismatch);
    assert!(
        violation
            .seen
            .ends_with("fields not submitted: x-rewritten"),
        "{}",
        violation.seen
    );
}

#[test]
fn issue_27_item_4_a_copy_never_found_is_left_to_the_reconciliation() {
    let (message, _) = recording();
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &[],
    );
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks.total(), 0);
}

#[test]
fn issue_27_item_4_a_real_delivery_through_postfix_and_dovecot_gives_no_violation() {
    // Dovecot's LMTP adds Return-Path, Delivered-To and Received; Postfix
    // its own Received.
    let (message, found) = recorded("dovecot_delivery.json");
    assert_eq!(found.len(), 1);
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &found,
    );
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks.total(), 6);
    // One byte more than the trace fields explain is caught.
    let bigger = FoundCopy {
        size: found[0].size + 1,
        ..found[0].clone()
    };
    let outcome = check_delivery(
        "user3@bench.test",
        &SubmittedMessage::from_message(&message),
        &[bigger],
    );
    assert_eq!(
        one(outcome.violations).kind,
        CheckKind::DeliverySizeMismatch
    );
}
