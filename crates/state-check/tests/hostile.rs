//! One hand-written transcript per check, the smallest that breaks it: each
//! must give exactly that violation, with its values.

mod common;

use peakhour_state_check::{CheckKind, Violation};

/// The one violation `fixtures/hostile/NAME.txt` must give.
fn only_violation(name: &str) -> Violation {
    let replay = common::replay_both_ways(&common::fixture(&format!("hostile/{name}.txt")));
    match replay.violations.as_slice() {
        [only] => {
            assert!(
                replay.checks.get(only.kind) > 0,
                "{only}: check not counted"
            );
            only.clone()
        }
        other => panic!("{name}: expected one violation, found {other:#?}"),
    }
}

fn violation(
    kind: CheckKind,
    client: &str,
    at: (Option<u32>, Option<u32>),
    expected: &str,
    seen: &str,
) -> Violation {
    Violation {
        kind,
        client: client.to_owned(),
        mailbox: "INBOX".to_owned(),
        seq: at.0,
        uid: at.1,
        expected: expected.to_owned(),
        seen: seen.to_owned(),
    }
}

#[test]
fn issue_27_item_1_a_fetch_beyond_the_announced_count_is_caught() {
    assert_eq!(
        only_violation("sequence_not_announced"),
        violation(
            CheckKind::SequenceNotAnnounced,
            "a",
            (Some(3), Some(3)),
            "a sequence number in 1..=2",
            "FETCH 3"
        )
    );
}

#[test]
fn issue_27_item_1_exists_shrinking_without_expunge_is_caught() {
    assert_eq!(
        only_violation("exists_shrank"),
        violation(
            CheckKind::ExistsShrank,
            "a",
            (None, None),
            "at least 2 messages (no EXPUNGE)",
            "1 EXISTS"
        )
    );
}

#[test]
fn issue_27_item_1_a_uid_changing_under_a_sequence_number_is_caught() {
    assert_eq!(
        only_violation("uid_changed"),
        violation(
            CheckKind::UidChanged,
            "a",
            (Some(1), Some(7)),
            "UID 1",
            "UID 7"
        )
    );
}

#[test]
fn issue_27_item_1_a_reused_uid_is_caught() {
    assert_eq!(
        only_violation("uid_order"),
        violation(
            CheckKind::UidOrder,
            "a",
            (Some(3), Some(1)),
            "UID >= 3 (a new message)",
            "UID 1"
        )
    );
}

#[test]
fn issue_27_item_1_uids_not_ascending_with_sequence_numbers_are_caught() {
    assert_eq!(
        only_violation("uid_order_descending"),
        violation(
            CheckKind::UidOrder,
            "a",
            (Some(2), Some(3)),
            "UID > 5 (UID of seq 1)",
            "UID 3"
        )
    );
}

#[test]
fn issue_27_item_1_a_fetch_of_an_expunged_message_is_caught() {
    assert_eq!(
        only_violation("expunged_message_returned"),
        violation(
            CheckKind::ExpungedMessageReturned,
            "a",
            (Some(1), Some(1)),
            "nothing: UID 1 was reported expunged",
            "FETCH of UID 1"
        )
    );
}

#[test]
fn issue_27_item_1_a_static_item_changing_is_caught() {
    assert_eq!(
        only_violation("static_changed"),
        violation(
            CheckKind::StaticChanged,
            "a",
            (Some(2), Some(2)),
            "RFC822.SIZE 100",
            "RFC822.SIZE 120"
        )
    );
}

#[test]
fn issue_27_item_1_a_keyword_missing_from_flags_is_caught() {
    assert_eq!(
        only_violation("keyword_not_in_flags"),
        violation(
            CheckKind::KeywordNotInFlags,
            "a",
            (Some(1), Some(1)),
            "a keyword of FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)",
            "$Work"
        )
    );
}

#[test]
fn issue_27_item_1_modseq_going_backwards_is_caught() {
    assert_eq!(
        only_violation("modseq_backwards"),
        violation(
            CheckKind::ModseqBackwards,
            "a",
            (Some(1), Some(1)),
            "MODSEQ >= 20",
            "MODSEQ 12"
        )
    );
}

#[test]
fn issue_27_item_1_an_expunge_during_a_fetch_by_sequence_number_is_caught() {
    assert_eq!(
        only_violation("expunge_not_allowed"),
        violation(
            CheckKind::ExpungeNotAllowed,
            "a",
            (Some(1), Some(1)),
            "no EXPUNGE (RFC 3501 section 7.4.1)",
            "EXPUNGE during FETCH"
        )
    );
}

#[test]
fn issue_27_item_1_a_store_missing_from_its_own_answer_is_caught() {
    assert_eq!(
        only_violation("own_store_lost"),
        violation(
            CheckKind::OwnStoreLost,
            "a",
            (Some(1), Some(1)),
            "FLAGS with (\\flagged)",
            "FLAGS (\\Seen)"
        )
    );
}

#[test]
fn issue_27_item_1_a_sole_writers_store_missing_from_its_next_fetch_is_caught() {
    assert_eq!(
        only_violation("own_store_lost_sole_writer"),
        violation(
            CheckKind::OwnStoreLost,
            "a",
            (Some(2), Some(2)),
            "FLAGS with (\\seen)",
            "FLAGS ()"
        )
    );
}

#[test]
fn issue_27_item_1_a_move_that_leaves_the_message_in_the_source_is_caught() {
    assert_eq!(
        only_violation("move_not_expunged"),
        violation(
            CheckKind::MoveNotExpunged,
            "a",
            (Some(1), Some(1)),
            "EXPUNGE before MOVE's OK",
            "still at seq 1"
        )
    );
}

#[test]
fn issue_27_item_6_a_search_leaving_out_a_message_still_there_is_caught() {
    assert_eq!(
        only_violation("search_missing"),
        violation(
            CheckKind::SearchMissing,
            "a",
            (Some(2), Some(2)),
            "UID 2 in the answer to UID SEARCH ALL (2 numbers)",
            "left out, and still at seq 2 when NOOP completed"
        )
    );
}

#[test]
fn issue_27_item_6_a_sole_writers_search_by_flag_leaving_out_a_match_is_caught() {
    assert_eq!(
        only_violation("search_missing_unseen_sole_writer"),
        violation(
            CheckKind::SearchMissing,
            "a",
            (Some(3), Some(3)),
            "UID 3 in the answer to SEARCH UNSEEN (1 numbers)",
            "left out, and still at seq 3 when CHECK completed"
        )
    );
}

#[test]
fn issue_27_item_2_sessions_counting_different_messages_are_caught() {
    assert_eq!(
        only_violation("checkpoint_count"),
        violation(
            CheckKind::CheckpointCount,
            "b",
            (None, None),
            "3 messages (as a was told)",
            "2 messages"
        )
    );
}

#[test]
fn issue_27_item_2_sessions_with_different_uid_maps_are_caught() {
    assert_eq!(
        only_violation("checkpoint_uid"),
        violation(
            CheckKind::CheckpointUid,
            "b",
            (Some(2), Some(5)),
            "UID 2 (as a was told)",
            "UID 5"
        )
    );
}

#[test]
fn issue_27_item_2_sessions_with_different_flags_are_caught() {
    assert_eq!(
        only_violation("checkpoint_flags"),
        violation(
            CheckKind::CheckpointFlags,
            "b",
            (Some(2), Some(2)),
            "(\\seen) (as a was told)",
            "()"
        )
    );
}

#[test]
fn issue_27_item_2_sessions_with_different_keywords_are_caught() {
    assert_eq!(
        only_violation("checkpoint_keywords"),
        violation(
            CheckKind::CheckpointKeywords,
            "b",
            (Some(1), Some(1)),
            "($work) (as a was told)",
            "()"
        )
    );
}

#[test]
fn issue_27_item_2_sessions_with_different_modseqs_are_caught() {
    assert_eq!(
        only_violation("checkpoint_modseq"),
        violation(
            CheckKind::CheckpointModseq,
            "b",
            (Some(1), Some(1)),
            "MODSEQ 20 (as a was told)",
            "MODSEQ 21"
        )
    );
}

#[test]
fn issue_27_item_2_recent_in_two_read_write_sessions_is_caught() {
    assert_eq!(
        only_violation("checkpoint_recent"),
        violation(
            CheckKind::CheckpointRecent,
            "b",
            (Some(2), Some(2)),
            "\\Recent in at most one session (a has it)",
            "\\Recent in a, b"
        )
    );
}

#[test]
fn issue_27_item_1_a_violation_reads_as_one_line_naming_everything() {
    let text = only_violation("uid_changed").to_string();
    assert_eq!(
        text,
        "uid_changed: client a, mailbox \"INBOX\", seq 1, UID 7: expected UID 1, seen UID 7"
    );
}
