//! The concrete file operations a simulated client performs, in the order it performs them.

use std::fmt;

/// A client's own number for an open file, valid until its [`FileOp::Close`].
pub type Handle = u32;

/// One file operation against the target. Paths are relative to the target's root (the
/// directory given with `--dir`, or the SMB share), separated by `/`, and never contain
/// `..`; offsets and lengths are in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// Create a directory (its parent exists).
    MakeDir {
        /// The directory.
        path: String,
    },
    /// Remove an empty directory.
    RemoveDir {
        /// The directory.
        path: String,
    },
    /// Create a file, or truncate an existing one, and open it for reading and writing.
    Create {
        /// The number later operations use for the open file.
        handle: Handle,
        /// The file.
        path: String,
    },
    /// Open an existing file for reading and writing.
    Open {
        /// The number later operations use for the open file.
        handle: Handle,
        /// The file.
        path: String,
    },
    /// Read `len` bytes at `offset`.
    Read {
        /// The open file.
        handle: Handle,
        /// Where the read starts.
        offset: u64,
        /// How many bytes.
        len: u32,
    },
    /// Write `len` bytes at `offset`.
    Write {
        /// The open file.
        handle: Handle,
        /// Where the write starts.
        offset: u64,
        /// How many bytes.
        len: u32,
    },
    /// Move the file position. SMB has no seek request, so this costs nothing on the wire;
    /// the following reads and writes carry the new offset.
    Seek {
        /// The open file.
        handle: Handle,
        /// The new position.
        offset: u64,
    },
    /// Close an open file.
    Close {
        /// The open file.
        handle: Handle,
    },
    /// Delete a closed file.
    Delete {
        /// The file.
        path: String,
    },
    /// Rename a closed file.
    Rename {
        /// The current name.
        from: String,
        /// The new name (which does not exist).
        to: String,
    },
    /// List a directory's entries.
    List {
        /// The directory.
        dir: String,
    },
    /// Read a file's attributes (size, times) by path.
    GetAttributes {
        /// The file.
        path: String,
    },
    /// Set the last-write time of an open file.
    SetAttributes {
        /// The open file.
        handle: Handle,
    },
    /// Lock a byte range of an open file exclusively, failing at once on a conflict.
    Lock {
        /// The open file.
        handle: Handle,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
    },
    /// Unlock a range locked before.
    Unlock {
        /// The open file.
        handle: Handle,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
    },
    /// Ask the server to write an open file's data to stable storage.
    Flush {
        /// The open file.
        handle: Handle,
    },
    /// Query the file system's size and free space.
    FsInfo,
}

impl FileOp {
    /// The operation's name in results and reports (`read`, `write`, `open`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            FileOp::MakeDir { .. } => "mkdir",
            FileOp::RemoveDir { .. } => "rmdir",
            FileOp::Create { .. } => "create",
            FileOp::Open { .. } => "open",
            FileOp::Read { .. } => "read",
            FileOp::Write { .. } => "write",
            FileOp::Seek { .. } => "seek",
            FileOp::Close { .. } => "close",
            FileOp::Delete { .. } => "delete",
            FileOp::Rename { .. } => "rename",
            FileOp::List { .. } => "list",
            FileOp::GetAttributes { .. } => "get_attributes",
            FileOp::SetAttributes { .. } => "set_attributes",
            FileOp::Lock { .. } => "lock",
            FileOp::Unlock { .. } => "unlock",
            FileOp::Flush { .. } => "flush",
            FileOp::FsInfo => "fs_info",
        }
    }

    /// Bytes this operation moves to or from the server when it succeeds: what NetBench
    /// counts as throughput (seed 004: "the number of bytes a client transferred to and
    /// from the server"). Only reads and writes move file data.
    pub fn data_bytes(&self) -> u64 {
        match self {
            FileOp::Read { len, .. } | FileOp::Write { len, .. } => u64::from(*len),
            _ => 0,
        }
    }
}

impl fmt::Display for FileOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileOp::MakeDir { path }
            | FileOp::RemoveDir { path }
            | FileOp::Delete { path }
            | FileOp::GetAttributes { path } => write!(f, "{} {path}", self.name()),
            FileOp::List { dir } => write!(f, "list {dir}"),
            FileOp::Create { handle, path } | FileOp::Open { handle, path } => {
                write!(f, "{} #{handle} {path}", self.name())
            }
            FileOp::Read {
                handle,
                offset,
                len,
            }
            | FileOp::Write {
                handle,
                offset,
                len,
            } => write!(f, "{} #{handle} {len}@{offset}", self.name()),
            FileOp::Lock {
                handle,
                offset,
                len,
            }
            | FileOp::Unlock {
                handle,
                offset,
                len,
            } => write!(f, "{} #{handle} {len}@{offset}", self.name()),
            FileOp::Seek { handle, offset } => write!(f, "seek #{handle} {offset}"),
            FileOp::Close { handle }
            | FileOp::SetAttributes { handle }
            | FileOp::Flush { handle } => write!(f, "{} #{handle}", self.name()),
            FileOp::Rename { from, to } => write!(f, "rename {from} {to}"),
            FileOp::FsInfo => f.write_str("fs_info"),
        }
    }
}
