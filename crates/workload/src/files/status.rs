//! NT status codes, as load files write them (`NT_STATUS_OK`) and as SMB servers return them.
//!
//! Only the codes a file workload meets are named; any other code can still be written in
//! a load file as `0x` and eight hex digits.

use std::fmt;

/// A 32-bit NT status code (MS-ERREF 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NtStatus(pub u32);

/// (code, name without the `NT_STATUS_` prefix).
const NAMES: &[(u32, &str)] = &[
    (0xC000_0022, "ACCESS_DENIED"),
    (0xC000_0043, "SHARING_VIOLATION"),
    (0xC000_0054, "FILE_LOCK_CONFLICT"),
    (0xC000_0055, "LOCK_NOT_GRANTED"),
    (0xC000_0056, "DELETE_PENDING"),
    (0xC000_0101, "DIRECTORY_NOT_EMPTY"),
    (0xC000_0011, "END_OF_FILE"),
    (0xC000_00BA, "FILE_IS_A_DIRECTORY"),
    (0xC000_0033, "OBJECT_NAME_INVALID"),
    (0xC000_0035, "OBJECT_NAME_COLLISION"),
    (0xC000_0034, "OBJECT_NAME_NOT_FOUND"),
    (0xC000_003A, "OBJECT_PATH_NOT_FOUND"),
    (0xC000_0008, "INVALID_HANDLE"),
    (0xC000_000D, "INVALID_PARAMETER"),
    (0xC000_0010, "INVALID_DEVICE_REQUEST"),
    (0xC000_0103, "NOT_A_DIRECTORY"),
    (0x8000_0006, "NO_MORE_FILES"),
    (0xC000_000F, "NO_SUCH_FILE"),
    (0xC000_007F, "DISK_FULL"),
    (0xC000_00BB, "NOT_SUPPORTED"),
    (0x0000_0000, "OK"),
    (0xC000_0061, "PRIVILEGE_NOT_HELD"),
    (0xC000_0121, "CANNOT_DELETE"),
    (0xC000_007E, "RANGE_NOT_LOCKED"),
];

impl NtStatus {
    /// `NT_STATUS_OK` (`STATUS_SUCCESS`).
    pub const OK: NtStatus = NtStatus(0);
    /// A path component does not exist.
    pub const OBJECT_NAME_NOT_FOUND: NtStatus = NtStatus(0xC000_0034);
    /// A directory on the way to the file does not exist.
    pub const OBJECT_PATH_NOT_FOUND: NtStatus = NtStatus(0xC000_003A);
    /// The name exists already.
    pub const OBJECT_NAME_COLLISION: NtStatus = NtStatus(0xC000_0035);
    /// A directory search found nothing (as trans2 FIND_FIRST reports it).
    pub const NO_SUCH_FILE: NtStatus = NtStatus(0xC000_000F);
    /// A read started at or past the end of the file.
    pub const END_OF_FILE: NtStatus = NtStatus(0xC000_0011);

    /// Parses `NT_STATUS_NAME` (a name from the table) or `0x` followed by hex digits.
    pub fn parse(text: &str) -> Option<NtStatus> {
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            if hex.is_empty() || hex.len() > 8 {
                return None;
            }
            return u32::from_str_radix(hex, 16).ok().map(NtStatus);
        }
        let name = text.strip_prefix("NT_STATUS_")?;
        NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(c, _)| NtStatus(*c))
    }

    /// The name without the `NT_STATUS_` prefix, if the code is in the table.
    pub fn name(self) -> Option<&'static str> {
        NAMES.iter().find(|(c, _)| *c == self.0).map(|(_, n)| *n)
    }

    /// True for success and informational codes (severity 0 or 1).
    pub fn is_success(self) -> bool {
        self.0 >> 30 <= 1
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hex_round_trip() {
        for (code, name) in NAMES {
            let text = format!("NT_STATUS_{name}");
            assert_eq!(NtStatus::parse(&text), Some(NtStatus(*code)), "{text}");
            assert_eq!(NtStatus(*code).to_string(), text);
        }
        let codes: std::collections::BTreeSet<u32> = NAMES.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes.len(), NAMES.len(), "no code is named twice");
        assert_eq!(
            NtStatus::parse("0xc0000034"),
            Some(NtStatus::OBJECT_NAME_NOT_FOUND)
        );
        assert_eq!(NtStatus(0xC000_9999).to_string(), "0xc0009999");
        assert_eq!(NtStatus::parse("NT_STATUS_NOPE"), None);
        assert_eq!(NtStatus::parse("0x"), None);
        assert_eq!(NtStatus::parse("0x123456789"), None);
        assert!(NtStatus::OK.is_success());
        assert!(!NtStatus::END_OF_FILE.is_success());
    }
}
