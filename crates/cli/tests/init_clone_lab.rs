//! `peakhour init` on a Dovecot lab clones the first user's mailbox on disk
//! for the others (issue 25 item 2): the clones are real mailboxes (the same
//! folders, counts, flags and bytes over IMAP), a short run on them works,
//! a second init copies nothing, and a half-done clone is redone. Each test
//! starts its own lab, since a clone writes into the lab's mail store.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use common::{log_in, peakhour, start_lab, start_lab_configured};
use peakhour_imap::{BodySection, FetchItem, StatusItem};
use peakhour_lab::{LabStatus, Storage};

/// What a user's mailbox holds, as IMAP shows it: every folder with its
/// message and unseen counts, and the bytes of a few messages.
#[derive(Debug, PartialEq)]
struct Seen {
    folders: Vec<(String, u32, u32)>,
    bodies: Vec<Vec<u8>>,
}

async fn seen(status: &LabStatus, user: u32) -> Seen {
    let mut imap = log_in(status, user).await;
    let mut names: Vec<String> = imap
        .list("", "*")
        .await
        .unwrap()
        .value
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    let mut folders = Vec::new();
    for name in names {
        let items = [StatusItem::Messages, StatusItem::Unseen];
        let status = imap.status(&name, &items).await.unwrap().value;
        folders.push((name, status.messages.unwrap(), status.unseen.unwrap()));
    }
    let mut bodies = Vec::new();
    for folder in ["INBOX", "Folder7"] {
        imap.examine(folder).await.unwrap();
        let section = BodySection::Text;
        let items = [FetchItem::Body {
            section: section.clone(),
            peek: true,
        }];
        for message in imap.fetch("1:2", &items, false).await.unwrap().value {
            bodies.push(message.section(&section).unwrap().to_vec());
        }
    }
    let _ = imap.logout().await;
    Seen { folders, bodies }
}

fn init(lab_dir: &str, extra: &[&str]) -> String {
    let mut args = vec!["init", "--profile", "mmb-medium", "--lab-dir", lab_dir];
    args.extend_from_slice(extra);
    let output = peakhour(&args);
    assert!(output.status.success(), "init {extra:?} failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_item_2_clones_on_a_lab_are_real_mailboxes_that_a_run_uses() {
    let (_dir, lab) = start_lab(50);
    let status = lab.status.clone();
    let lab_dir = status.dir.clone();

    let first = init(&lab_dir, &["--users", "40"]);
    assert!(
        first.contains("cloned user1's mailbox on disk: 39 users"),
        "{first}"
    );
    assert!(first.contains("0 already there, 8200 added"), "{first}");

    let source = seen(&status, 1).await;
    assert!(source.folders.len() >= 44, "{:?}", source.folders);
    assert!(
        source
            .folders
            .iter()
            .any(|f| f == &("Folder7".to_owned(), 5, 0))
    );
    assert_eq!(source.bodies.len(), 4);
    for user in [2, 25, 40] {
        assert!(
            seen(&status, user).await == source,
            "user{user} differs from user1"
        );
    }

    // A second init copies nothing; `--via append` finds every message over IMAP.
    let again = init(&lab_dir, &["--users", "40"]);
    assert!(again.contains("nothing to clone on disk"), "{again}");
    assert!(
        again.contains("39 already cloned, 1 checked over IMAP"),
        "{again}"
    );
    assert!(again.contains("8200 already there, 0 added"), "{again}");
    let append = init(&lab_dir, &["--users", "40", "--via", "append"]);
    assert!(append.contains("8200 already there, 0 added"), "{append}");

    // A short run on the cloned users: logons, reads and moves, no errors.
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let run = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        &lab_dir,
        "--speed",
        "200",
        "--duration",
        "15s",
        "--ramp-up",
        "3s",
        "--drain",
        "5s",
        "--seed",
        "3",
        "--users",
        "40",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["users"], 40, "{:?}", run.status);
    for action in ["check_inbox", "read", "move"] {
        let measured = &summary["actions"][action];
        assert!(
            measured["count"].as_u64().unwrap() > 0,
            "{action} never ran"
        );
        assert_eq!(measured["errors"], 0, "{action}: {measured}");
    }
    let errors = summary["errors_by_kind"].as_object().unwrap();
    assert!(errors.is_empty(), "{errors:?}");

    // The population grows to 50 (as a capacity search's next step does):
    // user1 has been changed by the run, so the new source is user41,
    // filled over IMAP to the profile's starting state, and cloned.
    let grown = init(&lab_dir, &[]);
    assert!(
        grown.contains("cloned user41's mailbox on disk: 9 users"),
        "{grown}"
    );
    assert!(
        grown.contains("39 already cloned, 1 checked over IMAP"),
        "{grown}"
    );
    let new_source = seen(&status, 41).await;
    assert_eq!(new_source.folders, source.folders);
    assert!(
        seen(&status, 50).await == new_source,
        "user50 differs from user41"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_item_2_maildir_clones_match_and_a_half_done_clone_is_redone() {
    let (_dir, lab) = start_lab_configured(12, |c| c.storage = Storage::Maildir);
    let status = lab.status.clone();
    let lab_dir = status.dir.clone();
    let first = init(&lab_dir, &[]);
    assert!(first.contains("on disk: 11 users"), "{first}");

    // Two interrupted clones: the homes of user7 and user9 gone, their
    // temporary trees left. The first becomes the new source (filled over
    // IMAP), the second its clone.
    let homes = std::path::Path::new(&lab_dir).join("mail/bench.test");
    for user in ["user7", "user9"] {
        std::fs::remove_dir_all(homes.join(user)).unwrap();
        let leftover = homes.join(format!(".{user}.peakhour-clone/Maildir/cur"));
        std::fs::create_dir_all(leftover).unwrap();
    }
    let resumed = init(&lab_dir, &[]);
    assert!(
        resumed.contains("cloned user7's mailbox on disk: 1 users"),
        "{resumed}"
    );
    assert!(
        resumed.contains("9 already cloned, 1 checked over IMAP"),
        "{resumed}"
    );
    assert!(resumed.contains("2 half-done clones redone"), "{resumed}");
    assert!(
        resumed.contains("2050 already there, 410 added"),
        "{resumed}"
    );
    assert!(!homes.join(".user7.peakhour-clone").exists());

    let source = seen(&status, 1).await;
    assert!(source.folders.len() >= 44, "{:?}", source.folders);
    // user12 is user1's clone; user9 is user7's, which holds its own mail
    // (the same folders and counts as user1's, other messages).
    assert!(
        seen(&status, 12).await == source,
        "user12 differs from user1"
    );
    let new_source = seen(&status, 7).await;
    assert_eq!(new_source.folders, source.folders);
    assert!(new_source.bodies != source.bodies);
    assert!(
        seen(&status, 9).await == new_source,
        "user9 differs from user7"
    );
}

#[test]
fn issue_25_item_2_an_explicit_target_cannot_be_cloned() {
    let output = std::process::Command::new(common::PEAKHOUR)
        .args([
            "init",
            "--profile",
            "mmb-medium",
            "--target",
            "explicit",
            "--imap",
            "imap://127.0.0.1:9",
            "--smtp",
            "smtp://127.0.0.1:9",
            "--users",
            "20",
            "--via",
            "clone",
        ])
        .env("PEAKHOUR_PASSWORD", "irrelevant")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot be cloned"), "{stderr}");
}
