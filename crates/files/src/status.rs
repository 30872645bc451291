//! NT status codes (MS-ERREF 2.3): the answers the SMB backend receives, and the ones the
//! directory backend maps its errno values to, so both report alike.

use std::fmt;

/// A 32-bit NT status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NtStatus(pub u32);

macro_rules! statuses {
    ($($name:ident = $code:expr;)*) => {
        impl NtStatus {
            $(
                #[doc = concat!("`NT_STATUS_", stringify!($name), "`.")]
                pub const $name: NtStatus = NtStatus($code);
            )*

            /// The name without the `NT_STATUS_` prefix, for the codes this crate knows.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

statuses! {
    OK = 0x0000_0000;
    NO_MORE_FILES = 0x8000_0006;
    UNSUCCESSFUL = 0xC000_0001;
    INVALID_HANDLE = 0xC000_0008;
    INVALID_PARAMETER = 0xC000_000D;
    NO_SUCH_FILE = 0xC000_000F;
    END_OF_FILE = 0xC000_0011;
    ACCESS_DENIED = 0xC000_0022;
    OBJECT_NAME_INVALID = 0xC000_0033;
    OBJECT_NAME_NOT_FOUND = 0xC000_0034;
    OBJECT_NAME_COLLISION = 0xC000_0035;
    OBJECT_PATH_NOT_FOUND = 0xC000_003A;
    SHARING_VIOLATION = 0xC000_0043;
    FILE_LOCK_CONFLICT = 0xC000_0054;
    LOCK_NOT_GRANTED = 0xC000_0055;
    DELETE_PENDING = 0xC000_0056;
    RANGE_NOT_LOCKED = 0xC000_007E;
    DISK_FULL = 0xC000_007F;
    FILE_IS_A_DIRECTORY = 0xC000_00BA;
    NOT_SUPPORTED = 0xC000_00BB;
    DIRECTORY_NOT_EMPTY = 0xC000_0101;
    NOT_A_DIRECTORY = 0xC000_0103;
}

impl NtStatus {
    /// True for success and informational codes (severity 0 or 1).
    pub fn is_success(self) -> bool {
        self.0 >> 30 <= 1
    }

    /// The status a Windows server gives for a POSIX error, as Samba maps them.
    pub fn from_errno(errno: nix::errno::Errno) -> NtStatus {
        use nix::errno::Errno;
        match errno {
            Errno::ENOENT => NtStatus::OBJECT_NAME_NOT_FOUND,
            Errno::EEXIST => NtStatus::OBJECT_NAME_COLLISION,
            Errno::EACCES | Errno::EPERM | Errno::EROFS => NtStatus::ACCESS_DENIED,
            Errno::ENOTEMPTY => NtStatus::DIRECTORY_NOT_EMPTY,
            Errno::EISDIR => NtStatus::FILE_IS_A_DIRECTORY,
            Errno::ENOTDIR => NtStatus::OBJECT_PATH_NOT_FOUND,
            Errno::ENOSPC | Errno::EDQUOT => NtStatus::DISK_FULL,
            Errno::EAGAIN => NtStatus::LOCK_NOT_GRANTED,
            Errno::EBUSY => NtStatus::SHARING_VIOLATION,
            Errno::ENAMETOOLONG | Errno::EINVAL => NtStatus::OBJECT_NAME_INVALID,
            Errno::EBADF => NtStatus::INVALID_HANDLE,
            _ => NtStatus::UNSUCCESSFUL,
        }
    }
}

impl fmt::Display for NtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "NT_STATUS_{name}"),
            None => write!(f, "0x{:08x}", self.0),
        }
    }
}
