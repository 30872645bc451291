//! One session's model: what the server told it about its selected mailbox,
//! and the continuous checks on each new answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::command::{self, Command, Criteria, Key, NumberSet, Sent, StoreMode};
use crate::framing::{Frame, Splitter};
use crate::response::{self, Codes, Fetched, Received};
use crate::selected::{Own, Selected, fold};
use crate::snapshot::{Snapshot, SnapshotError};
use crate::violation::{CheckCounts, CheckKind, Violation};

/// Messages whose static items a session remembers at most; past it, new
/// messages are not remembered (memory stays bounded on a 24-hour run).
const STATIC_MESSAGES_MAX: usize = 100_000;

/// Messages a session's model tracks at most: an EXISTS above it (a hostile
/// or broken server) stops the model rather than its memory.
const MESSAGES_MAX: u32 = 1_000_000;

/// How the session uses its account, which decides what its own changes
/// let the model expect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// No other session changes this account's flags: the session's own
    /// STOREs must then show in the STORE's answer and hold in every later
    /// FETCH. Leave it false when the profile shares an account between
    /// sessions: another session's change, even one made at the same time
    /// as the STORE, may show in its answer, and is no server bug.
    pub sole_writer: bool,
}

/// A command sent and not yet completed, with what its checks need.
#[derive(Debug)]
struct Pending {
    tag: String,
    command: Command,
    /// MOVE: the UIDs it names that the session knew when it was sent.
    moved: Vec<u32>,
    /// MOVE: the source UIDs its `[COPYUID]` says were moved.
    copied: Option<NumberSet>,
    /// STORE: the sequence numbers whose flags its answer reported (the
    /// others, a silent STORE's, take the flags the session set).
    reported: Vec<u32>,
    /// SEARCH with criteria the model evaluates: the UIDs the session knew
    /// when it was sent (ascending), the only ones its answer is checked for.
    known: Vec<u32>,
    /// SEARCH: the numbers of its `* SEARCH` answers.
    answer: Vec<u32>,
    /// SELECT and EXAMINE: the mailbox is switched when the command becomes
    /// the one the server answers (a SELECT written behind DONE leaves the
    /// mailbox alone until IDLE completes), once.
    switched: bool,
}

/// Where a message's static items are remembered: per mailbox and
/// UIDVALIDITY, so they survive a reselect.
type StaticKey = (String, u32, u32);

/// The model of one IMAP session.
///
/// Feed it every byte the session wrote ([`SessionModel::sent`]) and every
/// byte it read ([`SessionModel::received`]), in the order they went over
/// the wire, in chunks of any size; `received` returns the violations the
/// new responses reveal. [`SessionModel::snapshot`] gives what the session
/// knows of its mailbox for [`crate::checkpoint`].
#[derive(Debug)]
pub struct SessionModel {
    client: String,
    options: SessionOptions,
    from_client: Splitter,
    from_server: Splitter,
    pending: Vec<Pending>,
    pub(crate) selected: Option<Selected>,
    statics: HashMap<StaticKey, BTreeMap<String, String>>,
    checks: CheckCounts,
    undecodable: u64,
    lost_track: Option<String>,
    found: Vec<Violation>,
}

impl SessionModel {
    /// A model for the session `client` (the id its violations name),
    /// before the server's greeting.
    pub fn new(client: impl Into<String>, options: SessionOptions) -> Self {
        let limits = peakhour_imap::Limits::default();
        Self {
            client: client.into(),
            options,
            from_client: Splitter::new(limits.max_line, limits.max_literal),
            from_server: Splitter::new(limits.max_line, limits.max_literal),
            pending: Vec::new(),
            selected: None,
            statics: HashMap::new(),
            checks: CheckCounts::default(),
            undecodable: 0,
            lost_track: None,
            found: Vec::new(),
        }
    }

    /// The session's client id.
    pub fn client(&self) -> &str {
        &self.client
    }

    /// How many checks of each kind this session made.
    pub fn checks(&self) -> &CheckCounts {
        &self.checks
    }

    /// Data responses imap-codec could not decode (skipped, not checked).
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }

    /// Why the model stopped checking, if it did: the stream broke a bound
    /// the client also enforces (an absurd literal, an endless line).
    pub fn lost_track(&self) -> Option<&str> {
        self.lost_track.as_deref()
    }

    /// Bytes the session wrote, in any chunks.
    pub fn sent(&mut self, bytes: &[u8]) {
        if self.lost_track.is_some() {
            return;
        }
        self.from_client.push(bytes);
        loop {
            match self.from_client.next_frame() {
                Ok(Some(frame)) => self.on_sent(&frame),
                Ok(None) => break,
                Err(overflow) => {
                    self.lost_track = Some(format!("the client sent {}", overflow.0));
                    break;
                }
            }
        }
    }

    /// Bytes the session read, in any chunks; the violations they reveal.
    pub fn received(&mut self, bytes: &[u8]) -> Vec<Violation> {
        if self.lost_track.is_some() {
            return Vec::new();
        }
        self.from_server.push(bytes);
        loop {
            if self.lost_track.is_some() {
                break;
            }
            match self.from_server.next_frame() {
                Ok(Some(frame)) => self.on_received(&frame),
                Ok(None) => break,
                Err(overflow) => {
                    self.lost_track = Some(format!("the server sent {}", overflow.0));
                    break;
                }
            }
        }
        std::mem::take(&mut self.found)
    }

    /// What the session knows of its selected mailbox now, for a
    /// checkpoint. Take it when the session has no command in progress,
    /// after a NOOP or CHECK that followed every command it sent.
    pub fn snapshot(&self) -> Result<Snapshot, SnapshotError> {
        if let Some(reason) = &self.lost_track {
            return Err(SnapshotError::LostTrack(reason.clone()));
        }
        if let Some(pending) = self.pending.first() {
            return Err(SnapshotError::CommandInProgress(pending.tag.clone()));
        }
        match &self.selected {
            Some(selected) if selected.synced => Ok(selected.snapshot(&self.client)),
            _ => Err(SnapshotError::NothingSelected),
        }
    }

    fn on_sent(&mut self, frame: &Frame) {
        let Sent::Command { tag, command } = command::read(frame) else {
            return;
        };
        let mut moved = Vec::new();
        let mut known = Vec::new();
        match &command {
            Command::Fetch {
                uid,
                set,
                sets_seen: true,
            } => {
                if let Some(selected) = &mut self.selected {
                    for uid in selected.uids_in(*uid, set) {
                        if let Some(own) = selected.own.get_mut(&uid) {
                            own.must_not.remove("\\seen");
                        }
                    }
                }
            }
            Command::Move { uid, set, .. } => {
                if let Some(selected) = &self.selected {
                    moved = selected.uids_in(*uid, set);
                }
            }
            Command::Search {
                criteria: Some(_), ..
            } => {
                if let Some(selected) = &self.selected {
                    known = selected.known_uids();
                }
            }
            _ => {}
        }
        self.pending.push(Pending {
            tag,
            command,
            moved,
            copied: None,
            reported: Vec::new(),
            known,
            answer: Vec::new(),
            switched: false,
        });
        self.switch_mailbox();
    }

    /// A SELECT or EXAMINE that the server now answers deselects the
    /// mailbox at once, even if it then fails.
    fn switch_mailbox(&mut self) {
        if let Some(Pending {
            command: Command::Select { mailbox, read_only },
            switched: switched @ false,
            ..
        }) = self.pending.first_mut()
        {
            *switched = true;
            self.selected = Some(Selected::new(mailbox.clone(), *read_only));
        }
    }

    fn on_received(&mut self, frame: &Frame) {
        match response::read(frame) {
            Received::Continuation | Received::Other => {}
            Received::Undecodable => self.undecodable += 1,
            Received::Status(codes) => {
                self.on_codes(&codes);
                if let (Some(copied), Some(pending)) = (codes.copied, self.pending.first_mut()) {
                    pending.copied = Some(copied);
                }
            }
            Received::Tagged { tag, ok, codes } => {
                self.on_codes(&codes);
                if let Some(i) = self.pending.iter().position(|p| p.tag == tag) {
                    let mut pending = self.pending.remove(i);
                    if codes.copied.is_some() {
                        pending.copied = codes.copied;
                    }
                    self.on_completed(pending, ok);
                    self.switch_mailbox();
                }
            }
            Received::Exists(n) => self.on_exists(n),
            Received::Recent(_) => {}
            Received::Expunge(seq) => self.on_expunge(seq),
            Received::Flags(flags) => {
                if let Some(selected) = &mut self.selected {
                    selected.defined = Some(flags);
                }
            }
            Received::Fetch(fetched) => self.on_fetch(fetched),
            Received::Search(numbers) => {
                if let Some(Pending {
                    command: Command::Search { .. },
                    answer,
                    ..
                }) = self.pending.first_mut()
                {
                    answer.extend(numbers);
                }
            }
        }
    }

    fn violation(
        &mut self,
        kind: CheckKind,
        at: (Option<u32>, Option<u32>),
        expected: String,
        seen: String,
    ) {
        let mailbox = self
            .selected
            .as_ref()
            .map(|s| s.mailbox.clone())
            .unwrap_or_default();
        self.found.push(Violation {
            kind,
            client: self.client.clone(),
            mailbox,
            seq: at.0,
            uid: at.1,
            expected,
            seen,
        });
    }

    fn on_codes(&mut self, codes: &Codes) {
        let Some(selected) = &mut self.selected else {
            return;
        };
        if let Some(validity) = codes.uid_validity {
            if selected.uid_validity.is_some_and(|old| old != validity) {
                // A new UIDVALIDITY voids every UID the session knew
                // (RFC 3501 section 2.3.1.1): allowed, so start over.
                selected.forget_uids();
            }
            selected.uid_validity = Some(validity);
        }
        if let Some(next) = codes.uid_next {
            selected.uid_next = Some(next);
        }
        if codes.read_only {
            selected.read_only = true;
        }
        if let Some(flags) = &codes.permanent_flags {
            selected.permanent_flags = Some(flags.clone());
        }
    }

    fn on_completed(&mut self, pending: Pending, ok: bool) {
        match pending.command {
            Command::Select { .. } => match &mut self.selected {
                Some(selected) if ok => selected.synced = true,
                _ => self.selected = None,
            },
            Command::Close if ok => self.selected = None,
            Command::Store {
                uid,
                set,
                mode,
                flags,
                conditional: false,
                ..
            } if ok => {
                self.expect_own_store(uid, &set, mode, &flags);
                if let Some(selected) = &mut self.selected {
                    selected.apply_own_store(uid, &set, mode, &flags, &pending.reported);
                }
            }
            Command::Move { .. } if ok => {
                if let Some(copied) = &pending.copied {
                    self.check_moved(&pending.moved, copied);
                }
            }
            Command::Search {
                uid,
                criteria: Some(criteria),
            } if ok => self.check_search(uid, &criteria, &pending.known, pending.answer),
            Command::Other(name) if ok && (name == "NOOP" || name == "CHECK") => {
                self.judge_search_suspects(&name);
            }
            _ => {}
        }
    }

    /// After the session's STORE completed: what its later FETCHes must show.
    fn expect_own_store(&mut self, uid: bool, set: &NumberSet, mode: StoreMode, flags: &[String]) {
        let Some(selected) = &mut self.selected else {
            return;
        };
        let flags = selected.lasting(flags);
        for uid in selected.uids_in(uid, set) {
            let known = selected
                .seq_of_uid(uid)
                .and_then(|seq| selected.folded_flags(seq));
            let own = selected.own.entry(uid).or_default();
            own.apply(mode, &flags, known);
        }
    }

    /// After the session's MOVE completed: every message it named, knew
    /// and the server's `[COPYUID]` says it moved must have been reported
    /// expunged (RFC 6851 section 3.3). Without COPYUID (no UIDPLUS) the
    /// model cannot tell a moved message from one another session had
    /// expunged already, whose EXPUNGE the server may still defer.
    fn check_moved(&mut self, moved: &[u32], copied: &NumberSet) {
        let Some(selected) = &self.selected else {
            return;
        };
        let moved: Vec<u32> = moved
            .iter()
            .copied()
            .filter(|&uid| copied.contains(uid, u32::MAX))
            .collect();
        let still: Vec<(u32, u32)> = moved
            .iter()
            .filter_map(|&uid| selected.seq_of_uid(uid).map(|seq| (seq, uid)))
            .collect();
        for _ in &moved {
            self.checks.count(CheckKind::MoveNotExpunged);
        }
        for (seq, uid) in still {
            self.violation(
                CheckKind::MoveNotExpunged,
                (Some(seq), Some(uid)),
                "EXPUNGE before MOVE's OK".to_owned(),
                format!("still at seq {seq}"),
            );
        }
    }

    /// After the session's SEARCH completed: every message it knew when it
    /// searched, still there, that matches the criteria must be in the
    /// answer. One left out is a suspect, not yet a violation: another
    /// session may have expunged it, and the server searched without it
    /// while it still owes this session the EXPUNGE (which it may not send
    /// during a SEARCH by sequence number). Flag criteria are judged only
    /// for a sole writer (another session may change a flag at any time);
    /// messages whose flags the session was never told are skipped.
    fn check_search(&mut self, by_uid: bool, criteria: &Criteria, known: &[u32], answer: Vec<u32>) {
        if criteria.needs_flags() && !self.options.sole_writer {
            return;
        }
        let Some(selected) = &mut self.selected else {
            return;
        };
        let answer: BTreeSet<u32> = answer.into_iter().collect();
        let (count, max_uid) = (selected.count(), selected.max_uid);
        let mut left_out = Vec::new();
        for (seq, slot) in selected.slots() {
            let Some(uid) = slot.uid.filter(|uid| known.binary_search(uid).is_ok()) else {
                continue;
            };
            let matches = criteria.keys.iter().try_fold(true, |all, key| {
                let this = match key {
                    Key::All => true,
                    Key::Uid(set) => set.contains(uid, max_uid),
                    Key::Sequence(set) => set.contains(seq, count),
                    Key::Flag { flag, set } => {
                        let flags = slot.flags.as_ref()?;
                        flags.iter().any(|f| fold(f) == *flag) == *set
                    }
                };
                Some(all && this)
            });
            if matches != Some(true) {
                continue;
            }
            self.checks.count(CheckKind::SearchMissing);
            if !answer.contains(if by_uid { &uid } else { &seq }) {
                left_out.push(uid);
            }
        }
        let command = if by_uid { "UID SEARCH" } else { "SEARCH" };
        for uid in left_out {
            selected.suspect(
                uid,
                format!(
                    "UID {uid} in the answer to {command} {} ({} numbers)",
                    criteria.text,
                    answer.len()
                ),
            );
        }
    }

    /// A NOOP or CHECK completed: the server has told the session of every
    /// EXPUNGE by now (RFC 3501 section 5.2, as the checkpoint assumes), so
    /// a message a SEARCH left out and that is still there was missed.
    fn judge_search_suspects(&mut self, command: &str) {
        let Some(selected) = &mut self.selected else {
            return;
        };
        let suspects = std::mem::take(&mut selected.search_suspects);
        let missed: Vec<(u32, u32, String)> = suspects
            .into_iter()
            .filter_map(|(uid, expected)| selected.seq_of_uid(uid).map(|seq| (seq, uid, expected)))
            .collect();
        for (seq, uid, expected) in missed {
            self.violation(
                CheckKind::SearchMissing,
                (Some(seq), Some(uid)),
                expected,
                format!("left out, and still at seq {seq} when {command} completed"),
            );
        }
    }

    fn on_exists(&mut self, n: u32) {
        if n > MESSAGES_MAX {
            self.lost_track = Some(format!(
                "the server announced {n} messages; the model tracks at most {MESSAGES_MAX}"
            ));
            return;
        }
        let Some(selected) = &mut self.selected else {
            return;
        };
        self.checks.count(CheckKind::ExistsShrank);
        let count = selected.count();
        if n < count {
            self.violation(
                CheckKind::ExistsShrank,
                (None, None),
                format!("at least {count} messages (no EXPUNGE)"),
                format!("{n} EXISTS"),
            );
            return;
        }
        selected.grow(n);
    }

    /// The command the server is answering now: the oldest in progress.
    fn in_progress(&self) -> Option<&Command> {
        self.pending.first().map(|p| &p.command)
    }

    fn on_expunge(&mut self, seq: u32) {
        if self.selected.is_none() {
            return;
        }
        self.checks.count(CheckKind::ExpungeNotAllowed);
        let forbidden = match self.in_progress() {
            None => Some("no command in progress".to_owned()),
            Some(Command::Fetch { uid: false, .. }) => Some("during FETCH".to_owned()),
            Some(Command::Store { uid: false, .. }) => Some("during STORE".to_owned()),
            Some(Command::Search { uid: false, .. }) => Some("during SEARCH".to_owned()),
            _ => None,
        };
        let count = self.selected.as_ref().map_or(0, Selected::count);
        let uid = match &self.selected {
            Some(selected) if (1..=count).contains(&seq) => selected.slot(seq).uid,
            _ => None,
        };
        if let Some(when) = forbidden {
            self.violation(
                CheckKind::ExpungeNotAllowed,
                (Some(seq), uid),
                "no EXPUNGE (RFC 3501 section 7.4.1)".to_owned(),
                format!("EXPUNGE {when}"),
            );
        }
        self.checks.count(CheckKind::SequenceNotAnnounced);
        if seq == 0 || seq > count {
            self.violation(
                CheckKind::SequenceNotAnnounced,
                (Some(seq), None),
                format!("a sequence number in 1..={count}"),
                format!("EXPUNGE {seq}"),
            );
            return;
        }
        if let Some(selected) = &mut self.selected {
            selected.expunge(seq);
        }
    }

    fn on_fetch(&mut self, fetched: Fetched) {
        let Some(selected) = &self.selected else {
            return;
        };
        let count = selected.count();
        self.checks.count(CheckKind::SequenceNotAnnounced);
        if fetched.seq == 0 || fetched.seq > count {
            self.violation(
                CheckKind::SequenceNotAnnounced,
                (Some(fetched.seq), fetched.uid),
                format!("a sequence number in 1..={count}"),
                format!("FETCH {}", fetched.seq),
            );
            return;
        }
        if let Some(uid) = fetched.uid {
            self.check_uid(fetched.seq, uid);
        }
        let uid = self.selected.as_ref().and_then(|s| s.slot(fetched.seq).uid);
        if let Some(flags) = &fetched.flags {
            self.check_flags(fetched.seq, uid, flags);
            if let Some(Pending {
                command: Command::Store { .. },
                reported,
                ..
            }) = self.pending.first_mut()
            {
                reported.push(fetched.seq);
            }
        }
        if let Some(modseq) = fetched.modseq {
            self.check_modseq(fetched.seq, uid, modseq);
        }
        if let Some(uid) = uid
            && !fetched.statics.is_empty()
        {
            self.check_statics(fetched.seq, uid, fetched.statics);
        }
    }

    fn check_uid(&mut self, seq: u32, uid: u32) {
        let Some(selected) = &self.selected else {
            return;
        };
        let at = (Some(seq), Some(uid));
        self.checks.count(CheckKind::UidChanged);
        self.checks.count(CheckKind::UidOrder);
        self.checks.count(CheckKind::ExpungedMessageReturned);
        if selected.expunged.contains(&uid) {
            self.violation(
                CheckKind::ExpungedMessageReturned,
                at,
                format!("nothing: UID {uid} was reported expunged"),
                format!("FETCH of UID {uid}"),
            );
            return;
        }
        if let Some(known) = selected.slot(seq).uid {
            if known != uid {
                self.violation(
                    CheckKind::UidChanged,
                    at,
                    format!("UID {known}"),
                    format!("UID {uid}"),
                );
            }
            return;
        }
        if let Some(expected) = selected.uid_order_error(seq, uid) {
            self.violation(CheckKind::UidOrder, at, expected, format!("UID {uid}"));
            return;
        }
        if let Some(selected) = &mut self.selected {
            selected.set_uid(seq, uid);
        }
    }

    fn check_flags(&mut self, seq: u32, uid: Option<u32>, flags: &[String]) {
        let Some(selected) = &self.selected else {
            return;
        };
        let at = (Some(seq), uid);
        let mut found = Vec::new();
        if let Some(defined) = &selected.defined {
            for keyword in flags.iter().filter(|f| !f.starts_with('\\')) {
                self.checks.count(CheckKind::KeywordNotInFlags);
                if !defined.iter().any(|d| d.eq_ignore_ascii_case(keyword)) {
                    found.push((
                        CheckKind::KeywordNotInFlags,
                        format!("a keyword of FLAGS ({})", defined.join(" ")),
                        keyword.clone(),
                    ));
                }
            }
        }
        if let Some(expected) = self.own_expectation(seq, uid) {
            self.checks.count(CheckKind::OwnStoreLost);
            let folded: BTreeSet<String> = flags.iter().map(|f| fold(f)).collect();
            let missing: Vec<&String> = expected.must_have.difference(&folded).collect();
            let kept: Vec<&String> = expected.must_not.intersection(&folded).collect();
            if !missing.is_empty() || !kept.is_empty() {
                found.push((
                    CheckKind::OwnStoreLost,
                    expected.describe(),
                    format!("FLAGS ({})", flags.join(" ")),
                ));
            }
        }
        for (kind, expected, seen) in found {
            self.violation(kind, at, expected, seen);
        }
        if let Some(selected) = &mut self.selected {
            selected.slot_mut(seq).flags = Some(flags.iter().cloned().collect());
        }
    }

    /// What the session's own STOREs let it expect of this message's flags
    /// now, for a sole writer: the STORE in progress, whose answer this is,
    /// or every STORE it made. A session that shares its account expects
    /// nothing, not even of its STORE's own answer: a STORE another session
    /// makes at the same time may show in it (Dovecot answers both with
    /// the flags after both; `tests/fixtures/latitude/concurrent_stores.txt`).
    fn own_expectation(&self, seq: u32, uid: Option<u32>) -> Option<Own> {
        if !self.options.sole_writer {
            return None;
        }
        let selected = self.selected.as_ref()?;
        let before = uid.and_then(|uid| selected.own.get(&uid)).cloned();
        if let Some(Command::Store {
            uid: by_uid,
            set,
            mode,
            flags,
            conditional: false,
            ..
        }) = self.in_progress()
        {
            let named = match (by_uid, uid) {
                (true, Some(uid)) => set.contains(uid, selected.max_uid),
                (true, None) => false,
                (false, _) => set.contains(seq, selected.count()),
            };
            if named {
                // This answer shows the STORE in progress on top of the
                // ones before it (a silent STORE may be answered too:
                // Cyrus does under CONDSTORE).
                let mut own = before.unwrap_or_default();
                own.apply(*mode, &selected.lasting(flags), selected.folded_flags(seq));
                return Some(own);
            }
        }
        before
    }

    fn check_modseq(&mut self, seq: u32, uid: Option<u32>, modseq: u64) {
        let Some(selected) = &mut self.selected else {
            return;
        };
        let slot = selected.slot_mut(seq);
        let before = slot.modseq.replace(modseq);
        self.checks.count(CheckKind::ModseqBackwards);
        if let Some(before) = before
            && modseq < before
        {
            self.violation(
                CheckKind::ModseqBackwards,
                (Some(seq), uid),
                format!("MODSEQ >= {before}"),
                format!("MODSEQ {modseq}"),
            );
        }
    }

    fn check_statics(&mut self, seq: u32, uid: u32, statics: Vec<(String, String)>) {
        let Some(selected) = &self.selected else {
            return;
        };
        let key = (
            selected.mailbox.clone(),
            selected.uid_validity.unwrap_or(0),
            uid,
        );
        if !self.statics.contains_key(&key) && self.statics.len() >= STATIC_MESSAGES_MAX {
            return;
        }
        let known = self.statics.entry(key).or_default();
        let mut changed = Vec::new();
        let mut compared = 0;
        for (item, value) in statics {
            match known.get(&item) {
                Some(before) => {
                    compared += 1;
                    if *before != value {
                        changed.push((format!("{item} {before}"), format!("{item} {value}")));
                    }
                }
                None => {
                    known.insert(item, value);
                }
            }
        }
        for _ in 0..compared {
            self.checks.count(CheckKind::StaticChanged);
        }
        for (expected, seen) in changed {
            self.violation(
                CheckKind::StaticChanged,
                (Some(seq), Some(uid)),
                expected,
                seen,
            );
        }
    }
}
