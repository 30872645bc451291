//! File-operation backends for peakhour: where a file workload's operations land.
//!
//! A [`FileBackend`] performs one client's file operations (create, open, read and write
//! at offsets, seek, close, delete, rename, list, attributes, locks, flush, file-system
//! information) and times each one. Two implement it:
//!
//! - [`DirBackend`]: a directory on any mounted file system (`--dir PATH`: local, NFS,
//!   CIFS). Its [`CachePolicy`] keeps the client's page cache out of the figures on
//!   network file systems, which seed 004 warns about: a client that caches the workspace
//!   in RAM can report throughput "75% above the available network bandwidth".
//! - [`SmbBackend`]: SMB 2/3 straight to a server over TCP, through the `smb2` crate,
//!   without oplocks or leases, so nothing is cached on the client at all.
//!
//! Operations take paths relative to the backend's root with `/` between names, and the
//! caller's own numbers for open files ([`Handle`]). A server's refusal (a missing file,
//! a lock conflict) is not an error: it is the operation's [`NtStatus`] in its
//! [`Outcome`], so a replayed trace can compare it with what it expects. Errors
//! ([`BackendError`]) are for what makes the client itself unable to go on.

#![deny(missing_docs)]

mod any;
mod dir;
mod error;
mod smb;
mod status;
mod tree;

use std::future::Future;

pub use any::AnyBackend;
pub use dir::{CachePolicy, DirBackend};
pub use error::BackendError;
pub use peakhour_net::Timed;
pub use smb::{SmbBackend, SmbTarget};
pub use status::NtStatus;
pub use tree::{MAX_TREE_DEPTH, MAX_TREE_ENTRIES, delete_tree};

/// The caller's number for an open file, valid until it is closed.
pub type Handle = u32;

/// What one operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The server's answer; [`NtStatus::OK`] when it succeeded.
    pub status: NtStatus,
    /// File data moved to or from the server: bytes read or written (NetBench's
    /// throughput counts these). 0 for every other operation.
    pub bytes: u64,
    /// Entries a listing returned (without `.` and `..`); 0 for every other operation.
    pub entries: u32,
}

impl Outcome {
    /// A success that moved `bytes`.
    pub fn ok(bytes: u64) -> Outcome {
        Outcome {
            status: NtStatus::OK,
            bytes,
            entries: 0,
        }
    }

    /// An answer with `status` that moved no data (a refusal, or a success of an
    /// operation that moves none).
    pub fn with_status(status: NtStatus) -> Outcome {
        Outcome {
            status,
            bytes: 0,
            entries: 0,
        }
    }
}

/// The result of one timed operation.
pub type OpResult = Result<Timed<Outcome>, BackendError>;

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name, without the directory.
    pub name: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// A directory's entries (without `.` and `..`), or the status that refused the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The server's answer; [`NtStatus::OK`] when it listed.
    pub status: NtStatus,
    /// The entries, in the server's order.
    pub entries: Vec<Entry>,
}

/// The result of one timed listing by name.
pub type ListResult = Result<Timed<Listing>, BackendError>;

/// One client's connection to a file target. Every method performs one operation and
/// returns its [`Outcome`] with the time it took on the wire (or in the system call).
///
/// Methods take `&mut self`: one client performs one operation at a time, as a NetBench
/// test system does. Run many clients as many backends.
pub trait FileBackend: Send {
    /// `dir` or `smb`, for results.
    fn kind(&self) -> &'static str;
    /// Creates a directory.
    fn make_dir(&mut self, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Removes an empty directory.
    fn remove_dir(&mut self, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Creates (or truncates) a file and opens it for reading and writing as `handle`.
    fn create(&mut self, handle: Handle, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Opens an existing file for reading and writing as `handle`.
    fn open(&mut self, handle: Handle, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Reads up to `len` bytes at `offset`; a read at or past the end is
    /// [`NtStatus::END_OF_FILE`].
    fn read(
        &mut self,
        handle: Handle,
        offset: u64,
        len: u32,
    ) -> impl Future<Output = OpResult> + Send;
    /// Writes `len` bytes at `offset`.
    fn write(
        &mut self,
        handle: Handle,
        offset: u64,
        len: u32,
    ) -> impl Future<Output = OpResult> + Send;
    /// Moves the file position. Neither SMB nor this crate's reads and writes need one (they
    /// carry their offsets), so it only checks the handle; it is timed like the others.
    fn seek(&mut self, handle: Handle, offset: u64) -> impl Future<Output = OpResult> + Send;
    /// Closes `handle`.
    fn close(&mut self, handle: Handle) -> impl Future<Output = OpResult> + Send;
    /// Deletes a file.
    fn delete(&mut self, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Renames a file; an existing `to` is [`NtStatus::OBJECT_NAME_COLLISION`].
    fn rename(&mut self, from: &str, to: &str) -> impl Future<Output = OpResult> + Send;
    /// Lists a directory.
    fn list(&mut self, dir: &str) -> impl Future<Output = OpResult> + Send;
    /// Lists a directory with the entries' names: what a trace's wildcard search and a
    /// recursive delete need.
    fn list_entries(&mut self, dir: &str) -> impl Future<Output = ListResult> + Send;
    /// Reads a file's attributes by path.
    fn get_attributes(&mut self, path: &str) -> impl Future<Output = OpResult> + Send;
    /// Sets an open file's last-write time to now.
    fn set_attributes(&mut self, handle: Handle) -> impl Future<Output = OpResult> + Send;
    /// Locks a byte range exclusively, failing at once on a conflict
    /// ([`NtStatus::LOCK_NOT_GRANTED`]).
    fn lock(
        &mut self,
        handle: Handle,
        offset: u64,
        len: u64,
    ) -> impl Future<Output = OpResult> + Send;
    /// Unlocks a range locked before.
    fn unlock(
        &mut self,
        handle: Handle,
        offset: u64,
        len: u64,
    ) -> impl Future<Output = OpResult> + Send;
    /// Writes an open file's data to stable storage on the server.
    fn flush(&mut self, handle: Handle) -> impl Future<Output = OpResult> + Send;
    /// Queries the size and free space of the file system.
    fn fs_info(&mut self) -> impl Future<Output = OpResult> + Send;
}

/// The bytes every write sends: a fixed, compressible-neither-way pattern, so that
/// neither side can shortcut zeros. 64 KiB, the largest write of one request.
pub(crate) fn write_pattern() -> &'static [u8] {
    static PATTERN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        let mut x: u32 = 0x9e37_79b9;
        (0..CHUNK)
            .map(|_| {
                // xorshift32: cheap, deterministic, not all zeros.
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    })
}

/// Reads and writes larger than this go as several requests (one SMB credit each).
pub(crate) const CHUNK: usize = 64 * 1024;

/// Checks a caller's path: relative, `/`-separated, no empty, `.` or `..` component.
pub(crate) fn check_path(path: &str) -> Result<(), BackendError> {
    if path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(BackendError::BadPath(path.to_owned()));
    }
    Ok(())
}
