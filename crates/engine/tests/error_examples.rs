//! Issue 12: the error a user reads names what the failed command was
//! about (the folder, the recipient) besides the login sent and the
//! server's own text, each once, even when the server's text names nothing.
//!
//! The servers are the in-process fakes of `support`, on tokio's paused
//! clock: each refusal here is one line of a scripted server. The refusals
//! a real server gives (a login, a folder outside its namespace) are shown
//! against the lab in `crates/cli/tests/any_server_lab.rs`.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::sync::Arc;

use peakhour_engine::{Event, RunResult, RunSettings, run_with};
use peakhour_workload::Plan;
use support::{FakeMail, Seen, fake_mail, plan, settings, target};
use tokio::sync::watch;

async fn run_fake(plan: &Arc<Plan>, mail: &FakeMail, settings: RunSettings) -> (RunResult, Seen) {
    let mut seen = Seen::default();
    // Kept, never raised: a dropped sender is not a stop.
    let (_stop_tx, stop) = watch::channel(false);
    let result = run_with(
        Arc::new(mail.clone()),
        plan.clone(),
        target(),
        settings,
        stop,
        &mut seen,
    )
    .await
    .unwrap();
    (result, seen)
}

/// The example the run recorded for errors of `kind` in `action`.
fn example(result: &RunResult, action: &str, kind: &str) -> String {
    let examples = &result.record.server.error_examples;
    examples
        .iter()
        .find(|e| e.action == action && e.kind == kind)
        .unwrap_or_else(|| panic!("an example of {action}/{kind} in {examples:?}"))
        .example
        .clone()
}

/// Every example the users sent for `kind`: each user sends its first.
fn sent_examples(seen: &Seen, kind: &str) -> Vec<String> {
    seen.events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::ErrorExample {
                kind: k, example, ..
            } if k == kind => Some(example.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn issue_12_a_refused_move_names_its_folder_the_login_and_the_server_text_once() {
    let plan = plan(1, "[actions.delete]\nper_day = 240");
    let mail = fake_mail(&plan);
    let address = plan.address(0);
    for n in 0..20 {
        mail.deliver_now(&address, &format!("<old{n}@bench.test>"), None);
    }
    mail.store()
        .refuse_imap
        .push(("UID MOVE", "Mailbox doesn't exist"));
    let (result, _) = run_fake(&plan, &mail, settings(1, 20, 5)).await;
    assert_eq!(
        example(&result, "delete", "imap:no"),
        format!("as {address}: UID MOVE refused: NO Mailbox doesn't exist (folder \"Trash\")")
    );
}

#[tokio::test(start_paused = true)]
async fn issue_12_a_refused_select_at_logon_names_the_inbox() {
    let plan = plan(1, "[actions.check_inbox]\nper_day = 240");
    let mail = fake_mail(&plan);
    let address = plan.address(0);
    mail.store()
        .refuse_imap
        .push(("SELECT", "Mailbox is locked by another process"));
    let (result, _) = run_fake(&plan, &mail, settings(1, 10, 2)).await;
    assert_eq!(
        example(&result, "logon", "imap:no"),
        format!(
            "as {address}: SELECT refused: NO Mailbox is locked by another process (folder \"INBOX\")"
        )
    );
}

#[tokio::test(start_paused = true)]
async fn issue_12_a_refused_recipient_is_named_with_the_servers_reply() {
    // Every other RCPT is refused with a reply that does not name the
    // address: the example names it, once.
    let plan = plan(3, "[actions.send]\nper_day = 60\nsave_copy = false");
    let mail = fake_mail(&plan);
    mail.store().refuse_every_other_rcpt = true;
    let (result, seen) = run_fake(&plan, &mail, settings(1, 20, 5)).await;
    let kind = "smtp:recipient-refused";
    let addresses: Vec<String> = (0..plan.users()).map(|u| plan.address(u)).collect();
    let sent = sent_examples(&seen, kind);
    assert!(!sent.is_empty(), "a refusal was met");
    for text in &sent {
        // `as SENDER: RCPT refused: 550 5.1.1 no such user (recipient "R")`,
        // both members of the population.
        let (sender, rest) = text
            .strip_prefix("as ")
            .and_then(|t| t.split_once(": "))
            .unwrap_or_else(|| panic!("{text}"));
        let recipient = rest
            .strip_prefix("RCPT refused: 550 5.1.1 no such user (recipient \"")
            .and_then(|r| r.strip_suffix("\")"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(addresses.iter().any(|a| a == sender), "{text}");
        assert!(addresses.iter().any(|a| a == recipient), "{text}");
    }
    assert_eq!(example(&result, "send", kind), sent[0]);
}
