//! Issue 11 point 6: the lab runs as root, so it must not harm what is not
//! its own: a directory of somebody else's, a symbolic link, a file placed in
//! the lab after it started, or a process a tampered `state.json` names.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use common::{Bystander, config, lab_processes, scratch_dir};
use peakhour_lab::{Lab, LabError};

/// Every path under `root` (not following links) with its mode, owner,
/// and contents or link target: what "nothing changed" is checked against.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u32, u32, String)> {
    let mut seen = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let what = if meta.file_type().is_symlink() {
            format!("-> {}", fs::read_link(&path).unwrap().display())
        } else if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            "dir".to_owned()
        } else {
            fs::read_to_string(&path).unwrap()
        };
        seen.insert(path, (meta.mode(), meta.uid(), what));
    }
    seen
}

fn expect_unsafe_dir(error: LabError, needle: &str) {
    let text = error.to_string();
    assert!(
        matches!(error, LabError::UnsafeDir { .. }),
        "expected UnsafeDir, got {error:?}"
    );
    assert!(text.contains(needle), "{text:?} should say {needle:?}");
}

/// A user's directory: mode 0751, a private file and a sub-directory.
fn users_directory(parent: &Path) -> PathBuf {
    let dir = parent.join("home-of-someone");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o751)).unwrap();
    fs::write(dir.join("thesis.txt"), "four years of work").unwrap();
    fs::set_permissions(dir.join("thesis.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::create_dir(dir.join("mail")).unwrap();
    dir
}

#[test]
fn issue_11_up_on_a_non_empty_foreign_directory_is_refused_and_nothing_changes() {
    let parent = scratch_dir();
    let dir = users_directory(parent.path());
    let before = snapshot(&dir);
    let error = Lab::up(&config(&dir, 2)).unwrap_err();
    expect_unsafe_dir(error, "not a peakhour lab");
    assert_eq!(snapshot(&dir), before, "the refused directory was changed");
    // `down` and `status` find no lab there either, and change nothing.
    assert!(Lab::new(&dir).status().is_err());
    assert!(Lab::new(&dir).down(true).is_err());
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn issue_11_up_through_a_symbolic_link_is_refused_and_nothing_changes() {
    let parent = scratch_dir();
    let target = parent.path().join("real");
    fs::create_dir(&target).unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
    let link = parent.path().join("lab");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let before = snapshot(parent.path());
    let error = Lab::up(&config(&link, 2)).unwrap_err();
    expect_unsafe_dir(error, "symbolic link");
    assert_eq!(snapshot(parent.path()), before);
    // A link to a user's directory, too.
    let users = users_directory(parent.path());
    let to_users = parent.path().join("lab2");
    std::os::unix::fs::symlink(&users, &to_users).unwrap();
    let before = snapshot(parent.path());
    expect_unsafe_dir(Lab::up(&config(&to_users, 2)).unwrap_err(), "symbolic link");
    assert_eq!(snapshot(parent.path()), before);
}

#[test]
fn issue_11_directories_others_could_change_are_refused_and_not_chmodded() {
    let parent = scratch_dir();
    let shared = parent.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o775)).unwrap();
    let before = snapshot(&shared);
    expect_unsafe_dir(
        Lab::up(&config(&shared, 2)).unwrap_err(),
        "writable by its group or by others (mode 0775)",
    );
    assert_eq!(snapshot(&shared), before);

    let someones = parent.path().join("someones");
    fs::create_dir(&someones).unwrap();
    fs::set_permissions(&someones, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&someones, Some(1000), Some(1000)).unwrap();
    let before = snapshot(&someones);
    expect_unsafe_dir(
        Lab::up(&config(&someones, 2)).unwrap_err(),
        "owned by uid 1000",
    );
    assert_eq!(snapshot(&someones), before);

    // Empty and root's, but 0700: the servers could not reach it, and the
    // lab says how to fix that instead of changing the mode itself.
    let private = parent.path().join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let before = snapshot(&private);
    expect_unsafe_dir(Lab::up(&config(&private, 2)).unwrap_err(), "chmod o+x");
    assert_eq!(snapshot(&private), before);
}

#[test]
fn issue_11_purge_removes_what_the_lab_made_and_keeps_a_file_placed_after_up() {
    let parent = scratch_dir();
    let dir = parent.path().join("lab");
    let lab_config = config(&dir, 2);
    let status = Lab::up(&lab_config).unwrap().status;
    assert!(status.healthy, "{status:#?}");
    // Somebody keeps notes in the lab directory while it runs.
    fs::write(dir.join("notes.txt"), "run 3 was the good one").unwrap();
    let report = Lab::new(&dir).down(true).unwrap();
    let purge = report.purge.expect("purged");
    assert_eq!(purge.kept, vec![dir.join("notes.txt")]);
    assert!(!purge.removed_dir, "the directory still holds the notes");
    assert_eq!(
        fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "run 3 was the good one"
    );
    let left: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec!["notes.txt"], "only the notes are left");
    // What is left is no longer a lab, and the lab will not move back in.
    expect_unsafe_dir(Lab::up(&lab_config).unwrap_err(), "not a peakhour lab");

    // A directory the lab made and nobody else used goes entirely.
    let dir = parent.path().join("lab2");
    Lab::up(&config(&dir, 2)).unwrap();
    let purge = Lab::new(&dir).down(true).unwrap().purge.unwrap();
    assert!(purge.removed_dir);
    assert!(!dir.exists());

    // An empty directory that was there before is used, keeps its mode, and stays.
    let existing = parent.path().join("existing");
    fs::create_dir(&existing).unwrap();
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o711)).unwrap();
    Lab::up(&config(&existing, 2)).unwrap();
    assert_eq!(fs::metadata(&existing).unwrap().mode() & 0o7777, 0o711);
    let purge = Lab::new(&existing).down(true).unwrap().purge.unwrap();
    assert!(!purge.removed_dir);
    assert_eq!(fs::read_dir(&existing).unwrap().count(), 0);
}

#[test]
fn issue_11_planted_links_inside_the_lab_are_not_followed() {
    let dir = scratch_dir();
    let lab_config = config(dir.path(), 2);
    Lab::up(&lab_config).unwrap();
    let lab = Lab::new(dir.path());
    lab.down(false).unwrap();
    // Replace the lab's Dovecot configuration with a link to a file of someone else's.
    let victim = scratch_dir();
    let precious = victim.path().join("precious.conf");
    fs::write(&precious, "do not touch").unwrap();
    let conf = lab.layout().dovecot_conf();
    fs::remove_file(&conf).unwrap();
    std::os::unix::fs::symlink(&precious, &conf).unwrap();
    let error = Lab::up(&lab_config).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(fs::read_to_string(&precious).unwrap(), "do not touch");
    // A linked state file is replaced, never written through.
    fs::remove_file(&conf).unwrap();
    let state = lab.layout().state_file();
    let state_text = fs::read_to_string(&state).unwrap();
    fs::write(victim.path().join("state.json"), &state_text).unwrap();
    fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink(victim.path().join("state.json"), &state).unwrap();
    // Reading through the link is refused too, so `up` cannot trust it.
    assert!(Lab::up(&lab_config).is_err());
    assert_eq!(
        fs::read_to_string(victim.path().join("state.json")).unwrap(),
        state_text
    );
}

#[test]
fn issue_11_a_tampered_state_cannot_direct_down_at_other_processes() {
    let dir = scratch_dir();
    let status = Lab::up(&config(dir.path(), 2)).unwrap().status;
    let lab = Lab::new(dir.path());
    let report = lab.down(false).unwrap();
    assert!(report.not_ours.is_empty(), "{report:?}");
    assert!(lab_processes(&status).len() > 2);

    let bystander = Bystander::start();
    let victim = bystander.id();
    // Name the bystander as both masters, with its true start time.
    let state_file = lab.layout().state_file();
    let mut state: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state_file).unwrap()).unwrap();
    let planted = serde_json::json!({"pid": victim.pid, "start_ticks": victim.start_ticks});
    state["dovecot"] = planted.clone();
    state["postfix"] = planted;
    fs::write(&state_file, serde_json::to_string(&state).unwrap()).unwrap();

    let report = lab.down(false).unwrap();
    assert!(victim.is_alive(), "down killed a process it did not start");
    assert!(report.stopped.is_empty(), "{report:?}");
    assert_eq!(report.killed, 0);
    assert_eq!(report.not_ours.len(), 2, "{report:?}");
    assert!(
        report.not_ours[0].contains(&format!("pid {}", victim.pid))
            && report.not_ours[0].contains("sleep"),
        "{:?}",
        report.not_ours
    );
    // `status` does not count it as the lab's either, and `up` starts afresh
    // without touching it.
    let status = lab.status().unwrap();
    assert!(
        status
            .servers
            .iter()
            .all(|s| !s.running && s.processes.is_empty())
    );
    fs::write(&state_file, serde_json::to_string(&state).unwrap()).unwrap();
    let up = Lab::up(&config(dir.path(), 2)).unwrap();
    assert!(!up.already_running);
    assert!(victim.is_alive(), "up killed a process it did not start");
    lab.down(false).unwrap();
    assert!(victim.is_alive());
}
