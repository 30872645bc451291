//! End-to-end delivery: every submitted message is tracked by Message-ID
//! until each recipient has seen it, so the run can reconcile recipients
//! submitted with recipients delivered and name any message lost.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A recipient that never saw its copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lost {
    /// The Message-ID, without angle brackets.
    pub message_id: String,
    /// The recipient user (0-based).
    pub user: u32,
}

#[derive(Debug)]
struct Pending {
    submitted: Instant,
    waiting_for: Vec<u32>,
}

#[derive(Debug, Default)]
struct Books {
    pending: HashMap<String, Pending>,
    submitted_recipients: u64,
    delivered_recipients: u64,
    /// Per recipient, the Message-IDs it has not seen yet: what reconciliation searches for.
    outstanding: HashMap<u32, Vec<String>>,
}

/// The delivery ledger, shared by every simulated user.
#[derive(Debug, Default)]
pub struct DeliveryTracker {
    books: Mutex<Books>,
}

/// Strips the angle brackets of a Message-ID.
pub fn bare_message_id(id: &str) -> &str {
    id.trim().trim_start_matches('<').trim_end_matches('>')
}

impl DeliveryTracker {
    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A message was accepted for `recipients` at `at`.
    pub fn submitted(&self, message_id: &str, recipients: &[u32], at: Instant) {
        let id = bare_message_id(message_id).to_owned();
        let mut books = self.books();
        books.submitted_recipients += recipients.len() as u64;
        for &user in recipients {
            books.outstanding.entry(user).or_default().push(id.clone());
        }
        books.pending.insert(
            id,
            Pending {
                submitted: at,
                waiting_for: recipients.to_vec(),
            },
        );
    }

    /// `user` saw the message `message_id` at `at`. Returns the delivery
    /// latency the first time this recipient sees a tracked message, `None`
    /// for untracked messages (initial mail, other runs) and repeats.
    pub fn noticed(&self, message_id: &str, user: u32, at: Instant) -> Option<Duration> {
        let id = bare_message_id(message_id);
        let mut books = self.books();
        let pending = books.pending.get_mut(id)?;
        let position = pending.waiting_for.iter().position(|&u| u == user)?;
        pending.waiting_for.swap_remove(position);
        let latency = at.saturating_duration_since(pending.submitted);
        if pending.waiting_for.is_empty() {
            books.pending.remove(id);
        }
        books.delivered_recipients += 1;
        if let Some(list) = books.outstanding.get_mut(&user) {
            list.retain(|m| m != id);
        }
        Some(latency)
    }

    /// Message-IDs `user` is still waiting for.
    pub fn outstanding_for(&self, user: u32) -> Vec<String> {
        self.books()
            .outstanding
            .get(&user)
            .cloned()
            .unwrap_or_default()
    }

    /// Recipients with copies not yet seen.
    pub fn outstanding_users(&self) -> Vec<u32> {
        let books = self.books();
        let mut users: Vec<u32> = books
            .outstanding
            .iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(u, _)| *u)
            .collect();
        users.sort_unstable();
        users
    }

    /// (recipients submitted, recipients delivered).
    pub fn totals(&self) -> (u64, u64) {
        let books = self.books();
        (books.submitted_recipients, books.delivered_recipients)
    }

    /// Every copy never seen, sorted.
    pub fn lost(&self) -> Vec<Lost> {
        let books = self.books();
        let mut lost: Vec<Lost> = books
            .pending
            .iter()
            .flat_map(|(id, p)| {
                p.waiting_for.iter().map(|&user| Lost {
                    message_id: id.clone(),
                    user,
                })
            })
            .collect();
        lost.sort();
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_submitted_with_delivered_and_names_the_lost() {
        let tracker = DeliveryTracker::default();
        let t0 = Instant::now();
        tracker.submitted("<a@run>", &[1, 2, 3], t0);
        tracker.submitted("b@run", &[2], t0);
        let later = t0 + Duration::from_millis(40);
        assert_eq!(
            tracker.noticed("a@run", 1, later),
            Some(Duration::from_millis(40))
        );
        assert_eq!(
            tracker.noticed("<a@run>", 1, later),
            None,
            "a repeat is not a delivery"
        );
        assert_eq!(tracker.noticed("a@run", 9, later), None, "not a recipient");
        assert_eq!(tracker.noticed("init@x", 1, later), None, "untracked");
        assert!(tracker.noticed("a@run", 3, later).is_some());
        assert!(tracker.noticed("b@run", 2, later).is_some());
        assert_eq!(tracker.totals(), (4, 3));
        assert_eq!(tracker.outstanding_users(), vec![2]);
        assert_eq!(tracker.outstanding_for(2), vec!["a@run".to_owned()]);
        assert_eq!(
            tracker.lost(),
            vec![Lost {
                message_id: "a@run".into(),
                user: 2
            }]
        );
    }
}
