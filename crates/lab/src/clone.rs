//! Filling the lab's mailboxes fast: one user's home, filled the normal way
//! (over IMAP), copied on disk for every user whose home holds no mail.
//!
//! * **A real copy, not links.** Every user gets its own copy of every file,
//!   so a run reads as many distinct bytes as real users would: hard links
//!   would share one page cache between all users, the small hot working set
//!   the issue warns about (issue 25 item 2).
//! * **The index files are copied as they are.** For sdbox they are the
//!   only record of each message's flags (`\Seen`), of the UIDs' state and
//!   of UIDVALIDITY; without them Dovecot rebuilds the mailbox from the mail
//!   files and the flags are lost. For Maildir they are a cache of the file
//!   names and `dovecot-uidlist`, consistent with the files copied beside
//!   them; deleting them would only make every user's first logon rebuild
//!   them. Lock files and Maildir's `tmp/` contents are not copied.
//! * **Safe while Dovecot runs, for users that hold no mail.** Dovecot opens
//!   a user's home only while a session or a delivery is at work on it; a
//!   clone is built beside the home under a temporary name and renamed into
//!   place in one step, so a session sees the old home or the whole new
//!   one, never half of it. The source must be idle (no run on it) while it
//!   is read.
//! * **Resumable.** A finished clone carries a marker naming what it holds;
//!   a temporary tree left by an interrupted clone is removed and redone.
//!   A user whose home holds mail but no matching marker is left alone and
//!   reported, for the IMAP path to complete.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::LabError;

/// The marker a finished clone leaves in the user's home: what it holds.
pub const CLONE_MARKER: &str = ".peakhour-init";

/// What the mailboxes must hold to count as filled, written into the marker
/// (e.g. the profile, the seed and the message count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneKey(pub String);

/// What a clone of one mailbox into many did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneReport {
    /// Users whose home was filled now.
    pub cloned: u32,
    /// Users whose home already held this clone (their marker matched).
    pub already_filled: u32,
    /// Users whose home holds mail without this clone's marker: left alone
    /// for the IMAP path to complete (local parts).
    pub holding_mail: Vec<String>,
    /// Temporary trees left by an interrupted clone, removed and redone.
    pub redone: u32,
    /// Files copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
}

/// Copies the home of `source` (a local part, e.g. `user1`) under
/// `homes` (the lab's `mail/<domain>`) to each of `targets` that holds no
/// mail, with the source's owner and modes, on `threads` threads. `key`
/// goes into each clone's marker; a target already marked with it is
/// skipped. `on_user` is called as each target is done (for progress).
pub fn clone_mailbox(
    homes: &Path,
    source: &str,
    targets: &[String],
    key: &CloneKey,
    threads: usize,
    on_user: &(dyn Fn() + Sync),
) -> Result<CloneReport, LabError> {
    let source_home = homes.join(source);
    if message_files(&source_home)? == 0 {
        return Err(LabError::BadConfig(format!(
            "cannot clone {}: it holds no mail (fill it first)",
            source_home.display()
        )));
    }
    let report = Mutex::new(CloneReport::default());
    let next = Mutex::new(targets.iter());
    let first_error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let Some(target) = next.lock().map(|mut n| n.next()).ok().flatten() else {
                        return;
                    };
                    let done = clone_one(homes, &source_home, target, key, &report);
                    on_user();
                    if let Err(e) = done {
                        if let Ok(mut first) = first_error.lock() {
                            first.get_or_insert(e);
                        }
                        // Stop the others: what is done stays (a re-run resumes).
                        if let Ok(mut n) = next.lock() {
                            *n = [].iter();
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(report.into_inner().unwrap_or_default())
}

/// Whether `home` holds this clone already: its marker names `key`.
pub fn is_cloned(home: &Path, key: &CloneKey) -> bool {
    fs::read_to_string(home.join(CLONE_MARKER)).is_ok_and(|text| text.trim() == key.0)
}

fn clone_one(
    homes: &Path,
    source_home: &Path,
    target: &str,
    key: &CloneKey,
    report: &Mutex<CloneReport>,
) -> Result<(), LabError> {
    if target.is_empty() || target.starts_with('.') || target.contains('/') {
        return Err(LabError::BadConfig(format!(
            "cannot clone into {target:?}: not a user's home name"
        )));
    }
    let home = homes.join(target);
    let (building, retired) = clone_trees(homes, target);
    let redone = u32::from(clear_half_clone(homes, target)?);
    let add = |f: &dyn Fn(&mut CloneReport)| {
        if let Ok(mut r) = report.lock() {
            r.redone += redone;
            f(&mut r);
        }
    };
    if is_cloned(&home, key) {
        add(&|r| r.already_filled += 1);
        return Ok(());
    }
    if message_files(&home)? > 0 {
        add(&|r| r.holding_mail.push(target.to_owned()));
        return Ok(());
    }
    let (mut files, mut bytes) = (0, 0);
    copy_tree(source_home, &building, &mut files, &mut bytes)?;
    let marker = building.join(CLONE_MARKER);
    // create_new: never through a link someone put in its place.
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
        .and_then(|mut file| io::Write::write_all(&mut file, format!("{}\n", key.0).as_bytes()))
        .map_err(|e| LabError::io(&marker, e))?;
    same_owner(source_home, &marker)?;
    // An empty home (a user that logged on but got no mail) steps aside in
    // one rename, the clone takes its place in another.
    if home.exists() {
        fs::rename(&home, &retired).map_err(|e| LabError::io(&home, e))?;
    }
    fs::rename(&building, &home).map_err(|e| LabError::io(&building, e))?;
    if retired.exists() {
        fs::remove_dir_all(&retired).map_err(|e| LabError::io(&retired, e))?;
    }
    add(&|r| {
        r.cloned += 1;
        r.files += files;
        r.bytes += bytes;
    });
    Ok(())
}

/// Where the clone for `target` is built, and where its empty home steps
/// aside, under `homes`.
fn clone_trees(homes: &Path, target: &str) -> (PathBuf, PathBuf) {
    (
        homes.join(format!(".{target}.peakhour-clone")),
        homes.join(format!(".{target}.peakhour-old")),
    )
}

/// Removes what an interrupted clone for `target` left under `homes`;
/// whether there was anything.
pub fn clear_half_clone(homes: &Path, target: &str) -> Result<bool, LabError> {
    let (building, retired) = clone_trees(homes, target);
    let mut found = false;
    for leftover in [&building, &retired] {
        if leftover.exists() {
            fs::remove_dir_all(leftover).map_err(|e| LabError::io(leftover, e))?;
            found = true;
        }
    }
    Ok(found)
}

/// Files Dovecot leaves only while it works, which a clone must not carry.
fn transient(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_tmp = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "tmp");
    name.ends_with(".lock") || name == CLONE_MARKER || in_tmp
}

/// Copies the tree at `from` to `to` (which must not exist), keeping each
/// entry's mode and owner (the lab's mail uid).
fn copy_tree(from: &Path, to: &Path, files: &mut u64, bytes: &mut u64) -> Result<(), LabError> {
    let meta = fs::symlink_metadata(from).map_err(|e| LabError::io(from, e))?;
    // Root's until it is full: the mail uid cannot slip a link into a
    // directory this copy is still writing.
    fs::create_dir(to).map_err(|e| LabError::io(to, e))?;
    for entry in fs::read_dir(from).map_err(|e| LabError::io(from, e))? {
        let entry = entry.map_err(|e| LabError::io(from, e))?;
        let (path, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| LabError::io(&path, e))?;
        if kind.is_dir() {
            copy_tree(&path, &dest, files, bytes)?;
        } else if kind.is_file() && !transient(&path) {
            match copy_file(&path, &dest) {
                Ok(n) => {
                    *files += 1;
                    *bytes += n;
                }
                // Dovecot may remove a file it was done with (an index log
                // rotated): it was not part of the mailbox's state.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(LabError::io(&path, e)),
            }
            same_owner(&path, &dest)?;
        }
    }
    fs::set_permissions(to, fs::Permissions::from_mode(meta.mode()))
        .map_err(|e| LabError::io(to, e))?;
    same_owner(from, to)
}

/// Copies one file with its mode bits, refusing to read through a link
/// (the mail uid owns the source's directories) and to write through one.
fn copy_file(from: &Path, to: &Path) -> io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let no_follow = nix::fcntl::OFlag::O_NOFOLLOW.bits();
    let mut source = fs::OpenOptions::new()
        .read(true)
        .custom_flags(no_follow)
        .open(from)?;
    let mode = source.metadata()?.mode();
    let mut dest = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode & 0o7777)
        .open(to)?;
    let copied = io::copy(&mut source, &mut dest)?;
    // The mode given at creation passes through the umask: set it whole.
    dest.set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
    Ok(copied)
}

fn same_owner(model: &Path, path: &Path) -> Result<(), LabError> {
    let meta = fs::symlink_metadata(model).map_err(|e| LabError::io(model, e))?;
    std::os::unix::fs::chown(path, Some(meta.uid()), Some(meta.gid()))
        .map_err(|e| LabError::io(path, e))
}

/// The message files under `home` (0 when it does not exist): sdbox keeps
/// one `u.<uid>` file per message in each mailbox's `dbox-Mails`, Maildir
/// one file per message in `cur/` or `new/`.
pub fn message_files(home: &Path) -> Result<u64, LabError> {
    let mut count = 0;
    let mut stack: Vec<PathBuf> = vec![home.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(LabError::io(&dir, e)),
        };
        let parent = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        for entry in entries {
            let entry = entry.map_err(|e| LabError::io(&dir, e))?;
            let kind = entry.file_type().map_err(|e| LabError::io(&dir, e))?;
            let name = entry.file_name();
            let name = name.to_str().unwrap_or("");
            if kind.is_dir() {
                stack.push(entry.path());
            } else if match parent {
                "dbox-Mails" => name.starts_with("u."),
                "cur" | "new" => true,
                _ => false,
            } {
                count += 1;
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn issue_25_item_2_message_files_are_counted_for_both_storages() {
        let dir = tempfile::tempdir().unwrap();
        let sdbox = dir.path().join("user1");
        write(&sdbox.join("mail/mailboxes/INBOX/dbox-Mails/u.1"), "a");
        write(&sdbox.join("mail/mailboxes/INBOX/dbox-Mails/u.2"), "b");
        write(
            &sdbox.join("mail/mailboxes/INBOX/dbox-Mails/dovecot.index"),
            "i",
        );
        write(&sdbox.join("mail/dovecot.list.index"), "l");
        assert_eq!(message_files(&sdbox).unwrap(), 2);
        let maildir = dir.path().join("user2");
        write(&maildir.join("Maildir/cur/1.a:2,S"), "a");
        write(&maildir.join("Maildir/.Sent/new/2.b"), "b");
        write(&maildir.join("Maildir/tmp/3.c"), "c");
        write(&maildir.join("Maildir/dovecot-uidlist"), "3 V1");
        assert_eq!(message_files(&maildir).unwrap(), 2);
        assert_eq!(message_files(&dir.path().join("nobody")).unwrap(), 0);
    }

    #[test]
    fn issue_25_item_2_a_clone_copies_modes_skips_filled_users_and_redoes_a_half_clone() {
        let dir = tempfile::tempdir().unwrap();
        let homes = dir.path();
        let box_file = "mail/mailboxes/INBOX/dbox-Mails/u.1";
        write(&homes.join("user1").join(box_file), "message");
        write(
            &homes.join("user1/mail/mailboxes/INBOX/dbox-Mails/dovecot.index"),
            "i",
        );
        write(&homes.join("user1/mail/dovecot.index.log.lock"), "");
        let index = homes.join("user1/mail/mailboxes/INBOX/dbox-Mails/dovecot.index");
        fs::set_permissions(&index, fs::Permissions::from_mode(0o600)).unwrap();
        // user3 got mail of its own; user4 was half cloned; user2 logged on once.
        write(&homes.join("user3/Maildir/cur/9.x"), "own");
        write(&homes.join(".user4.peakhour-clone/mail/partial"), "x");
        fs::create_dir_all(homes.join("user2/mail")).unwrap();
        let key = CloneKey("mmb-medium seed 1: 1 messages".into());
        let targets: Vec<String> = ["user2", "user3", "user4", "user5"]
            .map(String::from)
            .into();
        let report = clone_mailbox(homes, "user1", &targets, &key, 2, &|| {}).unwrap();
        assert_eq!(report.cloned, 3);
        assert_eq!(report.holding_mail, vec!["user3".to_owned()]);
        assert_eq!(report.redone, 1);
        assert_eq!(report.files, 6, "two files each, the lock file left out");
        for user in ["user2", "user4", "user5"] {
            let home = homes.join(user);
            assert_eq!(fs::read_to_string(home.join(box_file)).unwrap(), "message");
            assert!(is_cloned(&home, &key));
            assert!(!home.join("mail/dovecot.index.log.lock").exists());
            let mode = fs::metadata(home.join("mail/mailboxes/INBOX/dbox-Mails/dovecot.index"))
                .unwrap()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(!homes.join(".user4.peakhour-clone").exists());
        let again = clone_mailbox(homes, "user1", &targets, &key, 2, &|| {}).unwrap();
        assert_eq!((again.cloned, again.already_filled), (0, 3));
        let other = CloneKey("mmb-medium seed 2".into());
        let reseeded = clone_mailbox(homes, "user1", &targets, &other, 1, &|| {}).unwrap();
        assert_eq!(reseeded.holding_mail.len(), 4, "{reseeded:?}");
    }
}
