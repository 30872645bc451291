//! How the engine is meant to wire a model to a session: peakhour-imap's
//! core records its wire (`ClientCore::record_wire`), and each recorded
//! piece goes to the model in order. Here the core runs against scripted
//! server bytes, with the client's own pipelining (DONE, a command and IDLE
//! in one write).

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use peakhour_imap::{ClientCore, FetchItem, Limits, Progress, Request, Wire};
use peakhour_state_check::{CheckKind, SessionModel, SessionOptions, Violation};

/// Hands the core's recorded wire to the model; the violations found.
fn drain(core: &mut ClientCore, model: &mut SessionModel) -> Vec<Violation> {
    let mut found = Vec::new();
    for piece in core.take_wire() {
        match piece {
            Wire::Sent(bytes) => model.sent(&bytes),
            Wire::Received(bytes) => found.extend(model.received(&bytes)),
        }
    }
    found
}

/// Runs the core until it needs input, writing nothing anywhere: the
/// recorded wire is what a socket would have carried.
fn pump(core: &mut ClientCore) {
    while !matches!(core.next().unwrap(), Progress::NeedMoreInput) {}
}

/// A session that selected INBOX (2 messages, UIDs 1 and 2) and is idling.
fn idling_session(model: &mut SessionModel) -> ClientCore {
    let mut core = ClientCore::new(Limits::default());
    core.record_wire(true);
    core.enqueue_input(b"* OK [CAPABILITY IMAP4rev1 IDLE MOVE UIDPLUS] hi\r\n");
    pump(&mut core);
    core.send(&Request::Select("INBOX".into())).unwrap();
    pump(&mut core);
    core.enqueue_input(
        b"* FLAGS (\\Seen \\Deleted)\r\n* 2 EXISTS\r\n* OK [UIDVALIDITY 7] v\r\n\
          * OK [UIDNEXT 3] n\r\nA0001 OK [READ-WRITE] done\r\n",
    );
    pump(&mut core);
    core.send(&Request::Fetch {
        set: "1:*".into(),
        items: vec![FetchItem::Uid, FetchItem::Flags],
        uid: false,
    })
    .unwrap();
    pump(&mut core);
    core.enqueue_input(
        b"* 1 FETCH (UID 1 FLAGS ())\r\n* 2 FETCH (UID 2 FLAGS ())\r\nA0002 OK done\r\n",
    );
    pump(&mut core);
    core.send(&Request::Idle).unwrap();
    pump(&mut core);
    core.enqueue_input(b"+ idling\r\n");
    pump(&mut core);
    assert!(drain(&mut core, model).is_empty());
    core
}

/// DONE, a UID FETCH and a new IDLE in one write, as the engine's online
/// users send them; the server's answers follow.
fn pipelined_fetch(core: &mut ClientCore, answers: &[u8]) {
    core.send_after_idle(&Request::Fetch {
        set: "3".into(),
        items: vec![FetchItem::Uid, FetchItem::Flags],
        uid: true,
    })
    .unwrap();
    core.queue_idle().unwrap();
    pump(core);
    core.enqueue_input(answers);
    pump(core);
}

#[test]
fn issue_27_item_1_a_model_fed_the_cores_recorded_wire_follows_the_session() {
    let mut model = SessionModel::new("user1#0", SessionOptions::default());
    let mut core = idling_session(&mut model);
    pipelined_fetch(
        &mut core,
        b"* 3 EXISTS\r\nA0003 OK idle done\r\n* 3 FETCH (UID 3 FLAGS ())\r\nA0004 OK done\r\n+ idling\r\n",
    );
    assert_eq!(drain(&mut core, &mut model), Vec::new());
    assert!(model.checks().get(CheckKind::UidOrder) >= 3);
    // IDLE is in progress: no snapshot until it ends.
    assert!(model.snapshot().is_err());
}

#[test]
fn issue_27_item_1_a_model_fed_the_cores_recorded_wire_catches_a_reused_uid() {
    let mut model = SessionModel::new("user1#0", SessionOptions::default());
    let mut core = idling_session(&mut model);
    pipelined_fetch(
        &mut core,
        b"* 3 EXISTS\r\nA0003 OK idle done\r\n* 3 FETCH (UID 2 FLAGS ())\r\nA0004 OK done\r\n+ idling\r\n",
    );
    let found = drain(&mut core, &mut model);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].kind, CheckKind::UidOrder);
    assert_eq!(
        found[0].to_string(),
        "uid_order: client user1#0, mailbox \"INBOX\", seq 3, UID 2: expected UID >= 3 (a new message), seen UID 2"
    );
}
