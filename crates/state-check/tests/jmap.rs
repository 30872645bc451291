//! The JMAP model and the audit: a real Cyrus session gives no violation,
//! each hostile exchange gives exactly its violation, and the latitude RFC
//! 8620 gives servers is not reported.

use std::path::Path;

use peakhour_state_check::{
    CheckCounts, CheckKind, JmapOptions, JmapSessionModel, Violation, audit, audit_cleanup,
};
use serde_json::{Value, json};

const SOLE: JmapOptions = JmapOptions {
    sole_writer: true,
    shared_account: false,
};

/// The lines of a recorded session (`tests/capture/capture_groupware.py jmap`).
fn recording(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/groupware")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn replay(model: &mut JmapSessionModel, lines: &[Value]) -> Vec<Violation> {
    lines
        .iter()
        .filter(|l| l.get("request").is_some())
        .flat_map(|l| model.exchange(&l["request"], &l["response"]))
        .collect()
}

/// One request with one call, and its response with one answer.
fn exchange(
    model: &mut JmapSessionModel,
    name: &str,
    args: Value,
    answer: Value,
) -> Vec<Violation> {
    let request = json!({"using": [], "methodCalls": [[name, args, "0"]]});
    let answer_name = if answer.get("type").is_some() {
        "error"
    } else {
        name
    };
    let response = json!({"methodResponses": [[answer_name, answer, "0"]], "sessionState": "0"});
    model.exchange(&request, &response)
}

fn one(found: Vec<Violation>) -> Violation {
    match found.as_slice() {
        [only] => only.clone(),
        other => panic!("expected one violation, found {other:#?}"),
    }
}

fn violation(kind: CheckKind, client: &str, object: &str, expected: &str, seen: &str) -> Violation {
    Violation {
        kind,
        client: client.to_owned(),
        mailbox: object.to_owned(),
        seq: None,
        uid: None,
        expected: expected.to_owned(),
        seen: seen.to_owned(),
    }
}

/// A session that saw state "s1" listing M1 in the Inbox, then moved M1 to
/// Trash: "s1" -> "s2".
fn after_a_move(options: JmapOptions) -> JmapSessionModel {
    let mut model = JmapSessionModel::new("a", options);
    let got = exchange(
        &mut model,
        "Email/get",
        json!({"accountId": "u", "ids": ["M1"]}),
        json!({"state": "s1", "list": [{"id": "M1", "mailboxIds": {"inbox": true}}], "notFound": []}),
    );
    assert!(got.is_empty(), "{got:#?}");
    let moved = exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "update": {"M1": {"mailboxIds/inbox": null, "mailboxIds/trash": true}}}),
        json!({"oldState": "s1", "newState": "s2", "updated": {"M1": null}}),
    );
    assert!(moved.is_empty(), "{moved:#?}");
    model
}

#[test]
fn issue_27_item_3_a_real_cyrus_jmap_session_gives_no_violation() {
    let lines = recording("cyrus_jmap.jsonl");
    let audit_at = lines
        .iter()
        .position(|l| l.get("audit").is_some())
        .expect("audit line");
    let (run, cleanup) = lines.split_at(audit_at);
    let mut model = JmapSessionModel::new("a", SOLE);
    assert_eq!(replay(&mut model, run), vec![]);

    // The audit after the run: the message left is in Trash, where the
    // session moved it; the one it destroyed is gone.
    let outcome = audit(
        "user1@bench.test",
        &[("a", model.expectations())],
        &cleanup[0]["audit"],
    );
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks.get(CheckKind::AuditMailboxCount), 1);
    assert_eq!(outcome.checks.get(CheckKind::AuditWrongMailbox), 1);
    assert_eq!(outcome.checks.get(CheckKind::AuditMissing), 1);
    assert_eq!(outcome.checks.get(CheckKind::AuditLeftBehind), 1);

    // The clean-up destroys everything; nothing is left.
    assert_eq!(replay(&mut model, cleanup), vec![]);
    let after = cleanup
        .iter()
        .find_map(|l| l.get("cleanup"))
        .expect("cleanup line");
    let outcome = audit_cleanup("user1@bench.test", after);
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks.get(CheckKind::AuditLeftBehind), 1);

    let checks = model.checks();
    // Four /set answers that changed something (Cyrus's Email/import
    // answer carries no states); two /changes answers from the first state
    // (one whole, one a change a page) against the five changes made since;
    // an Email/get of the one created id still there.
    assert_eq!(checks.get(CheckKind::JmapStateUnchanged), 4, "{checks:?}");
    // Own changes a /changes answer may leave out (created and destroyed
    // since its state) are not counted as checks.
    assert_eq!(checks.get(CheckKind::JmapChangesMissing), 6, "{checks:?}");
    assert_eq!(checks.get(CheckKind::JmapCreatedNotFound), 1, "{checks:?}");
}

#[test]
fn issue_27_item_3_a_state_that_does_not_change_after_a_change_is_caught() {
    let mut model = JmapSessionModel::new("a", SOLE);
    let got = exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "update": {"M1": {"keywords/$seen": true}}}),
        json!({"oldState": "s1", "newState": "s1", "updated": {"M1": null}}),
    );
    assert_eq!(
        one(got),
        violation(
            CheckKind::JmapStateUnchanged,
            "a",
            "Email state",
            "a new state after 1 change(s)",
            "newState \"s1\" = the state before them"
        )
    );
}

#[test]
fn issue_27_item_3_a_state_going_back_to_one_before_the_change_is_caught() {
    let mut model = after_a_move(SOLE);
    let got = exchange(
        &mut model,
        "Email/get",
        json!({"accountId": "u", "ids": ["M1"]}),
        json!({"state": "s1", "list": [{"id": "M1"}], "notFound": []}),
    );
    assert_eq!(
        one(got),
        violation(
            CheckKind::JmapStateUnchanged,
            "a",
            "Email state",
            "a state after the session's own change",
            "state \"s1\", from before it"
        )
    );
}

#[test]
fn issue_27_item_3_changes_that_leave_out_the_sessions_own_update_are_caught() {
    let mut model = after_a_move(SOLE);
    let got = exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "s1"}),
        json!({"oldState": "s1", "newState": "s2", "hasMoreChanges": false,
               "created": [], "updated": ["M9"], "destroyed": []}),
    );
    assert_eq!(
        one(got),
        violation(
            CheckKind::JmapChangesMissing,
            "a",
            "Email M1",
            "in updated or destroyed of Email/changes since \"s1\" (the session updated it)",
            "left out"
        )
    );
    assert_eq!(model.checks().get(CheckKind::JmapChangesMissing), 1);
}

#[test]
fn issue_27_item_3_changes_that_lose_an_update_on_the_last_page_are_caught() {
    let mut model = after_a_move(SOLE);
    let mut pages = Vec::new();
    pages.extend(exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "s1", "maxChanges": 1}),
        json!({"oldState": "s1", "newState": "p1", "hasMoreChanges": true,
               "created": ["M7"], "updated": [], "destroyed": []}),
    ));
    assert_eq!(pages, vec![], "a page with more to come is not judged");
    let got = exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "p1", "maxChanges": 1}),
        json!({"oldState": "p1", "newState": "s2", "hasMoreChanges": false,
               "created": [], "updated": [], "destroyed": []}),
    );
    assert_eq!(one(got).kind, CheckKind::JmapChangesMissing);
}

#[test]
fn issue_27_item_3_a_created_email_coming_back_not_found_is_caught() {
    let mut model = JmapSessionModel::new("a", SOLE);
    let imported = exchange(
        &mut model,
        "Email/import",
        json!({"accountId": "u", "emails": {"m0": {"blobId": "G1", "mailboxIds": {"sent": true}}}}),
        json!({"oldState": "s1", "newState": "s2", "created": {"m0": {"id": "M5"}}}),
    );
    assert_eq!(imported, vec![]);
    let got = exchange(
        &mut model,
        "Email/get",
        json!({"accountId": "u", "ids": ["M5"]}),
        json!({"state": "s2", "list": [], "notFound": ["M5"]}),
    );
    assert_eq!(
        one(got),
        violation(
            CheckKind::JmapCreatedNotFound,
            "a",
            "Email M5",
            "the Email the session created (never destroyed)",
            "notFound"
        )
    );
}

#[test]
fn issue_27_item_3_cannot_calculate_changes_is_allowed() {
    let mut model = after_a_move(SOLE);
    let got = exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "s1"}),
        json!({"type": "cannotCalculateChanges"}),
    );
    assert_eq!(got, vec![]);
    assert_eq!(model.checks().get(CheckKind::JmapChangesMissing), 0);
}

#[test]
fn issue_27_item_3_changes_may_list_others_changes_and_leave_out_what_was_created_and_destroyed() {
    let mut model = after_a_move(SOLE);
    // Created and destroyed by the session since s1: a server SHOULD leave
    // it out (RFC 8620 section 5.2).
    let created = exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "create": {"k": {"mailboxIds": {"drafts": true}}}}),
        json!({"oldState": "s2", "newState": "s3", "created": {"k": {"id": "M8"}}}),
    );
    let destroyed = exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "destroy": ["M8"]}),
        json!({"oldState": "s3", "newState": "s4", "destroyed": ["M8"]}),
    );
    // Opaque states, other sessions' changes in updated and created.
    let got = exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "s1"}),
        json!({"oldState": "s1", "newState": "s4", "hasMoreChanges": false,
               "created": ["M20"], "updated": ["M1", "M21"], "destroyed": ["M22"]}),
    );
    assert_eq!([created, destroyed, got].concat(), vec![]);
    // Only the move of M1 is held to the answer: M8's create and destroy
    // may both be left out, so neither is counted as a check.
    assert_eq!(model.checks().get(CheckKind::JmapChangesMissing), 1);
}

#[test]
fn issue_27_item_3_a_shared_account_does_not_expect_its_creations_to_survive() {
    // Another client may destroy what this one created: then /changes may
    // leave it out and Email/get may say notFound.
    let mut model = JmapSessionModel::new("a", JmapOptions::default());
    let created = exchange(
        &mut model,
        "Email/import",
        json!({"accountId": "u", "emails": {"m0": {"blobId": "G1", "mailboxIds": {"sent": true}}}}),
        json!({"oldState": "s1", "newState": "s2", "created": {"m0": {"id": "M5"}}}),
    );
    let changes = exchange(
        &mut model,
        "Email/changes",
        json!({"accountId": "u", "sinceState": "s1"}),
        json!({"oldState": "s1", "newState": "s3", "hasMoreChanges": false,
               "created": [], "updated": [], "destroyed": []}),
    );
    let got = exchange(
        &mut model,
        "Email/get",
        json!({"accountId": "u", "ids": ["M5"]}),
        json!({"state": "s3", "list": [], "notFound": ["M5"]}),
    );
    assert_eq!([created, changes, got].concat(), vec![]);
}

#[test]
fn issue_27_item_3_a_second_destroy_cyrus_answers_destroyed_is_caught_only_when_alone() {
    // Cyrus 3.6 answers a destroy of an Email already destroyed (here by
    // the account's other session first) with `destroyed` and the state
    // unchanged, as a curl on the lab shows: RFC 8620 section 5.3 wants
    // `notDestroyed`. On a shared account the model cannot tell it from the
    // other session's destroy, so it holds a destroy to nothing there.
    let answer = json!({"oldState": "1058", "newState": "1058", "destroyed": ["M1"]});
    let request = json!({"accountId": "u", "destroy": ["M1"]});
    let shared = JmapOptions {
        sole_writer: true,
        shared_account: true,
    };
    let mut model = JmapSessionModel::new("a", shared);
    assert_eq!(
        exchange(&mut model, "Email/set", request.clone(), answer.clone()),
        vec![]
    );
    let mut alone = JmapSessionModel::new("a", SOLE);
    let found = exchange(&mut alone, "Email/set", request, answer);
    assert_eq!(one(found).kind, CheckKind::JmapStateUnchanged);
}

fn found(list: Value) -> Value {
    json!({"accountId": "u", "list": list, "notFound": [], "state": "s9"})
}

#[test]
fn issue_27_item_3_the_audit_catches_a_message_in_two_mailboxes() {
    let outcome = audit(
        "u",
        &[],
        &found(json!([{"id": "M1", "mailboxIds": {"inbox": true, "trash": true}}])),
    );
    assert_eq!(
        outcome.violations,
        vec![violation(
            CheckKind::AuditMailboxCount,
            "u",
            "Email M1",
            "in exactly one mailbox",
            "in 2 mailboxes: inbox, trash"
        )]
    );
}

#[test]
fn issue_27_item_3_an_email_already_in_two_mailboxes_when_first_seen_is_not_held_to_one() {
    // Cyrus shows identical messages as one Email in each mailbox (a lab
    // used before): found in inbox and trash, moved from inbox to folder,
    // it stays in trash too. Two of the first three Cyrus JMAP runs of
    // docs/state-checks.md each had one such message (one `init` appended
    // again after an earlier run had moved it away).
    let mut model = JmapSessionModel::new("a", SOLE);
    exchange(
        &mut model,
        "Email/get",
        json!({"accountId": "u", "ids": ["M1"]}),
        json!({"state": "s1", "notFound": [],
               "list": [{"id": "M1", "mailboxIds": {"inbox": true, "trash": true}}]}),
    );
    exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "update": {"M1": {"mailboxIds/inbox": null, "mailboxIds/folder": true}}}),
        json!({"oldState": "s1", "newState": "s2", "updated": {"M1": null}}),
    );
    let after = found(json!([{"id": "M1", "mailboxIds": {"folder": true, "trash": true}}]));
    let outcome = audit("u", &[("a", model.expectations())], &after);
    assert_eq!(outcome.violations, vec![]);
    // Still where the session put it: that much is checked.
    assert_eq!(outcome.checks.get(CheckKind::AuditWrongMailbox), 1);
    // One the session placed and only then found in two is still caught.
    let mut placed = after_a_move(SOLE);
    exchange(
        &mut placed,
        "Email/get",
        json!({"accountId": "u", "ids": ["M1"]}),
        json!({"state": "s2", "notFound": [],
               "list": [{"id": "M1", "mailboxIds": {"inbox": true, "trash": true}}]}),
    );
    let outcome = audit(
        "u",
        &[("a", placed.expectations())],
        &found(json!([{"id": "M1", "mailboxIds": {"inbox": true, "trash": true}}])),
    );
    assert_eq!(
        outcome
            .violations
            .iter()
            .map(|v| v.kind)
            .collect::<Vec<_>>(),
        vec![CheckKind::AuditMailboxCount]
    );
}

#[test]
fn issue_27_item_3_the_audit_catches_a_message_not_where_it_was_last_moved() {
    let model = after_a_move(SOLE);
    let outcome = audit(
        "u",
        &[("a", model.expectations())],
        &found(json!([{"id": "M1", "mailboxIds": {"inbox": true}}])),
    );
    assert_eq!(
        outcome.violations,
        vec![violation(
            CheckKind::AuditWrongMailbox,
            "a",
            "Email M1",
            "in mailbox trash (where the session last put it)",
            "in mailbox inbox"
        )]
    );
}

#[test]
fn issue_27_item_3_the_audit_catches_a_lost_message_and_a_destroyed_one_left_behind() {
    let model = after_a_move(SOLE);
    let missing = audit("u", &[("a", model.expectations())], &found(json!([])));
    assert_eq!(
        missing.violations,
        vec![violation(
            CheckKind::AuditMissing,
            "a",
            "Email M1",
            "in mailbox trash (never destroyed)",
            "not found"
        )]
    );
    let mut model = model;
    let destroyed = exchange(
        &mut model,
        "Email/set",
        json!({"accountId": "u", "destroy": ["M1"]}),
        json!({"oldState": "s2", "newState": "s3", "destroyed": ["M1"]}),
    );
    assert_eq!(destroyed, vec![]);
    let left = audit(
        "u",
        &[("a", model.expectations())],
        &found(json!([{"id": "M1", "mailboxIds": {"trash": true}}])),
    );
    assert_eq!(
        left.violations,
        vec![violation(
            CheckKind::AuditLeftBehind,
            "a",
            "Email M1",
            "gone (the session destroyed it)",
            "in mailbox trash"
        )]
    );
    let cleanup = audit_cleanup(
        "u",
        &found(json!([{"id": "M3", "mailboxIds": {"inbox": true}}])),
    );
    assert_eq!(
        cleanup.violations,
        vec![violation(
            CheckKind::AuditLeftBehind,
            "u",
            "Email M3",
            "nothing left after the clean-up",
            "in mailbox inbox"
        )]
    );
}

#[test]
fn issue_27_item_3_the_audit_skips_the_place_of_a_message_two_sessions_moved() {
    let a = after_a_move(SOLE);
    let b = after_a_move(SOLE);
    let outcome = audit(
        "u",
        &[("a", a.expectations()), ("b", b.expectations())],
        &found(json!([{"id": "M1", "mailboxIds": {"inbox": true, "trash": true}}])),
    );
    // Two patches that each moved it may leave it in both targets (RFC
    // 8621 section 4.6): not even its count is checked.
    assert_eq!(outcome.violations, vec![]);
    assert_eq!(outcome.checks, CheckCounts::default());
}

#[test]
fn issue_27_item_3_one_corrupted_answer_of_the_real_session_is_caught() {
    // The real session's first Email/set (the $seen flag), answered with
    // its old state as the new one.
    let mut lines = recording("cyrus_jmap.jsonl");
    let at = lines
        .iter()
        .position(|l| l["request"]["methodCalls"][0][0] == "Email/set")
        .expect("an Email/set");
    let answer = &mut lines[at]["response"]["methodResponses"][0][1];
    let old = answer["oldState"].clone();
    answer["newState"] = old.clone();
    let mut model = JmapSessionModel::new("a", SOLE);
    let found = replay(&mut model, &lines[..=at]);
    assert_eq!(
        one(found),
        violation(
            CheckKind::JmapStateUnchanged,
            "a",
            "Email state",
            "a new state after 1 change(s)",
            &format!("newState {old} = the state before them")
        )
    );
}

/// Replays a mixed recording and audits it: (violations, checks).
fn replay_and_audit(lines: &[Value]) -> (Vec<Violation>, CheckCounts) {
    let mut model = JmapSessionModel::new("a", SOLE);
    let mut found = replay(&mut model, lines);
    let mut checks = model.checks().clone();
    let audit_args = lines
        .iter()
        .find_map(|l| l.get("audit"))
        .expect("audit line");
    let outcome = audit("u", &[("a", model.expectations())], audit_args);
    found.extend(outcome.violations);
    checks.add(&outcome.checks);
    (found, checks)
}

#[test]
fn issue_27_item_3_a_real_cyrus_session_of_80_seeded_calls_gives_no_violation() {
    let (found, checks) = replay_and_audit(&recording("cyrus_jmap_mixed.jsonl"));
    assert_eq!(found, vec![]);
    for kind in [
        CheckKind::JmapStateUnchanged,
        CheckKind::JmapChangesMissing,
        CheckKind::JmapCreatedNotFound,
        CheckKind::AuditMailboxCount,
        CheckKind::AuditWrongMailbox,
        CheckKind::AuditMissing,
        CheckKind::AuditLeftBehind,
    ] {
        assert!(checks.get(kind) > 0, "{kind} not checked: {checks:?}");
    }
    assert!(checks.total() > 100, "{checks:?}");
}

/// A recording not committed (`STATE_CHECK_JMAP=FILE`), made by
/// `capture_groupware.py jmap-mixed` with another seed.
#[test]
#[ignore = "needs STATE_CHECK_JMAP=recording.jsonl"]
fn any_jmap_recording() {
    let path = std::env::var("STATE_CHECK_JMAP").expect("STATE_CHECK_JMAP");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let (found, checks) = replay_and_audit(&lines);
    println!("{path}: {} checks: {checks:?}", checks.total());
    assert_eq!(found, vec![]);
}

#[test]
fn issue_27_item_3_jmap_and_caldav_violations_print_their_object_not_a_mailbox() {
    let line = violation(
        CheckKind::JmapChangesMissing,
        "a",
        "Email M1",
        "in updated of Email/changes since \"s1\"",
        "left out",
    )
    .to_string();
    assert_eq!(
        line,
        "jmap_changes_missing: client a, Email M1: expected in updated of Email/changes since \"s1\", seen left out"
    );
    assert_eq!(CheckKind::JmapChangesMissing.protocol().name(), "jmap");
    assert_eq!(CheckKind::CaldavEventLost.protocol().name(), "caldav");
    assert_eq!(CheckKind::DeliveryDuplicated.protocol().name(), "delivery");
    assert_eq!(CheckKind::UidOrder.protocol().name(), "imap");
}

/// Replays a recording of two sessions sharing an account (each line's
/// "session"), each with its own model, then audits with both.
fn replay_shared(lines: &[Value]) -> (Vec<Violation>, CheckCounts) {
    let mut models: std::collections::BTreeMap<String, JmapSessionModel> = Default::default();
    let mut found = Vec::new();
    for line in lines.iter().filter(|l| l.get("request").is_some()) {
        let session = line["session"].as_str().unwrap_or("a").to_owned();
        let model = models
            .entry(session.clone())
            .or_insert_with(|| JmapSessionModel::new(session, JmapOptions::default()));
        found.extend(model.exchange(&line["request"], &line["response"]));
    }
    let mut checks = CheckCounts::default();
    for model in models.values() {
        checks.add(model.checks());
    }
    let sessions: Vec<(&str, _)> = models
        .iter()
        .map(|(name, model)| (name.as_str(), model.expectations()))
        .collect();
    let audit_args = lines
        .iter()
        .find_map(|l| l.get("audit"))
        .expect("audit line");
    let outcome = audit("u", &sessions, audit_args);
    found.extend(outcome.violations);
    checks.add(&outcome.checks);
    (found, checks)
}

#[test]
fn issue_27_item_3_two_real_cyrus_sessions_sharing_an_account_give_no_violation() {
    // Each acts on what the other made: moves, flags and destroys of the
    // other's messages, /changes listing the other's changes.
    let (found, checks) = replay_shared(&recording("cyrus_jmap_shared.jsonl"));
    assert_eq!(found, vec![]);
    for kind in [
        CheckKind::JmapStateUnchanged,
        CheckKind::JmapChangesMissing,
        CheckKind::AuditMailboxCount,
        CheckKind::AuditWrongMailbox,
    ] {
        assert!(checks.get(kind) > 0, "{kind} not checked: {checks:?}");
    }
    // Not a sole writer: nothing expects a creation to survive.
    assert_eq!(checks.get(CheckKind::JmapCreatedNotFound), 0);
}

/// A shared recording not committed (`STATE_CHECK_JMAP_SHARED=FILE`).
#[test]
#[ignore = "needs STATE_CHECK_JMAP_SHARED=recording.jsonl"]
fn any_shared_jmap_recording() {
    let path = std::env::var("STATE_CHECK_JMAP_SHARED").expect("STATE_CHECK_JMAP_SHARED");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let (found, checks) = replay_shared(&lines);
    println!("{path}: {} checks: {checks:?}", checks.total());
    assert_eq!(found, vec![]);
}

#[test]
fn issue_27_item_3_an_update_another_session_of_the_account_made_first_may_keep_the_state() {
    // Two sessions of one account both mark M1 seen: the second update
    // changes nothing, and Cyrus keeps the state (RFC 8620 section 5.1 asks
    // a new state only when the data changed).
    let no_op = |options| {
        let mut model = JmapSessionModel::new("a", options);
        exchange(
            &mut model,
            "Email/set",
            json!({"accountId": "u", "update": {"M1": {"keywords/$seen": true}}}),
            json!({"oldState": "s5", "newState": "s5", "updated": {"M1": null}}),
        )
    };
    let shared = JmapOptions {
        sole_writer: true,
        shared_account: true,
    };
    assert_eq!(no_op(shared), vec![]);
    // Alone on the account, the same answer is a violation.
    assert_eq!(one(no_op(SOLE)).kind, CheckKind::JmapStateUnchanged);
}
