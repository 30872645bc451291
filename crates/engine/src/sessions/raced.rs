//! The workload's own races on a shared account (`sessions_per_account`
//! above 1): two sessions of one account pick from the same Inbox, so one
//! may read or move a message the other has just moved away. The server is
//! right to answer that nothing is there (or `NO`); it is the workload's
//! race, not the server's error. Such an action is counted as skipped,
//! `skipped_raced` in the summary's counters, only when the account is
//! shared and another session of that account did move that message: any
//! other disappearance stays an error.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

/// Moves remembered per account: a race is with a recent move, and the
/// account's sessions pick from a page of its Inbox.
const MOVES_KEPT: usize = 512;

/// The messages each shared account's sessions moved out of a folder.
#[derive(Debug, Default)]
pub(crate) struct AccountMoves {
    moved: Mutex<HashMap<u32, VecDeque<Moved>>>,
}

#[derive(Debug)]
struct Moved {
    user: u32,
    message: String,
}

impl AccountMoves {
    /// User `user`, whose session is on `account`, is about to move (or
    /// destroy) `message` (an IMAP folder and UID, a JMAP id). Recorded
    /// before the command goes out: the other session may trip over it
    /// before the answer comes.
    pub(crate) fn moving(&self, account: u32, user: u32, message: String) {
        let mut moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
        let list = moved.entry(account).or_default();
        if list.len() >= MOVES_KEPT {
            list.pop_front();
        }
        list.push_back(Moved { user, message });
    }

    /// Whether another user's session on `account` moved `message`.
    pub(crate) fn moved_by_other(&self, account: u32, user: u32, message: &str) -> bool {
        let moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
        moved
            .get(&account)
            .is_some_and(|list| list.iter().any(|m| m.user != user && m.message == message))
    }
}

/// An IMAP message's name in the registry.
pub(crate) fn imap_message(folder: &str, uid: u32) -> String {
    format!("{folder}\u{0}{uid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_27_item_2_only_another_sessions_move_of_that_message_explains_it() {
        let moves = AccountMoves::default();
        moves.moving(0, 1, imap_message("INBOX", 7));
        assert!(moves.moved_by_other(0, 0, &imap_message("INBOX", 7)));
        // Its own move, another message, another folder, another account: no.
        assert!(!moves.moved_by_other(0, 1, &imap_message("INBOX", 7)));
        assert!(!moves.moved_by_other(0, 0, &imap_message("INBOX", 8)));
        assert!(!moves.moved_by_other(0, 0, &imap_message("Folder1", 7)));
        assert!(!moves.moved_by_other(2, 0, &imap_message("INBOX", 7)));
    }

    #[test]
    fn issue_27_item_2_the_moves_kept_are_bounded() {
        let moves = AccountMoves::default();
        for uid in 0..(MOVES_KEPT as u32 + 1) {
            moves.moving(0, 1, imap_message("INBOX", uid));
        }
        assert!(!moves.moved_by_other(0, 0, &imap_message("INBOX", 0)));
        assert!(moves.moved_by_other(0, 0, &imap_message("INBOX", 1)));
    }
}
