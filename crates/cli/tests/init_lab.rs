//! `peakhour init` against the real lab: both ways in (LMTP delivery and IMAP
//! MULTIAPPEND) give the profile's starting state, agree on what is there,
//! and a second init adds nothing.

#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::collections::HashSet;

use common::{log_in, peakhour, start_lab};
use peakhour_imap::{FetchItem, ImapConnection, StatusItem, StoreMode};

/// Folder name -> message count, for the folders of mmb-medium's starting state.
async fn counts(imap: &mut ImapConnection) -> Vec<(String, u32)> {
    let mut names = vec!["INBOX".to_owned(), "Trash".to_owned()];
    names.extend((1..=40).map(|n| format!("Folder{n}")));
    let mut out = Vec::new();
    for name in names {
        let status = imap
            .status(&name, &[StatusItem::Messages])
            .await
            .unwrap()
            .value;
        out.push((name, status.messages.unwrap()));
    }
    out
}

fn init(lab_dir: &str, extra: &[&str]) -> String {
    let mut args = vec!["init", "--profile", "mmb-medium", "--lab-dir", lab_dir];
    args.extend_from_slice(extra);
    let output = peakhour(&args);
    assert!(output.status.success(), "init {extra:?} failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lmtp_and_multiappend_fill_the_same_folders_and_issue_26_item_13_a_resume_fills_an_examined_folder()
 {
    let (_dir, lab) = start_lab(4);
    let status = lab.status.clone();
    let lab_dir = status.dir.clone();

    // Users 1-2 over LMTP, then all four with IMAP MULTIAPPEND: the second
    // init finds the first one's messages and only fills users 3 and 4.
    let lmtp = init(&lab_dir, &["--users", "2", "--via", "lmtp"]);
    assert!(lmtp.contains("0 already there, 410 added"), "{lmtp}");
    let append = init(&lab_dir, &[]);
    assert!(append.contains("410 already there, 410 added"), "{append}");
    let again = init(&lab_dir, &[]);
    assert!(again.contains("820 already there, 0 added"), "{again}");
    // Issue 25: an init with another seed finds the starting state (any
    // init's messages count) instead of appending a second one.
    let other_seed = init(&lab_dir, &["--seed", "7"]);
    assert!(
        other_seed.contains("820 already there, 0 added"),
        "{other_seed}"
    );

    // Issue 26 item 13, the normal path: user 4's Folder40 loses its last
    // message (init counts what is there, so the last is the one it adds);
    // the next init EXAMINEs it (among all the others) to count, then
    // appends the missing one.
    let mut imap = log_in(&status, 4).await;
    imap.select("Folder40").await.unwrap();
    imap.store("5", StoreMode::Add, &["\\Deleted"], true, false)
        .await
        .unwrap();
    imap.expunge().await.unwrap();
    let _ = imap.logout().await;
    let resumed = init(&lab_dir, &[]);
    assert!(resumed.contains("819 already there, 1 added"), "{resumed}");

    for user in [1, 4] {
        let mut imap = log_in(&status, user).await;
        for (folder, count) in counts(&mut imap).await {
            let want = match folder.as_str() {
                "INBOX" => 4,
                "Trash" => 1,
                _ => 5,
            };
            assert_eq!(count, want, "user{user} {folder}");
        }

        // Every message is its own: unique Message-IDs across the mailbox,
        // each addressed to this user.
        let mut ids = HashSet::new();
        let mut parts = Vec::new();
        for folder in ["INBOX", "Folder1", "Folder2", "Folder3", "Folder40"] {
            imap.examine(folder).await.unwrap();
            let fetched = imap
                .fetch(
                    "1:*",
                    &[
                        FetchItem::Flags,
                        FetchItem::Envelope,
                        FetchItem::BodyStructure,
                    ],
                    false,
                )
                .await
                .unwrap()
                .value;
            for message in fetched {
                let envelope = message.envelope.unwrap();
                assert_eq!(envelope.to, [status.user(user)], "user{user} {folder}");
                assert!(
                    ids.insert(envelope.message_id.unwrap()),
                    "user{user} {folder}"
                );
                let flags = message.flags.unwrap();
                let seen = flags.iter().any(|f| f.eq_ignore_ascii_case("\\Seen"));
                // Inbox mail is unread either way; filed mail appended by
                // init is read (LMTP cannot set flags).
                if folder == "INBOX" || user == 1 {
                    assert!(!seen, "user{user} {folder}: {flags:?}");
                } else {
                    assert!(seen, "user{user} {folder}: {flags:?}");
                }
                parts.extend(message.body_parts.unwrap());
            }
        }
        assert_eq!(ids.len(), 4 + 4 * 5);
        assert!(
            parts.iter().any(|p| p.media_type == "text/plain"),
            "user{user}: {parts:?}"
        );
        let _ = imap.logout().await;
    }
}
