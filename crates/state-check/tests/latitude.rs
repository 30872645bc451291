//! What the RFCs allow a server must not be reported: each transcript here
//! is legal behaviour that a naive check would flag.

mod common;

use peakhour_state_check::CheckKind;

fn no_violation(name: &str) -> common::Replay {
    let replay = common::replay_both_ways(&common::fixture(&format!("latitude/{name}.txt")));
    assert!(
        replay.violations.is_empty(),
        "{name}: {:#?}",
        replay.violations
    );
    assert!(replay.checks.total() > 0, "{name}: nothing was checked");
    replay
}

#[test]
fn issue_27_item_1_an_expunge_deferred_past_a_fetch_by_sequence_number_is_allowed() {
    let replay = no_violation("deferred_expunge_during_fetch");
    assert_eq!(replay.checkpoints, vec![2]);
}

#[test]
fn issue_27_item_1_an_expunge_during_uid_fetch_is_allowed() {
    no_violation("expunge_during_uid_fetch");
}

#[test]
fn issue_27_item_1_a_flag_change_by_another_session_arriving_unasked_is_allowed() {
    let replay = no_violation("flag_change_from_another_session");
    assert_eq!(replay.checkpoints, vec![2]);
}

#[test]
fn issue_27_item_2_no_recent_under_imap4rev2_is_allowed() {
    let replay = no_violation("no_recent_under_imap4rev2");
    assert_eq!(replay.checkpoints, vec![2]);
}

#[test]
fn issue_27_item_2_recent_in_a_read_only_session_besides_a_read_write_one_is_allowed() {
    let replay = no_violation("recent_in_a_read_only_session_too");
    assert_eq!(replay.checkpoints, vec![2]);
}

#[test]
fn issue_27_item_1_news_of_the_old_mailbox_before_a_pipelined_select_is_not_taken_for_the_new_one()
{
    no_violation("select_behind_done");
}

#[test]
fn issue_27_item_2_a_sessions_own_silent_store_counts_as_known_at_a_checkpoint() {
    let replay = no_violation("silent_store_known_at_checkpoint");
    assert_eq!(replay.checkpoints, vec![2]);
    assert!(
        replay
            .checks
            .get(peakhour_state_check::CheckKind::CheckpointFlags)
            >= 2
    );
}

#[test]
fn issue_27_item_1_another_sessions_concurrent_store_showing_in_a_store_answer_is_allowed() {
    no_violation("concurrent_stores");
}

#[test]
fn issue_27_item_1_a_move_leaving_a_message_it_did_not_move_is_allowed() {
    let replay = no_violation("move_of_a_message_another_session_expunged");
    assert_eq!(
        replay
            .checks
            .get(peakhour_state_check::CheckKind::MoveNotExpunged),
        1
    );
}

#[test]
fn issue_27_item_2_a_nil_body_for_a_message_expunged_elsewhere_is_allowed() {
    let replay = no_violation("nil_body_of_a_message_expunged_elsewhere");
    assert!(
        replay
            .checks
            .get(peakhour_state_check::CheckKind::StaticChanged)
            == 0,
        "a NIL body is not compared"
    );
}

#[test]
fn issue_27_item_6_a_search_without_a_message_expunged_elsewhere_is_allowed() {
    let replay = no_violation("search_without_a_message_expunged_elsewhere");
    // Messages 1 and 3 of SEARCH ALL, then 1 and 3 of the UID range; UID 2
    // twice (expunged by the NOOP), the new message never (no UID known).
    assert_eq!(replay.checks.get(CheckKind::SearchMissing), 6);
}

#[test]
fn issue_27_item_6_a_shared_sessions_search_by_flag_is_not_judged() {
    let replay = no_violation("search_by_flag_in_a_shared_session");
    assert_eq!(
        replay.checks.get(CheckKind::SearchMissing),
        2,
        "only UID 2:3"
    );
}
