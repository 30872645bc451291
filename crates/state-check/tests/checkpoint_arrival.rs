//! A checkpoint holds the sessions, not the mail system: a message
//! delivered between two sessions' NOOPs is announced to one and not yet
//! to the other (RFC 3501 section 7.3.1), which is not a disagreement; a
//! session that misses an EXPUNGE still is (tests/hostile.rs).

mod common;

#[test]
fn issue_27_item_4_a_message_delivered_between_two_sessions_checkpoint_noops_is_allowed() {
    let replay = common::replay_both_ways(&common::fixture("latitude/delivered_between_noops.txt"));
    assert_eq!(replay.violations, vec![]);
    assert!(
        replay
            .checks
            .get(peakhour_state_check::CheckKind::CheckpointCount)
            > 0,
        "{:?}",
        replay.checks
    );
}
