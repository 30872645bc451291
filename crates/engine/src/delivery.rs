//! End-to-end delivery: every submitted message is tracked until each
//! recipient has seen it, so the run can reconcile recipients submitted with
//! recipients delivered and name any copy lost.
//!
//! The ledger must stay small under a server that accepts mail and never
//! delivers it: a day at 10,000 users can leave millions of copies waiting.
//! So a message is tracked by a compact id, not by its Message-ID string.
//! peakhour's Message-IDs are `s{sender}.{nth}` followed by a suffix that is
//! the same for every message of a sender domain (`.{run}@{domain}`): the
//! ledger keys a message by `(sender, nth)` packed in a `u64` and keeps each
//! distinct suffix once. A tracked message costs its map entry (the key, the
//! submission time in µs, a suffix index, a count and a boxed slice of
//! recipients: 40 bytes, about 46 with the map's control bytes and spare
//! capacity) plus 4 bytes per recipient on the heap (docs/reliability.md
//! gives the measured figure). Lost copies are reported capped
//! ([`LOST_LIST_CAP`]), with counts for the rest.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use peakhour_analysis::{CrossCopy, CrossShardDeliveries};
use peakhour_state_check::SubmittedMessage;
use peakhour_workload::Shard;
use tokio::time::Instant;

use crate::population::Population;

/// Lost copies named one by one in a run's results; the rest are counted.
pub const LOST_LIST_CAP: usize = 1_000;

/// Header bytes the ledger keeps at most for the delivery checks
/// (`run --check-state`): about 20,000 messages of peakhour's. Messages
/// submitted past it are not checked ([`ContentBook::not_kept`]).
pub(crate) const CONTENT_BYTES_MAX: usize = 8 * 1024 * 1024;

/// What the delivery checks need of each submission: its header section
/// and size, and its recipients of this shard (`run --check-state` only).
#[derive(Debug, Default)]
struct ContentBook {
    on: bool,
    kept: HashMap<u64, KeptMessage>,
    bytes: usize,
    /// Submissions past [`CONTENT_BYTES_MAX`], not checked.
    not_kept: u64,
}

#[derive(Debug)]
struct KeptMessage {
    header: Box<[u8]>,
    size: u64,
    recipients: Box<[u32]>,
}

/// The submissions kept for the delivery checks, per recipient: the
/// Message-ID (bare) and what was submitted.
pub(crate) type ContentChecks = BTreeMap<u32, Vec<(String, SubmittedMessage)>>;

/// The header section of `message`: up to and with its empty line.
fn header_section(message: &[u8]) -> &[u8] {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(message.len(), |at| at + 4);
    &message[..end]
}

/// A recipient that never saw its copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lost {
    /// The Message-ID, without angle brackets.
    pub message_id: String,
    /// The recipient user (0-based).
    pub user: u32,
}

/// The copies never seen: the first [`LOST_LIST_CAP`] by name, and counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostReport {
    /// The first lost copies, ordered by sender, message and recipient.
    pub listed: Vec<Lost>,
    /// Every lost copy, listed or not.
    pub total: u64,
    /// Lost copies whose recipient's mailbox the last reconciliation could
    /// not search (the search failed, timed out or panicked): not seen, but
    /// not looked for either.
    pub unsearched: u64,
}

/// A message waiting for some of its recipients. Who they are is kept per
/// recipient ([`UserBooks::waiting`]), where noticing a copy looks first.
#[derive(Debug)]
struct Pending {
    /// Nanoseconds from the ledger's epoch to the submission.
    submitted_ns: u64,
    /// Recipients not yet seen.
    waiting: u16,
    /// Index into [`Books::suffixes`].
    suffix: u16,
}

#[derive(Debug, Default)]
struct Books {
    pending: HashMap<u64, Pending>,
    /// Message-ID suffixes (`.{run}@{domain}`), each kept once.
    suffixes: Vec<String>,
    submitted_recipients: u64,
    delivered_recipients: u64,
    /// Recipients of messages the ledger cannot track (a Message-ID not of
    /// peakhour's shape, more than 65,535 recipients or sender domains):
    /// they can never be seen, so they are counted lost. None are expected.
    untrackable_recipients: u64,
    /// Per user: the messages it has not seen yet, and whether the last
    /// search of its mailbox failed.
    users: Vec<UserBooks>,
    /// Copies submitted to other shards' users: (key, suffix, recipient,
    /// ns since the epoch). Only `peakhour merge` learns their fate.
    sent_across: Vec<(u64, u16, u32, u64)>,
    /// Copies from other shards' senders noticed here, each once:
    /// (key, recipient) -> (suffix, ns since the epoch).
    noticed_across: HashMap<(u64, u32), (u16, u64)>,
}

#[derive(Debug, Default, Clone)]
struct UserBooks {
    /// Keys of the messages this user waits for.
    waiting: Vec<u64>,
    unsearched: bool,
}

impl Books {
    fn user(&mut self, user: u32) -> &mut UserBooks {
        let index = user as usize;
        if index >= self.users.len() {
            self.users.resize(index + 1, UserBooks::default());
        }
        &mut self.users[index]
    }

    fn suffix_index(&mut self, suffix: &str) -> Option<u16> {
        match self.suffixes.iter().position(|s| s == suffix) {
            Some(index) => u16::try_from(index).ok(),
            None => {
                let index = u16::try_from(self.suffixes.len()).ok()?;
                self.suffixes.push(suffix.to_owned());
                Some(index)
            }
        }
    }
}

/// The delivery ledger, shared by every simulated user.
///
/// In a sharded run (`run --shard I/N`) it tracks the copies whose sender
/// and recipient are both this shard's as usual; a copy to another shard's
/// user is only written down with its submission time, and a copy from
/// another shard's user with the time it was noticed, for `peakhour merge`
/// to join (docs/architecture.md, "Distributed runs").
#[derive(Debug)]
pub struct DeliveryTracker {
    epoch: Instant,
    /// The wall-clock time of `epoch`, so that shards on other machines
    /// can compare times with this one.
    epoch_wall: SystemTime,
    shard: Shard,
    /// `.{run}@`: the Message-ID part every copy of this run carries. Mail
    /// another run left in a shared mailbox is not this run's to report
    /// (issue 26, item 10); `None` takes every run's.
    run_marker: Option<String>,
    books: Mutex<Books>,
    content: Mutex<ContentBook>,
}

impl Default for DeliveryTracker {
    fn default() -> Self {
        Self::for_shard(Shard::whole())
    }
}

/// What noticing a copy meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noticed {
    /// The first sight of a tracked copy, this long after its submission.
    Delivered(Duration),
    /// The first sight of a copy another shard submitted: its latency is
    /// known only once merged.
    FromOtherShard,
    /// Untracked (initial mail, other runs) or seen before.
    Nothing,
}

/// Strips the angle brackets of a Message-ID.
pub fn bare_message_id(id: &str) -> &str {
    id.trim().trim_start_matches('<').trim_end_matches('>')
}

/// `s{sender}.{nth}{suffix}` -> (the packed key, the suffix).
fn parse_id(bare: &str) -> Option<(u64, &str)> {
    let rest = bare.strip_prefix('s')?;
    let (sender, rest) = rest.split_once('.')?;
    let nth_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (nth, suffix) = rest.split_at(nth_len);
    // Canonical numbers only, so that one message has one key.
    let canonical = |n: &str| !n.is_empty() && (n == "0" || !n.starts_with('0'));
    if !canonical(sender) || !canonical(nth) || !suffix.starts_with('.') {
        return None;
    }
    let sender: u32 = sender.parse().ok()?;
    let nth: u32 = nth.parse().ok()?;
    Some(((u64::from(sender) << 32) | u64::from(nth), suffix))
}

fn unpack(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

impl DeliveryTracker {
    /// The ledger of shard `shard` (the whole population: [`Shard::whole`]).
    pub fn for_shard(shard: Shard) -> Self {
        DeliveryTracker {
            epoch: Instant::now(),
            epoch_wall: SystemTime::now(),
            shard,
            run_marker: None,
            books: Mutex::default(),
            content: Mutex::default(),
        }
    }

    /// The ledger of shard `shard` of the run `run_id`: copies from other
    /// shards are noted only when their Message-ID is this run's.
    pub fn for_run(shard: Shard, run_id: &str) -> Self {
        DeliveryTracker {
            run_marker: Some(format!(
                ".{}@",
                peakhour_workload::message_id_run_part(run_id)
            )),
            ..Self::for_shard(shard)
        }
    }

    /// The ledger, keeping each submission's header and size for the
    /// delivery checks when `on` (`run --check-state`).
    pub fn checking_content(self, on: bool) -> Self {
        self.content(|book| book.on = on);
        self
    }

    fn content<T>(&self, f: impl FnOnce(&mut ContentBook) -> T) -> T {
        let mut book = self
            .content
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut book)
    }

    /// `message` was accepted for `recipients`: with the delivery checks
    /// on, its header section and size are kept (8 MiB of headers at most)
    /// to compare each delivered copy with.
    pub fn submitted_content(&self, message_id: &str, message: &[u8], recipients: &[u32]) {
        let Some((key, _)) = parse_id(bare_message_id(message_id)) else {
            return;
        };
        let mut own: Vec<u32> = recipients
            .iter()
            .copied()
            .filter(|&u| self.shard.owns(u))
            .collect();
        own.sort_unstable();
        own.dedup();
        self.content(|book| {
            if !book.on || own.is_empty() || book.kept.contains_key(&key) {
                return;
            }
            let header = header_section(message);
            if book.bytes + header.len() > CONTENT_BYTES_MAX {
                book.not_kept += 1;
                return;
            }
            book.bytes += header.len();
            book.kept.insert(
                key,
                KeptMessage {
                    header: header.into(),
                    size: message.len() as u64,
                    recipients: own.into(),
                },
            );
        });
    }

    /// The submissions kept for the delivery checks, by recipient, and how
    /// many were not kept (past [`CONTENT_BYTES_MAX`]).
    pub(crate) fn content_checks(&self) -> (ContentChecks, u64) {
        self.content(|book| {
            let mut by_user = ContentChecks::new();
            for kept in book.kept.values() {
                let submitted = SubmittedMessage::from_header(&kept.header, kept.size);
                let Some(id) = submitted.message_id() else {
                    continue;
                };
                let id = bare_message_id(&id).to_owned();
                for &user in kept.recipients.iter() {
                    by_user
                        .entry(user)
                        .or_default()
                        .push((id.clone(), submitted.clone()));
                }
            }
            (by_user, book.not_kept)
        })
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A message was accepted for `recipients` at `at`.
    pub fn submitted(&self, message_id: &str, recipients: &[u32], at: Instant) {
        let mut books = self.books();
        books.submitted_recipients += recipients.len() as u64;
        // A key already pending cannot be told apart from this message: no
        // run reuses one, but the books must stay consistent if it did.
        let tracked = parse_id(bare_message_id(message_id))
            .filter(|(key, _)| !books.pending.contains_key(key))
            .and_then(|(key, suffix)| {
                let waiting = u16::try_from(recipients.len()).ok()?;
                Some((key, books.suffix_index(suffix)?, waiting))
            });
        let Some((key, suffix, _)) = tracked else {
            books.untrackable_recipients += recipients.len() as u64;
            return;
        };
        let submitted_ns = self.ns_since_epoch(at);
        let mut waiting = 0_u16;
        for &user in recipients {
            if self.shard.owns(user) {
                books.user(user).waiting.push(key);
                waiting += 1;
            } else {
                books.sent_across.push((key, suffix, user, submitted_ns));
            }
        }
        if waiting == 0 {
            return;
        }
        books.pending.insert(
            key,
            Pending {
                submitted_ns,
                waiting,
                suffix,
            },
        );
    }

    fn ns_since_epoch(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// `user` saw the message `message_id` at `at`. Returns the delivery
    /// latency the first time this recipient sees a tracked message, `None`
    /// for untracked messages (initial mail, other runs), repeats, and
    /// copies from other shards (see [`DeliveryTracker::notice`]).
    pub fn noticed(&self, message_id: &str, user: u32, at: Instant) -> Option<Duration> {
        match self.notice(message_id, user, at) {
            Noticed::Delivered(latency) => Some(latency),
            Noticed::FromOtherShard | Noticed::Nothing => None,
        }
    }

    /// `user` saw the message `message_id` at `at`: what that meant.
    pub fn notice(&self, message_id: &str, user: u32, at: Instant) -> Noticed {
        let Some((key, suffix)) = parse_id(bare_message_id(message_id)) else {
            return Noticed::Nothing;
        };
        let (sender, _) = unpack(key);
        if !self.shard.owns(sender) {
            return self.notice_across(key, suffix, user, at);
        }
        self.notice_tracked(key, suffix, user, at)
            .map_or(Noticed::Nothing, Noticed::Delivered)
    }

    /// A copy from another shard's sender, written down the first time.
    fn notice_across(&self, key: u64, suffix: &str, user: u32, at: Instant) -> Noticed {
        if let Some(marker) = &self.run_marker
            && !suffix.starts_with(marker.as_str())
        {
            return Noticed::Nothing;
        }
        let at_ns = self.ns_since_epoch(at);
        let mut books = self.books();
        if books.noticed_across.contains_key(&(key, user)) {
            return Noticed::Nothing;
        }
        let Some(suffix) = books.suffix_index(suffix) else {
            return Noticed::Nothing;
        };
        books.noticed_across.insert((key, user), (suffix, at_ns));
        Noticed::FromOtherShard
    }

    fn notice_tracked(&self, key: u64, suffix: &str, user: u32, at: Instant) -> Option<Duration> {
        let mut books = self.books();
        let entry = books.pending.get(&key)?;
        if books.suffixes[usize::from(entry.suffix)] != suffix {
            return None;
        }
        let submitted = self.epoch + Duration::from_nanos(entry.submitted_ns);
        let list = &mut books.users.get_mut(user as usize)?.waiting;
        let position = list.iter().position(|&k| k == key)?;
        list.swap_remove(position);
        if list.capacity() > 8 && list.len() < list.capacity() / 4 {
            // A mailbox that caught up gives its memory back.
            list.shrink_to(list.len() * 2);
        }
        if let Some(entry) = books.pending.get_mut(&key) {
            entry.waiting -= 1;
            if entry.waiting == 0 {
                books.pending.remove(&key);
            }
        }
        books.delivered_recipients += 1;
        Some(at.saturating_duration_since(submitted))
    }

    /// Whether this ledger is one shard's of several.
    pub fn is_sharded(&self) -> bool {
        self.shard.count() > 1
    }

    /// Whether `user` still waits for a copy.
    pub fn is_waiting(&self, user: u32) -> bool {
        self.books()
            .users
            .get(user as usize)
            .is_some_and(|u| !u.waiting.is_empty())
    }

    /// Recipients with copies not yet seen, in order.
    pub fn outstanding_users(&self) -> Vec<u32> {
        let books = self.books();
        (0..books.users.len() as u32)
            .filter(|&u| !books.users[u as usize].waiting.is_empty())
            .collect()
    }

    /// Marks the mailboxes of `users` as about to be searched: each stays
    /// unsearched until [`DeliveryTracker::searched`] says otherwise.
    pub fn searching(&self, users: &[u32]) {
        let mut books = self.books();
        for &user in users {
            books.user(user).unsearched = true;
        }
    }

    /// The mailbox of `user` was searched.
    pub fn searched(&self, user: u32) {
        self.books().user(user).unsearched = false;
    }

    /// (recipients submitted, recipients delivered).
    pub fn totals(&self) -> (u64, u64) {
        let books = self.books();
        (books.submitted_recipients, books.delivered_recipients)
    }

    /// Messages tracked now (submitted and not yet seen by every recipient).
    pub fn tracked_messages(&self) -> usize {
        self.books().pending.len()
    }

    /// The copies that crossed between this shard and others, with wall-clock
    /// times and addresses, for the record (`None` outside a sharded run).
    pub fn cross_shard(&self, population: &Population) -> Option<CrossShardDeliveries> {
        if self.shard.count() <= 1 {
            return None;
        }
        let books = self.books();
        let wall_us = |ns: u64| {
            let at = self.epoch_wall + Duration::from_nanos(ns);
            at.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        };
        let copy = |key: u64, suffix: u16, user: u32, ns: u64| {
            let (sender, nth) = unpack(key);
            CrossCopy {
                message_id: format!("s{sender}.{nth}{}", books.suffixes[usize::from(suffix)]),
                recipient: population
                    .address(user)
                    .unwrap_or_else(|_| format!("user #{user}")),
                at_unix_us: wall_us(ns),
            }
        };
        let mut cross = CrossShardDeliveries {
            sent: books
                .sent_across
                .iter()
                .map(|&(key, suffix, user, ns)| copy(key, suffix, user, ns))
                .collect(),
            noticed: books
                .noticed_across
                .iter()
                .map(|(&(key, user), &(suffix, ns))| copy(key, suffix, user, ns))
                .collect(),
        };
        cross.sent.sort();
        cross.noticed.sort();
        Some(cross)
    }

    /// Every copy never seen: the first `cap` by sender, message and
    /// recipient, and counts. Memory stays within `cap` entries however many
    /// copies are lost.
    pub fn lost(&self, cap: usize) -> LostReport {
        let books = self.books();
        let mut first: BinaryHeap<(u64, u32)> = BinaryHeap::with_capacity(cap.min(1 << 16) + 1);
        let mut report = LostReport {
            total: books.untrackable_recipients,
            ..LostReport::default()
        };
        for (user, books_user) in books.users.iter().enumerate() {
            let user = user as u32;
            let waiting = books_user.waiting.len() as u64;
            report.total += waiting;
            if books_user.unsearched {
                report.unsearched += waiting;
            }
            for &key in &books_user.waiting {
                if cap > 0
                    && (first.len() < cap || first.peek().is_some_and(|top| (key, user) < *top))
                {
                    first.push((key, user));
                    if first.len() > cap {
                        first.pop();
                    }
                }
            }
        }
        report.listed = first
            .into_sorted_vec()
            .into_iter()
            .map(|(key, user)| {
                let (sender, nth) = unpack(key);
                let suffix = books
                    .pending
                    .get(&key)
                    .map_or("", |p| books.suffixes[usize::from(p.suffix)].as_str());
                Lost {
                    message_id: format!("s{sender}.{nth}{suffix}"),
                    user,
                }
            })
            .collect();
        report
    }
}

#[cfg(test)]
mod tests;
