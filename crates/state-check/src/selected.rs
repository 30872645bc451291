//! What one session was told about its selected mailbox.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::command::{NumberSet, StoreMode};
use crate::snapshot::{MessageView, Snapshot};

/// UIDs of expunged messages a session remembers at most (the oldest are
/// forgotten first), so that memory stays bounded on a long run.
const EXPUNGED_MAX: usize = 100_000;

/// Messages a SEARCH left out that a session keeps waiting for an EXPUNGE
/// at most (the judgement of the rest is given up).
const SEARCH_SUSPECTS_MAX: usize = 10_000;

/// Flags compare without case (RFC 3501 section 2.3.2 names them so).
pub(crate) fn fold(flag: &str) -> String {
    flag.to_ascii_lowercase()
}

/// One message, by its place in the sequence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) uid: Option<u32>,
    /// A message announced after the SELECT is new: its UID must be at
    /// least this (UIDNEXT, or above every UID known then).
    pub(crate) floor: u32,
    pub(crate) flags: Option<BTreeSet<String>>,
    pub(crate) modseq: Option<u64>,
}

/// What the session's own STOREs let it expect of a message's flags
/// (folded to lower case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Own {
    pub(crate) must_have: BTreeSet<String>,
    pub(crate) must_not: BTreeSet<String>,
}

impl Own {
    /// The expectation after one more STORE of `flags` (folded, only those
    /// that stick) on a message whose flags were `known` (folded).
    pub(crate) fn apply(
        &mut self,
        mode: StoreMode,
        flags: &BTreeSet<String>,
        known: Option<BTreeSet<String>>,
    ) {
        match mode {
            StoreMode::Add => {
                self.must_have.extend(flags.iter().cloned());
                self.must_not.retain(|f| !flags.contains(f));
            }
            StoreMode::Remove => {
                self.must_not.extend(flags.iter().cloned());
                self.must_have.retain(|f| !flags.contains(f));
            }
            StoreMode::Replace => {
                self.must_have = flags.clone();
                self.must_not = known
                    .unwrap_or_default()
                    .into_iter()
                    .chain(std::mem::take(&mut self.must_not))
                    .filter(|f| !flags.contains(f) && f != "\\recent")
                    .collect();
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(" ");
        match (self.must_have.is_empty(), self.must_not.is_empty()) {
            (false, true) => format!("FLAGS with ({})", list(&self.must_have)),
            (true, false) => format!("FLAGS without ({})", list(&self.must_not)),
            _ => format!(
                "FLAGS with ({}) and without ({})",
                list(&self.must_have),
                list(&self.must_not)
            ),
        }
    }
}

/// The selected mailbox as the session knows it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selected {
    pub(crate) mailbox: String,
    pub(crate) read_only: bool,
    /// The SELECT completed: messages announced from now on are new.
    pub(crate) synced: bool,
    pub(crate) uid_validity: Option<u32>,
    pub(crate) uid_next: Option<u32>,
    pub(crate) permanent_flags: Option<Vec<String>>,
    /// The last `* FLAGS` list.
    pub(crate) defined: Option<Vec<String>>,
    slots: Vec<Slot>,
    pub(crate) expunged: BTreeSet<u32>,
    /// The highest UID the session was told of, expunged ones included.
    pub(crate) max_uid: u32,
    pub(crate) own: HashMap<u32, Own>,
    /// Messages a completed SEARCH left out although they matched, by UID,
    /// with what was expected: each is judged when the next NOOP or CHECK
    /// completes, unless an EXPUNGE of it comes first (the server may have
    /// searched a view in which another session had expunged it, and must
    /// defer that EXPUNGE past a SEARCH by sequence number).
    pub(crate) search_suspects: BTreeMap<u32, String>,
}

impl Selected {
    pub(crate) fn new(mailbox: String, read_only: bool) -> Self {
        Self {
            mailbox,
            read_only,
            ..Self::default()
        }
    }

    pub(crate) fn count(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    /// The message at `seq`, which the caller checked is in 1..=count.
    pub(crate) fn slot(&self, seq: u32) -> &Slot {
        &self.slots[seq as usize - 1]
    }

    pub(crate) fn slot_mut(&mut self, seq: u32) -> &mut Slot {
        &mut self.slots[seq as usize - 1]
    }

    /// `* n EXISTS` with `n` at least the count.
    pub(crate) fn grow(&mut self, n: u32) {
        let floor = if self.synced {
            self.uid_next
                .unwrap_or(0)
                .max(self.max_uid.saturating_add(1))
        } else {
            0
        };
        self.slots.resize(
            n as usize,
            Slot {
                floor,
                ..Slot::default()
            },
        );
    }

    /// `* seq EXPUNGE`, `seq` in 1..=count.
    pub(crate) fn expunge(&mut self, seq: u32) {
        let slot = self.slots.remove(seq as usize - 1);
        if let Some(uid) = slot.uid {
            self.expunged.insert(uid);
            if self.expunged.len() > EXPUNGED_MAX {
                self.expunged.pop_first();
            }
            self.own.remove(&uid);
            self.search_suspects.remove(&uid);
        }
    }

    /// A SEARCH left out `uid`, which it should have answered.
    pub(crate) fn suspect(&mut self, uid: u32, expected: String) {
        if self.search_suspects.len() < SEARCH_SUSPECTS_MAX {
            self.search_suspects.insert(uid, expected);
        }
    }

    /// The UIDs the session knows, in ascending order (UIDs ascend with
    /// sequence numbers).
    pub(crate) fn known_uids(&self) -> Vec<u32> {
        self.slots.iter().filter_map(|s| s.uid).collect()
    }

    /// The messages in sequence order, from 1.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (u32, &Slot)> {
        (1..).zip(self.slots.iter())
    }

    pub(crate) fn set_uid(&mut self, seq: u32, uid: u32) {
        self.slot_mut(seq).uid = Some(uid);
        self.max_uid = self.max_uid.max(uid);
    }

    /// Why `uid` cannot be the UID of the message at `seq`, if it cannot:
    /// UIDs ascend with sequence numbers, and a new message's UID is above
    /// every UID known when it arrived.
    pub(crate) fn uid_order_error(&self, seq: u32, uid: u32) -> Option<String> {
        let index = seq as usize - 1;
        let floor = self.slots[index].floor;
        if uid < floor {
            return Some(format!("UID >= {floor} (a new message)"));
        }
        let lower = self.slots[..index]
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, s)| s.uid.map(|u| (i + 1, u)));
        if let Some((at, lower)) = lower
            && uid <= lower
        {
            return Some(format!("UID > {lower} (UID of seq {at})"));
        }
        let higher = self.slots[index + 1..]
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.uid.map(|u| (index + i + 2, u)));
        if let Some((at, higher)) = higher
            && uid >= higher
        {
            return Some(format!("UID < {higher} (UID of seq {at})"));
        }
        None
    }

    /// The UIDs the session knows of the messages `set` names.
    pub(crate) fn uids_in(&self, by_uid: bool, set: &NumberSet) -> Vec<u32> {
        let count = self.count();
        self.slots
            .iter()
            .zip(1..)
            .filter_map(|(slot, seq)| {
                let uid = slot.uid?;
                let named = if by_uid {
                    set.contains(uid, self.max_uid)
                } else {
                    set.contains(seq, count)
                };
                named.then_some(uid)
            })
            .collect()
    }

    /// The session's own STORE completed: it knows the flags it set even
    /// when the server did not repeat them (`.SILENT`, RFC 3501 section
    /// 6.4.6), so a checkpoint compares what the session knows. Messages
    /// whose flags the answer reported (`reported`, by sequence number) keep
    /// those: they may hold another session's concurrent change too.
    pub(crate) fn apply_own_store(
        &mut self,
        by_uid: bool,
        set: &NumberSet,
        mode: StoreMode,
        flags: &[String],
        reported: &[u32],
    ) {
        let (count, max_uid) = (self.count(), self.max_uid);
        for (slot, seq) in self.slots.iter_mut().zip(1..) {
            let named = match (by_uid, slot.uid) {
                (true, Some(uid)) => set.contains(uid, max_uid),
                (true, None) => false,
                (false, _) => set.contains(seq, count),
            };
            let named = named && !reported.contains(&seq);
            let Some(known) = slot.flags.as_mut().filter(|_| named) else {
                continue;
            };
            let same = |a: &String, b: &String| a.eq_ignore_ascii_case(b);
            match mode {
                StoreMode::Add => {
                    for flag in flags {
                        if !known.iter().any(|k| same(k, flag)) {
                            known.insert(flag.clone());
                        }
                    }
                }
                StoreMode::Remove => known.retain(|k| !flags.iter().any(|f| same(k, f))),
                StoreMode::Replace => {
                    let recent = known
                        .iter()
                        .find(|k| k.eq_ignore_ascii_case("\\Recent"))
                        .cloned();
                    *known = flags.iter().cloned().chain(recent).collect();
                }
            }
        }
    }

    pub(crate) fn seq_of_uid(&self, uid: u32) -> Option<u32> {
        self.slots
            .iter()
            .position(|s| s.uid == Some(uid))
            .and_then(|i| u32::try_from(i + 1).ok())
    }

    /// The flags of a STORE that must stick, folded: not `\Recent`, and in
    /// PERMANENTFLAGS ([`Selected::can_keep`]).
    pub(crate) fn lasting(&self, flags: &[String]) -> BTreeSet<String> {
        flags
            .iter()
            .map(|f| fold(f))
            .filter(|f| f != "\\recent" && self.can_keep(f))
            .collect()
    }

    /// The flags the session knows of the message at `seq`, folded.
    pub(crate) fn folded_flags(&self, seq: u32) -> Option<BTreeSet<String>> {
        self.slot(seq)
            .flags
            .as_ref()
            .map(|flags| flags.iter().map(|f| fold(f)).collect())
    }

    /// Whether a STORE of `flag` (folded) must stick: it is in
    /// PERMANENTFLAGS, or a keyword where `\*` allows new ones. Other flags
    /// may last only for the session, or not at all (RFC 3501 section 7.1).
    pub(crate) fn can_keep(&self, flag: &str) -> bool {
        let Some(permanent) = &self.permanent_flags else {
            return true;
        };
        permanent.iter().any(|p| fold(p) == flag)
            || (!flag.starts_with('\\') && permanent.iter().any(|p| p == "\\*"))
    }

    /// A new UIDVALIDITY: every UID known is void.
    pub(crate) fn forget_uids(&mut self) {
        for slot in &mut self.slots {
            *slot = Slot::default();
        }
        self.expunged.clear();
        self.own.clear();
        self.search_suspects.clear();
        self.max_uid = 0;
    }

    pub(crate) fn snapshot(&self, client: &str) -> Snapshot {
        Snapshot {
            client: client.to_owned(),
            mailbox: self.mailbox.clone(),
            read_only: self.read_only,
            uid_validity: self.uid_validity,
            messages: self
                .slots
                .iter()
                .map(|slot| MessageView {
                    uid: slot.uid,
                    flags: slot.flags.clone(),
                    modseq: slot.modseq,
                })
                .collect(),
            highest_uid: self.max_uid,
        }
    }
}
