//! Writing a whole file so that a reader, or a crash, never sees half of it:
//! the bytes go to a temporary name in the same directory, are synced, and
//! the temporary file is renamed over the real name (atomic on POSIX), then
//! the directory is synced so the rename itself survives a power cut.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under first: hidden, in the same
/// directory (a rename does not cross file systems), and naming the process
/// so that two writers never share one.
pub(crate) fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` atomically: after a crash the file holds either
/// what it held before or all of `bytes`, never a part.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_name(path);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    sync_parent(path)
}

/// Syncs the directory holding `path`, so that a new name in it is on disk.
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_whole_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        std::fs::write(&path, "old, longer than the new text").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["summary.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: the rename fails.
        let path = dir.path().join("record.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "x").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert!(!temporary_name(&path).exists());
        assert_eq!(std::fs::read_to_string(path.join("inside")).unwrap(), "x");
    }
}
