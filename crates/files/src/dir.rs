//! A directory on any mounted file system, local or remote.
//!
//! Every operation is a system call on a blocking thread (tokio's pool), timed on that
//! thread from just before the call to just after, so the time is the file system's and
//! not the pool's queue.
//!
//! ## The client's page cache
//!
//! Seed 004 warns that a test system "may cache some or all of the workspace in its own
//! RAM causing the NetBench test program not to go over the network to the file server as
//! frequently as expected", inflating results by up to 75%. On a network file system (NFS,
//! CIFS/SMB, FUSE, Ceph, 9P, ...) the Linux page cache is exactly such a client cache, so
//! [`CachePolicy::Bypass`] (what [`CachePolicy::Auto`] picks there) keeps it out:
//!
//! - before each read, `posix_fadvise(DONTNEED)` drops the range from the cache (not
//!   timed), so the read goes to the server;
//! - each write is followed by `fdatasync`, timed with the write: a write counts as done
//!   when the server has it, not when it sits in the client's memory. Then the range is
//!   dropped again so a later read cannot hit it.
//!
//! `O_DIRECT` would do the same in one flag, but it needs offsets, lengths and buffers
//! aligned to the device's block size, and NetBench's operations (a 1-byte write at offset
//! 65,534, 543-byte reads) are not. `fdatasync` makes a directory write stricter than an
//! SMB write, which is not forced to stable storage; compare the two only on reads.
//!
//! On a local file system there is no separate client: the page cache is the file
//! server's own cache, as a file server's RAM is in seed 004, and [`CachePolicy::Auto`]
//! keeps it ([`CachePolicy::Keep`]). `Bypass` on a local file system measures the disk
//! instead.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, PosixFadviseAdvice, RenameFlags};

use crate::{
    BackendError, CHUNK, Entry, FileBackend, Handle, ListResult, Listing, NtStatus, OpResult,
    Outcome, Timed, check_path, write_pattern,
};

/// How the directory backend treats the client's page cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CachePolicy {
    /// [`CachePolicy::Bypass`] on a network file system, [`CachePolicy::Keep`] on a local one.
    #[default]
    Auto,
    /// Drop read ranges from the cache before reading; `fdatasync` after each write.
    Bypass,
    /// Leave the page cache alone.
    Keep,
}

/// `statfs` magic numbers of file systems whose data lives on another machine.
const NETWORK_FILE_SYSTEMS: &[(i64, &str)] = &[
    (0x6969, "nfs"),
    (0xFF53_4D42, "cifs"),
    (0xFE53_4D42, "smb2"),
    (0x517B, "smb"),
    (0x6573_5546, "fuse"),
    (0x00C3_6400, "ceph"),
    (0x0102_1997, "9p"),
    (0x5346_414F, "afs"),
    (0x0BD0_0BD0, "lustre"),
];

/// A directory backend: one client's operations under `root`.
pub struct DirBackend {
    root: PathBuf,
    bypass: bool,
    network: Option<&'static str>,
    files: HashMap<Handle, Arc<File>>,
}

fn timed(f: impl FnOnce() -> Outcome) -> Timed<Outcome> {
    let start = Instant::now();
    let value = f();
    Timed {
        value,
        elapsed: start.elapsed(),
    }
}

fn status_of(e: &std::io::Error) -> NtStatus {
    e.raw_os_error().map_or(NtStatus::UNSUCCESSFUL, |n| {
        NtStatus::from_errno(Errno::from_raw(n))
    })
}

/// Runs a blocking operation on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| BackendError::Worker(op))
}

/// A missing file whose directory is missing too is `OBJECT_PATH_NOT_FOUND`, as on a
/// Windows or Samba server.
fn refine_not_found(mut t: Timed<Outcome>, path: &Path) -> Timed<Outcome> {
    if t.value.status == NtStatus::OBJECT_NAME_NOT_FOUND
        && path.parent().is_some_and(|p| !p.is_dir())
    {
        t.value.status = NtStatus::OBJECT_PATH_NOT_FOUND;
    }
    t
}

fn drop_cached(file: &File, offset: u64, len: u64) {
    // Advice only: if the kernel ignores it, the read is served from the cache, which
    // is what Keep would do. There is nothing better to do with an error here.
    let _ = nix::fcntl::posix_fadvise(
        file,
        i64::try_from(offset).unwrap_or(i64::MAX),
        i64::try_from(len).unwrap_or(i64::MAX),
        PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    );
}

fn range_lock(file: &File, kind: libc::c_short, offset: u64, len: u64) -> Outcome {
    let lock = libc::flock {
        l_type: kind,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: i64::try_from(offset).unwrap_or(i64::MAX),
        l_len: i64::try_from(len).unwrap_or(i64::MAX),
        l_pid: 0,
    };
    // Open-file-description locks: owned by this open file, like an SMB lock by its handle
    // (classic POSIX locks belong to the process and would not conflict between clients).
    match nix::fcntl::fcntl(file, FcntlArg::F_OFD_SETLK(&lock)) {
        Ok(_) => Outcome::ok(0),
        Err(Errno::EAGAIN | Errno::EACCES) => Outcome::with_status(NtStatus::LOCK_NOT_GRANTED),
        Err(e) => Outcome::with_status(NtStatus::from_errno(e)),
    }
}

impl DirBackend {
    /// A backend for operations under `root`, which must be an existing directory.
    pub fn new(root: impl Into<PathBuf>, policy: CachePolicy) -> Result<DirBackend, BackendError> {
        let root = root.into();
        let root_error = |source| BackendError::Root {
            path: root.display().to_string(),
            source,
        };
        if !std::fs::metadata(&root).map_err(root_error)?.is_dir() {
            return Err(root_error(std::io::Error::other("not a directory")));
        }
        let fs = nix::sys::statfs::statfs(&root).map_err(|e| root_error(e.into()))?;
        let magic = fs.filesystem_type().0 as i64;
        let network = NETWORK_FILE_SYSTEMS
            .iter()
            .find(|(m, _)| *m == magic)
            .map(|(_, name)| *name);
        let bypass = match policy {
            CachePolicy::Auto => network.is_some(),
            CachePolicy::Bypass => true,
            CachePolicy::Keep => false,
        };
        Ok(DirBackend {
            root,
            bypass,
            network,
            files: HashMap::new(),
        })
    }

    /// Whether reads and writes keep the client's page cache out (see the module docs).
    pub fn bypasses_cache(&self) -> bool {
        self.bypass
    }

    /// The network file system the root is on (`nfs`, `cifs`, ...), if any.
    pub fn network_file_system(&self) -> Option<&'static str> {
        self.network
    }

    fn path(&self, path: &str) -> Result<PathBuf, BackendError> {
        check_path(path)?;
        Ok(self.root.join(path))
    }

    fn file(&self, handle: Handle) -> Result<Arc<File>, BackendError> {
        self.files
            .get(&handle)
            .cloned()
            .ok_or(BackendError::UnknownHandle(handle))
    }

    async fn open_with(
        &mut self,
        op: &'static str,
        handle: Handle,
        path: &str,
        options: OpenOptions,
    ) -> OpResult {
        if self.files.contains_key(&handle) {
            return Err(BackendError::HandleInUse(handle));
        }
        let full = self.path(path)?;
        let (t, file) = blocking(op, {
            let full = full.clone();
            move || {
                let mut opened = None;
                let t = timed(|| match options.open(&full) {
                    Ok(file) => {
                        opened = Some(file);
                        Outcome::ok(0)
                    }
                    Err(e) => Outcome::with_status(status_of(&e)),
                });
                (t, opened)
            }
        })
        .await?;
        if let Some(file) = file {
            self.files.insert(handle, Arc::new(file));
        }
        Ok(refine_not_found(t, &full))
    }
}

impl DirBackend {
    /// Closes every open file (dropping it closes it; its locks go with it).
    pub fn close_all(&mut self) {
        self.files.clear();
    }
}

impl FileBackend for DirBackend {
    fn kind(&self) -> &'static str {
        "dir"
    }

    async fn make_dir(&mut self, path: &str) -> OpResult {
        let full = self.path(path)?;
        let t = blocking("mkdir", {
            let full = full.clone();
            move || {
                timed(|| match std::fs::create_dir(&full) {
                    Ok(()) => Outcome::ok(0),
                    Err(e) => Outcome::with_status(status_of(&e)),
                })
            }
        })
        .await?;
        Ok(refine_not_found(t, &full))
    }

    async fn remove_dir(&mut self, path: &str) -> OpResult {
        let full = self.path(path)?;
        blocking("rmdir", move || {
            timed(|| match std::fs::remove_dir(&full) {
                Ok(()) => Outcome::ok(0),
                Err(e) => Outcome::with_status(status_of(&e)),
            })
        })
        .await
    }

    async fn create(&mut self, handle: Handle, path: &str) -> OpResult {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(true);
        self.open_with("create", handle, path, options).await
    }

    async fn open(&mut self, handle: Handle, path: &str) -> OpResult {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        self.open_with("open", handle, path, options).await
    }

    async fn read(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        let file = self.file(handle)?;
        let bypass = self.bypass;
        blocking("read", move || {
            if bypass {
                drop_cached(&file, offset, u64::from(len));
            }
            let mut buf = vec![0u8; (len as usize).min(CHUNK)];
            timed(|| {
                let mut done: u64 = 0;
                while done < u64::from(len) {
                    let want = (u64::from(len) - done).min(buf.len() as u64) as usize;
                    match file.read_at(&mut buf[..want], offset + done) {
                        Ok(0) => break,
                        Ok(n) => done += n as u64,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Outcome::with_status(status_of(&e)),
                    }
                }
                if done == 0 && len > 0 {
                    Outcome::with_status(NtStatus::END_OF_FILE)
                } else {
                    Outcome::ok(done)
                }
            })
        })
        .await
    }

    async fn write(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        let file = self.file(handle)?;
        let bypass = self.bypass;
        blocking("write", move || {
            let pattern = write_pattern();
            let t = timed(|| {
                let mut done: u64 = 0;
                while done < u64::from(len) {
                    let n = (u64::from(len) - done).min(pattern.len() as u64) as usize;
                    if let Err(e) = file.write_all_at(&pattern[..n], offset + done) {
                        return Outcome::with_status(status_of(&e));
                    }
                    done += n as u64;
                }
                if bypass && let Err(e) = file.sync_data() {
                    return Outcome::with_status(status_of(&e));
                }
                Outcome::ok(done)
            });
            if bypass {
                drop_cached(&file, offset, u64::from(len));
            }
            t
        })
        .await
    }

    async fn seek(&mut self, handle: Handle, _offset: u64) -> OpResult {
        let start = Instant::now();
        self.file(handle)?;
        Ok(Timed {
            value: Outcome::ok(0),
            elapsed: start.elapsed(),
        })
    }

    async fn close(&mut self, handle: Handle) -> OpResult {
        let file = self
            .files
            .remove(&handle)
            .ok_or(BackendError::UnknownHandle(handle))?;
        blocking("close", move || {
            timed(|| {
                // close(2) happens when the last reference goes; a blocking thread may
                // still hold one for a moment, which cannot happen here: every operation
                // on this handle has finished before this one started.
                drop(file);
                Outcome::ok(0)
            })
        })
        .await
    }

    async fn delete(&mut self, path: &str) -> OpResult {
        let full = self.path(path)?;
        let t = blocking("delete", {
            let full = full.clone();
            move || {
                timed(|| match std::fs::remove_file(&full) {
                    Ok(()) => Outcome::ok(0),
                    Err(e) => Outcome::with_status(status_of(&e)),
                })
            }
        })
        .await?;
        Ok(refine_not_found(t, &full))
    }

    async fn rename(&mut self, from: &str, to: &str) -> OpResult {
        let (from, to) = (self.path(from)?, self.path(to)?);
        let t = blocking("rename", {
            let from = from.clone();
            move || {
                // NOREPLACE: an SMB rename does not replace an existing name either.
                timed(|| {
                    match nix::fcntl::renameat2(
                        nix::fcntl::AT_FDCWD,
                        &from,
                        nix::fcntl::AT_FDCWD,
                        &to,
                        RenameFlags::RENAME_NOREPLACE,
                    ) {
                        Ok(()) => Outcome::ok(0),
                        Err(e) => Outcome::with_status(NtStatus::from_errno(e)),
                    }
                })
            }
        })
        .await?;
        Ok(refine_not_found(t, &from))
    }

    async fn list(&mut self, dir: &str) -> OpResult {
        let full = self.path(dir)?;
        blocking("list", move || {
            timed(|| {
                let entries = match std::fs::read_dir(&full) {
                    Ok(entries) => entries,
                    Err(e) => return Outcome::with_status(status_of(&e)),
                };
                let mut count: u32 = 0;
                for entry in entries {
                    if let Err(e) = entry {
                        return Outcome::with_status(status_of(&e));
                    }
                    count = count.saturating_add(1);
                }
                Outcome {
                    status: NtStatus::OK,
                    bytes: 0,
                    entries: count,
                }
            })
        })
        .await
    }

    async fn list_entries(&mut self, dir: &str) -> ListResult {
        let full = self.path(dir)?;
        blocking("list", move || {
            let start = Instant::now();
            let mut listing = Listing {
                status: NtStatus::OK,
                entries: Vec::new(),
            };
            match std::fs::read_dir(&full) {
                Err(e) => listing.status = status_of(&e),
                Ok(entries) => {
                    for entry in entries {
                        match entry {
                            Ok(entry) => listing.entries.push(Entry {
                                name: entry.file_name().to_string_lossy().into_owned(),
                                is_dir: entry.file_type().is_ok_and(|t| t.is_dir()),
                            }),
                            Err(e) => {
                                listing.status = status_of(&e);
                                break;
                            }
                        }
                    }
                }
            }
            Timed {
                value: listing,
                elapsed: start.elapsed(),
            }
        })
        .await
    }

    async fn get_attributes(&mut self, path: &str) -> OpResult {
        let full = self.path(path)?;
        let t = blocking("get_attributes", {
            let full = full.clone();
            move || {
                timed(|| match std::fs::metadata(&full) {
                    Ok(_) => Outcome::ok(0),
                    Err(e) => Outcome::with_status(status_of(&e)),
                })
            }
        })
        .await?;
        Ok(refine_not_found(t, &full))
    }

    async fn set_attributes(&mut self, handle: Handle) -> OpResult {
        let file = self.file(handle)?;
        blocking("set_attributes", move || {
            timed(|| match file.set_modified(SystemTime::now()) {
                Ok(()) => Outcome::ok(0),
                Err(e) => Outcome::with_status(status_of(&e)),
            })
        })
        .await
    }

    async fn lock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        let file = self.file(handle)?;
        blocking("lock", move || {
            timed(|| range_lock(&file, libc::F_WRLCK as libc::c_short, offset, len))
        })
        .await
    }

    async fn unlock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        let file = self.file(handle)?;
        blocking("unlock", move || {
            timed(|| range_lock(&file, libc::F_UNLCK as libc::c_short, offset, len))
        })
        .await
    }

    async fn flush(&mut self, handle: Handle) -> OpResult {
        let file = self.file(handle)?;
        blocking("flush", move || {
            timed(|| match file.sync_data() {
                Ok(()) => Outcome::ok(0),
                Err(e) => Outcome::with_status(status_of(&e)),
            })
        })
        .await
    }

    async fn fs_info(&mut self) -> OpResult {
        let root = self.root.clone();
        blocking("fs_info", move || {
            timed(|| match nix::sys::statvfs::statvfs(&root) {
                Ok(_) => Outcome::ok(0),
                Err(e) => Outcome::with_status(NtStatus::from_errno(e)),
            })
        })
        .await
    }
}
