//! Issue 27: peakhour's own IMAP client against the lab's Dovecot, each
//! session's wire recorded (`ImapConnection::record_wire`) and fed to a
//! state-check model, as the engine will. Two sessions share one mailbox
//! while a third appends; nothing the server does here is a violation, and
//! the checks are made.

#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::time::{Duration, Instant};

use common::start_lab;
use peakhour_imap::{BodySection, FetchItem, Idle, ImapConnection, MailboxUpdate, StoreMode, Wire};
use peakhour_lab::LabStatus;
use peakhour_net::{Secret, Security};
use peakhour_state_check::{
    CheckCounts, CheckKind, SessionModel, SessionOptions, Violation, checkpoint,
};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A session and its model.
struct Watched {
    imap: ImapConnection,
    model: SessionModel,
}

impl Watched {
    async fn open(status: &LabStatus, client: &str) -> Self {
        let port = status
            .endpoints
            .imap
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok());
        let mut imap = ImapConnection::connect(
            "127.0.0.1",
            port.expect("the lab's IMAP port"),
            Security::Plain,
            None,
            TIMEOUT,
        )
        .await
        .unwrap()
        .value;
        imap.record_wire(true);
        imap.login(&status.user(1), &Secret::new(status.password.clone()))
            .await
            .unwrap();
        Self {
            imap,
            model: SessionModel::new(client, SessionOptions::default()),
        }
    }

    /// Hands what went over the wire since the last call to the model.
    fn drain(&mut self, found: &mut Vec<Violation>) {
        for piece in self.imap.take_wire() {
            match piece {
                Wire::Sent(bytes) => self.model.sent(&bytes),
                Wire::Received(bytes) => found.extend(self.model.received(&bytes)),
            }
        }
    }
}

fn message(n: u32) -> Vec<u8> {
    format!(
        "From: user2@bench.test\r\nTo: user1@bench.test\r\nSubject: state check {n}\r\n\
         Message-ID: <state-check-live-{n}@bench.test>\r\n\r\nBody {n}.\r\n"
    )
    .into_bytes()
}

/// Two sessions on one mailbox, a third appending: what a busy account does.
async fn share_a_mailbox(a: &mut Watched, b: &mut Watched, c: &mut Watched) {
    c.imap.create("Shared").await.unwrap();
    c.imap.create("Shared.Archive").await.unwrap();
    for n in 1..=3 {
        c.imap
            .append("Shared", &[], None, &message(n))
            .await
            .unwrap();
    }
    a.imap.select("Shared").await.unwrap();
    b.imap.select("Shared").await.unwrap();
    let items = [
        FetchItem::Uid,
        FetchItem::Flags,
        FetchItem::Size,
        FetchItem::InternalDate,
        FetchItem::Envelope,
        FetchItem::BodyStructure,
    ];
    a.imap.fetch("1:*", &items, false).await.unwrap();
    b.imap.fetch("1:*", &items, true).await.unwrap();
    // a's own change, with a new keyword; b is told of it.
    a.imap
        .store("1", StoreMode::Add, &["\\Flagged", "$Work"], false, false)
        .await
        .unwrap();
    b.imap.noop().await.unwrap();
    // b idles while c appends; a polls.
    b.imap.idle_start().await.unwrap();
    c.imap
        .append("Shared", &[], None, &message(4))
        .await
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Idle::Updates(updates) = b.imap.idle_wait(Duration::from_secs(2)).await.unwrap()
            && updates
                .iter()
                .any(|u| matches!(u, MailboxUpdate::Exists(4)))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "IDLE never saw the fourth message"
        );
    }
    b.imap.idle_done().await.unwrap();
    a.imap.noop().await.unwrap();
    let body = FetchItem::Body {
        section: BodySection::Full,
        peek: true,
    };
    a.imap
        .fetch(
            "4",
            &[FetchItem::Uid, FetchItem::Flags, body.clone()],
            false,
        )
        .await
        .unwrap();
    a.imap
        .fetch("4", &[FetchItem::Uid, FetchItem::Size, body], false)
        .await
        .unwrap();
    // b deletes message 2; a reads by sequence number, then is told.
    b.imap
        .store("2", StoreMode::Add, &["\\Deleted"], true, false)
        .await
        .unwrap();
    b.imap.expunge().await.unwrap();
    a.imap
        .fetch("1:*", &[FetchItem::Flags], false)
        .await
        .unwrap();
    a.imap.noop().await.unwrap();
    // a moves UID 1 away; b is told.
    a.imap
        .move_messages("1", "Shared.Archive", true)
        .await
        .unwrap();
    b.imap.noop().await.unwrap();
    for session in [&mut *a, &mut *b] {
        session
            .imap
            .fetch("1:*", &[FetchItem::Uid, FetchItem::Flags], false)
            .await
            .unwrap();
        session.imap.noop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_item_1_peakhours_own_sessions_sharing_a_mailbox_give_no_violation() {
    let (_dir, lab) = start_lab(2);
    let status = &lab.status;
    let (mut a, mut b, mut c) = (
        Watched::open(status, "a").await,
        Watched::open(status, "b").await,
        Watched::open(status, "c").await,
    );
    share_a_mailbox(&mut a, &mut b, &mut c).await;
    let mut found = Vec::new();
    for session in [&mut a, &mut b, &mut c] {
        session.drain(&mut found);
    }
    let snapshots = [a.model.snapshot().unwrap(), b.model.snapshot().unwrap()];
    let outcome = checkpoint("Shared", &snapshots);
    found.extend(outcome.violations);
    assert!(found.is_empty(), "{found:#?}");

    let mut checks = CheckCounts::default();
    for session in [&a, &b, &c] {
        assert_eq!(session.model.lost_track(), None);
        assert_eq!(session.model.undecodable(), 0);
        checks.add(session.model.checks());
    }
    checks.add(&outcome.checks);
    for kind in [
        CheckKind::SequenceNotAnnounced,
        CheckKind::UidOrder,
        CheckKind::StaticChanged,
        CheckKind::KeywordNotInFlags,
        CheckKind::ExpungeNotAllowed,
        CheckKind::MoveNotExpunged,
        CheckKind::CheckpointCount,
        CheckKind::CheckpointUid,
        CheckKind::CheckpointFlags,
        CheckKind::CheckpointKeywords,
    ] {
        assert!(checks.get(kind) > 0, "{kind} was never checked");
    }
    for session in [a, b, c] {
        session.imap.logout().await.unwrap();
    }
}
