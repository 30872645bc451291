//! The lab directory: which directories the lab may use, what it made in
//! them, and file operations that never follow a symbolic link.
//!
//! The lab runs as root and writes configuration that root-run servers read,
//! so its directory must be one nobody else can change: owned by root and
//! writable by nobody else. It must also be the lab's own: a new directory,
//! an empty one, or one that holds the lab's manifest. The lab never changes
//! the mode of a directory it did not create, and `--purge` removes only the
//! entries its manifest lists.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::fs::{PermissionsExt as _, fchown};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use serde::{Deserialize, Serialize};

use crate::LabError;

/// The file that marks a directory as a lab and lists what the lab made in it.
pub(crate) const MANIFEST: &str = "lab-manifest.json";

/// Every entry the lab makes at the top of its directory.
const LAB_ENTRIES: [&str; 9] = [
    MANIFEST,
    "state.json",
    "tls",
    "dovecot",
    "postfix",
    "mail",
    "radicale",
    "samba",
    "cyrus",
];

/// What the lab made in its directory (`lab-manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// A sentence for whoever finds the file.
    about: String,
    /// True if `lab up` created the directory itself; `--purge` then removes
    /// it too, once nothing else is left in it.
    pub(crate) created_dir: bool,
    /// The top-level entries the lab created: the only ones `--purge` removes.
    pub(crate) created: Vec<String>,
}

impl Manifest {
    fn new(created_dir: bool) -> Self {
        Manifest {
            about: "Written by `peakhour lab up`: this directory is a peakhour lab. \
                    `peakhour lab down --purge` removes only the entries listed in `created`."
                .into(),
            created_dir,
            created: Vec::new(),
        }
    }

    pub(crate) fn load(dir: &Path) -> Result<Option<Manifest>, LabError> {
        let path = dir.join(MANIFEST);
        let text = match read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LabError::io(&path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| LabError::BadState {
                path,
                reason: e.to_string(),
            })
    }

    fn save(&self, dir: &Path) -> Result<(), LabError> {
        let path = dir.join(MANIFEST);
        let json = serde_json::to_string_pretty(self).map_err(|e| LabError::BadState {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        replace_file(&path, json.as_bytes(), 0o644)
    }
}

/// What `--purge` removed and what it left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// The lab's own entries that were removed.
    pub removed: Vec<PathBuf>,
    /// Entries the lab did not make, left where they are.
    pub kept: Vec<PathBuf>,
    /// True if the directory itself was removed (the lab made it, and it was
    /// empty once the lab's entries were gone).
    pub removed_dir: bool,
}

/// Makes `dir` the lab's: creates it if it does not exist, or checks that an
/// existing one is safe and the lab's to use, then records what the lab will
/// create in it. Returns its canonical path.
pub(crate) fn claim(dir: &Path) -> Result<PathBuf, LabError> {
    let created_dir = match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            create_new_dir(dir)?;
            true
        }
        Err(e) => return Err(LabError::io(dir, e)),
        Ok(meta) => {
            check_owned_by_root(dir, &meta)?;
            false
        }
    };
    let root = dir.canonicalize().map_err(|e| LabError::io(dir, e))?;
    check_traversable(&root)?;
    let mut manifest = match Manifest::load(&root)? {
        Some(manifest) => manifest,
        None if created_dir => Manifest::new(true),
        None => adopt(&root)?,
    };
    for entry in LAB_ENTRIES {
        let absent = matches!(fs::symlink_metadata(root.join(entry)), Err(e) if e.kind() == ErrorKind::NotFound);
        if absent && !manifest.created.iter().any(|c| c == entry) {
            manifest.created.push(entry.to_owned());
        }
    }
    manifest.save(&root)?;
    Ok(root)
}

/// The manifest for an existing directory without one: an empty directory
/// becomes a lab; one holding a `state.json` is a lab from before manifests,
/// and every lab entry in it is the lab's; anything else is refused.
fn adopt(root: &Path) -> Result<Manifest, LabError> {
    let found: Vec<String> = fs::read_dir(root)
        .map_err(|e| LabError::io(root, e))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    if found.is_empty() {
        return Ok(Manifest::new(false));
    }
    let has_state = fs::symlink_metadata(root.join("state.json")).is_ok_and(|m| m.is_file());
    if has_state {
        let mut manifest = Manifest::new(false);
        manifest.created = LAB_ENTRIES
            .iter()
            .filter(|entry| found.iter().any(|f| f == *entry))
            .map(|entry| (*entry).to_owned())
            .collect();
        return Ok(manifest);
    }
    let mut listed: Vec<&str> = found.iter().map(String::as_str).collect();
    listed.sort_unstable();
    listed.truncate(5);
    let more = found.len().saturating_sub(listed.len());
    Err(LabError::UnsafeDir {
        dir: root.to_owned(),
        reason: format!(
            "it is not empty ({}{}) and is not a peakhour lab (it has no {MANIFEST}). The lab \
             starts only in a new directory, an empty one, or one it made itself, so that it \
             never mixes its files with others or removes them on --purge. Give a new path \
             with --lab-dir",
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
    })
}

/// Checks an existing lab directory before `down` or `status` trusts what is
/// in it: a real directory, owned by root, writable by nobody else.
pub(crate) fn check_existing(dir: &Path) -> Result<(), LabError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => Err(LabError::NoLab(dir.to_owned())),
        Err(e) => Err(LabError::io(dir, e)),
        Ok(meta) => check_owned_by_root(dir, &meta),
    }
}

/// A real directory (not a link), owned by root, not writable by group or others.
fn check_owned_by_root(dir: &Path, meta: &fs::Metadata) -> Result<(), LabError> {
    let refuse = |reason: String| {
        Err(LabError::UnsafeDir {
            dir: dir.to_owned(),
            reason,
        })
    };
    if meta.file_type().is_symlink() {
        let target = fs::read_link(dir)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return refuse(format!(
            "it is a symbolic link (to {target}); the lab does not follow links for its \
             directory, so that nobody can redirect what it writes as root. Give the real path"
        ));
    }
    if !meta.is_dir() {
        return refuse("it is not a directory".into());
    }
    if meta.uid() != 0 {
        return refuse(format!(
            "it is owned by uid {}, not by root; the lab runs as root and its servers trust \
             the files in it, so its directory must be one only root can change",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return refuse(format!(
            "it is writable by its group or by others (mode {mode:04o}), so another user could \
             plant files the lab's servers would trust as root"
        ));
    }
    Ok(())
}

/// Creates the lab directory (and missing parents) with mode 0755: the
/// servers run as their own users and must reach their files in it.
fn create_new_dir(dir: &Path) -> Result<(), LabError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| LabError::io(parent, e))?;
    }
    fs::DirBuilder::new()
        .mode(0o755)
        .create(dir)
        .map_err(|e| LabError::io(dir, e))?;
    // The umask may have taken bits away; this directory is the lab's own.
    let handle = open_dir(dir).map_err(|e| LabError::io(dir, e))?;
    handle
        .set_permissions(fs::Permissions::from_mode(0o755))
        .map_err(|e| LabError::io(dir, e))
}

/// The lab directory and every ancestor must be searchable by others, or
/// Postfix (as user postfix) and Dovecot cannot reach the lab's files. The
/// lab does not change the mode of a directory it did not create, so it says
/// what to do instead.
fn check_traversable(dir: &Path) -> Result<(), LabError> {
    for ancestor in dir.ancestors() {
        let Ok(meta) = fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode() & 0o7777;
        if mode & 0o001 == 0 {
            let what = if ancestor == dir {
                "the lab directory"
            } else {
                "a parent of the lab directory"
            };
            return Err(LabError::UnsafeDir {
                dir: dir.to_owned(),
                reason: format!(
                    "{what}, {}, is not searchable by other users (mode {mode:04o}), so Postfix \
                     and Dovecot, which run as their own users, cannot reach the lab. The lab \
                     does not change the mode of a directory it did not create: run `chmod o+x \
                     {}`, or give a new path under a directory such as /var/tmp",
                    ancestor.display(),
                    ancestor.display()
                ),
            });
        }
    }
    Ok(())
}

/// Removes the entries the manifest lists (not following links), then the
/// directory itself if the lab made it and nothing else is in it.
pub(crate) fn purge(root: &Path) -> Result<PurgeReport, LabError> {
    let Some(manifest) = Manifest::load(root)? else {
        return Err(LabError::UnsafeDir {
            dir: root.to_owned(),
            reason: format!("it has no {MANIFEST}, so the lab cannot tell what it made there"),
        });
    };
    let mut report = PurgeReport::default();
    // The manifest last: an interrupted purge still leaves a lab behind.
    let mut entries: Vec<&String> = manifest.created.iter().filter(|e| *e != MANIFEST).collect();
    let manifest_name = MANIFEST.to_owned();
    entries.push(&manifest_name);
    for entry in entries {
        // Only plain names: a tampered manifest cannot point outside the lab.
        if !LAB_ENTRIES.contains(&entry.as_str()) {
            continue;
        }
        let path = root.join(entry);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(LabError::io(&path, e)),
            // remove_dir_all does not follow links inside the tree either.
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
        }
        .map_err(|e| LabError::io(&path, e))?;
        report.removed.push(path);
    }
    report.kept = fs::read_dir(root)
        .map_err(|e| LabError::io(root, e))?
        .flatten()
        .map(|entry| entry.path())
        .collect();
    report.kept.sort();
    if manifest.created_dir && report.kept.is_empty() {
        fs::remove_dir(root).map_err(|e| LabError::io(root, e))?;
        report.removed_dir = true;
    }
    Ok(report)
}

fn no_follow() -> i32 {
    OFlag::O_NOFOLLOW.bits()
}

/// Opens a directory itself, refusing a symbolic link.
fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_DIRECTORY.bits() | no_follow())
        .open(path)
}

/// Makes sure `path` is a directory of the lab's (creating it if missing)
/// with `mode` and, if given, `owner` (uid, gid). A symbolic link in its
/// place is refused rather than followed.
pub(crate) fn ensure_dir(
    path: &Path,
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<(), LabError> {
    match fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(LabError::io(path, e)),
    }
    let handle = open_dir(path).map_err(|e| refusing_links(path, e))?;
    handle
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| LabError::io(path, e))?;
    if let Some((uid, gid)) = owner {
        fchown(&handle, Some(uid), Some(gid)).map_err(|e| LabError::io(path, e))?;
    }
    Ok(())
}

/// Explains the error `O_NOFOLLOW` gives for a link (ELOOP) or `O_DIRECTORY`
/// for something else (ENOTDIR).
fn refusing_links(path: &Path, error: io::Error) -> LabError {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        LabError::io(
            path,
            io::Error::other(
                "is a symbolic link; the lab does not follow links inside its directory \
                 (remove it, or purge the lab and start afresh)",
            ),
        )
    } else {
        LabError::io(path, error)
    }
}

/// Writes `contents` to `path` (created or truncated) with `mode`, refusing
/// to write through a symbolic link.
pub(crate) fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<File, LabError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| refusing_links(path, e))?;
    file.write_all(contents)
        .map_err(|e| LabError::io(path, e))?;
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| LabError::io(path, e))?;
    Ok(file)
}

/// Replaces `path` atomically: a new sibling (never an existing file or
/// link) is written, synced and renamed over it, so a crash never leaves
/// half a file and a planted link is replaced, not followed.
pub(crate) fn replace_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), LabError> {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(LabError::io(&tmp, e)),
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| LabError::io(&tmp, e))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|e| LabError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| LabError::io(path, e))
}

/// Opens `path` for appending (creating it), refusing a symbolic link.
pub(crate) fn append_file(path: &Path, mode: u32) -> Result<File, LabError> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(mode)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| refusing_links(path, e))
}

/// Reads a file, refusing a symbolic link.
pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// True if `path` is a regular file (a link to one does not count).
pub(crate) fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Removes a file or link if it is there (never what a link points to).
pub(crate) fn remove_if_present(path: &Path) -> Result<(), LabError> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LabError::io(path, e)),
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).map_err(|e| LabError::io(path, e)),
        Ok(_) => fs::remove_file(path).map_err(|e| LabError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn writes_refuse_symbolic_links() {
        let dir = scratch();
        let target = dir.path().join("target");
        fs::write(&target, "precious").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = write_file(&link, b"overwritten", 0o644).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(append_file(&link, 0o644).is_err());
        assert!(read_to_string(&link).is_err());
        assert!(ensure_dir(&link, 0o755, None).is_err());
        // replace_file replaces the link itself.
        replace_file(&link, b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_new_directory_is_claimed_and_purged_whole() {
        let parent = scratch();
        let dir = parent.path().join("lab");
        let root = claim(&dir).unwrap();
        assert_eq!(fs::metadata(&root).unwrap().mode() & 0o7777, 0o755);
        let manifest = Manifest::load(&root).unwrap().unwrap();
        assert!(manifest.created_dir);
        assert_eq!(manifest.created.len(), LAB_ENTRIES.len());
        ensure_dir(&root.join("mail"), 0o750, None).unwrap();
        let report = purge(&root).unwrap();
        assert!(report.removed_dir, "{report:?}");
        assert!(!root.exists());
    }

    #[test]
    fn purge_keeps_what_the_lab_did_not_make() {
        let parent = scratch();
        let root = claim(&parent.path().join("lab")).unwrap();
        ensure_dir(&root.join("dovecot"), 0o755, None).unwrap();
        fs::write(root.join("notes.txt"), "mine").unwrap();
        let report = purge(&root).unwrap();
        assert_eq!(report.kept, vec![root.join("notes.txt")]);
        assert!(!report.removed_dir);
        assert!(!root.join("dovecot").exists());
        assert_eq!(fs::read_to_string(root.join("notes.txt")).unwrap(), "mine");
    }

    #[test]
    fn foreign_or_unsafe_directories_are_refused_unchanged() {
        let parent = scratch();
        let foreign = parent.path().join("foreign");
        fs::create_dir(&foreign).unwrap();
        fs::set_permissions(&foreign, fs::Permissions::from_mode(0o751)).unwrap();
        fs::write(foreign.join("report.doc"), "mine").unwrap();
        let error = claim(&foreign).unwrap_err();
        assert!(error.to_string().contains("not a peakhour lab"), "{error}");
        assert!(error.to_string().contains("report.doc"), "{error}");
        assert_eq!(fs::metadata(&foreign).unwrap().mode() & 0o7777, 0o751);
        assert!(!foreign.join(MANIFEST).exists());

        let shared = parent.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let error = claim(&shared).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("writable by its group or by others"),
            "{error}"
        );
        assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o7777, 0o777);

        let private = parent.path().join("private");
        fs::create_dir(&private).unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
        let error = claim(&private).unwrap_err();
        assert!(error.to_string().contains("chmod o+x"), "{error}");
        assert_eq!(fs::metadata(&private).unwrap().mode() & 0o7777, 0o700);
        assert!(!private.join(MANIFEST).exists());

        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&foreign, &link).unwrap();
        let error = claim(&link).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
    }

    #[test]
    fn an_empty_safe_directory_is_used_but_kept_on_purge() {
        let parent = scratch();
        let empty = parent.path().join("empty");
        fs::create_dir(&empty).unwrap();
        fs::set_permissions(&empty, fs::Permissions::from_mode(0o711)).unwrap();
        let root = claim(&empty).unwrap();
        assert_eq!(
            fs::metadata(&root).unwrap().mode() & 0o7777,
            0o711,
            "mode kept"
        );
        let report = purge(&root).unwrap();
        assert!(!report.removed_dir);
        assert!(root.exists());
        assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
    }

    #[test]
    fn a_lab_from_before_manifests_is_adopted() {
        let parent = scratch();
        let old = parent.path().join("old");
        fs::create_dir(&old).unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(old.join("state.json"), "{}").unwrap();
        fs::create_dir(old.join("mail")).unwrap();
        let root = claim(&old).unwrap();
        let manifest = Manifest::load(&root).unwrap().unwrap();
        assert!(!manifest.created_dir);
        assert!(manifest.created.iter().any(|e| e == "mail"));
    }
}
