//! What stops a backend from performing operations at all.

/// An error that is not a server's answer to an operation (those are [`crate::Outcome`]s).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The path is absolute, has a `..`, `.` or empty component, or a backslash.
    #[error("path `{0}` must be relative, with `/` between names and no `.` or `..`")]
    BadPath(String),
    /// An operation named a handle that is not open (a bug in the caller's script).
    #[error("handle {0} is not open")]
    UnknownHandle(u32),
    /// An operation named a handle that is already open.
    #[error("handle {0} is already open")]
    HandleInUse(u32),
    /// The directory backend's root cannot be used.
    #[error("{path}: {source}")]
    Root {
        /// The root given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A system call failed in a way no NT status describes.
    #[error("{op}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The SMB connection failed: connect, negotiate, authenticate, or a dropped link.
    #[error("SMB: {0}")]
    Smb(#[from] smb2::Error),
    /// An `smb://host:port/share` address that does not parse.
    #[error("bad SMB address `{0}`: expected smb://host[:port]/share")]
    BadUrl(String),
    /// A blocking operation's worker thread panicked or was cancelled.
    #[error("the worker thread of `{0}` did not finish")]
    Worker(&'static str),
}
