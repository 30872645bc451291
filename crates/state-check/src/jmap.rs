//! JMAP: a session's state strings and `/changes` answers must account for
//! every change the session made (RFC 8620 sections 5.1 to 5.3).
//!
//! The model takes each request and its response as JSON values, as they
//! went over the wire, and tracks per data type (`Email`, `Mailbox`, any
//! `Foo` with `Foo/get`, `Foo/set` and `Foo/changes`):
//!
//! * the states it was told, in the order it was told them (a session sends
//!   one request at a time, so that order is the server's);
//! * the ids it saw exist, and when (ids are never reused: RFC 8620 section
//!   1.2, so an id seen before a state and changed after it existed at it);
//! * its own creates, updates and destroys, from each `/set` and `/import`
//!   answer.
//!
//! State strings are opaque: they are compared for equality only.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::violation::{CheckCounts, CheckKind, Violation};

/// Own changes remembered per data type; the oldest are forgotten first (a
/// `/changes` from a state that old is not checked against them).
const CHANGES_KEPT: usize = 10_000;
/// States remembered per data type (and states known to be stale).
const STATES_KEPT: usize = 10_000;
/// Ids remembered per data type as seen existing.
const IDS_KEPT: usize = 200_000;

/// How the session shares its account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JmapOptions {
    /// No other session or client destroys this account's objects: then an
    /// id the session created must show in `/changes` and must not come back
    /// in `notFound` until the session destroys it. Leave it false when
    /// another client may destroy what this one creates: a server may leave
    /// an object created and destroyed since the old state out of `/changes`
    /// altogether (RFC 8620 section 5.2), and the model cannot tell.
    pub sole_writer: bool,
    /// Other sessions of the same account make the same kinds of updates
    /// (two sessions of one account both move or mark one message): then a
    /// session's update may find the change already made, a no-op, which
    /// need not change the state nor show in `/changes` (RFC 8620 section
    /// 5.1 asks a new state only when the data changed). Updates are then
    /// held to nothing; creates and destroys still are.
    pub shared_account: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Created,
    Updated,
    Destroyed,
}

#[derive(Debug, Clone)]
struct OwnChange {
    id: String,
    op: Op,
    step: u64,
    /// The first step the id was seen to exist, before this change.
    seen_since: Option<u64>,
}

/// A `/changes` answer with `hasMoreChanges`, waiting for the next page.
#[derive(Debug, Default)]
struct Chain {
    /// First and last step the `sinceState` of the first page was seen.
    since: Option<(u64, u64)>,
    since_state: String,
    created: BTreeSet<String>,
    updated: BTreeSet<String>,
    destroyed: BTreeSet<String>,
}

#[derive(Debug, Default)]
struct TypeBook {
    /// State -> (first, last) step it was seen.
    states: HashMap<String, (u64, u64)>,
    /// The last state the session was told.
    last_state: Option<String>,
    /// States from before one of the session's own changes: never valid again.
    stale: BTreeSet<String>,
    /// Id -> first step it was seen to exist.
    seen: HashMap<String, u64>,
    changes: Vec<OwnChange>,
    /// Next page's sinceState -> what the pages so far said.
    chains: HashMap<String, Chain>,
}

impl TypeBook {
    fn observe(&mut self, state: &str, step: u64) {
        if self.states.len() >= STATES_KEPT && !self.states.contains_key(state) {
            // Forgetting only weakens later checks; it never invents one.
            self.states.clear();
        }
        let entry = self.states.entry(state.to_owned()).or_insert((step, step));
        entry.1 = step;
        self.last_state = Some(state.to_owned());
    }

    fn saw(&mut self, id: &str, step: u64) {
        if self.seen.len() >= IDS_KEPT && !self.seen.contains_key(id) {
            self.seen.clear();
        }
        self.seen.entry(id.to_owned()).or_insert(step);
    }

    fn changed(&mut self, id: &str, op: Op, step: u64) {
        if self.changes.len() >= CHANGES_KEPT {
            self.changes.drain(..CHANGES_KEPT / 2);
        }
        let seen_since = self.seen.get(id).copied();
        self.changes.push(OwnChange {
            id: id.to_owned(),
            op,
            step,
            seen_since,
        });
    }
}

/// What the session expects of the account after the run, for
/// [`audit`](crate::audit): where it last put each message, and what it
/// destroyed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JmapExpectations {
    /// Email id -> the mailbox id the session last created it in or moved it
    /// to (ids it destroyed are not here).
    pub locations: BTreeMap<String, String>,
    /// Email ids the session destroyed.
    pub destroyed: BTreeSet<String>,
    /// Email ids the session was told were in more than one mailbox before
    /// it placed them itself (an `Email/get` with `mailboxIds`). An Email
    /// may be in several (RFC 8621 section 4.1.1), and Cyrus shows identical
    /// messages as one Email in each of their mailboxes (a lab used before:
    /// `init` appends a message again that an earlier run moved away). The
    /// audit does not expect exactly one mailbox of those.
    pub in_several: BTreeSet<String>,
}

/// Email ids kept in [`JmapExpectations::in_several`]; past it, the first
/// ones stay (the audit then checks a few more, which may then be flagged).
const IN_SEVERAL_KEPT: usize = 10_000;

/// One JMAP session's model. Feed it every request and its response
/// ([`JmapSessionModel::exchange`]), in the order the session sent them.
#[derive(Debug)]
pub struct JmapSessionModel {
    client: String,
    options: JmapOptions,
    step: u64,
    types: BTreeMap<String, TypeBook>,
    /// Email ids the session created and has not destroyed.
    alive: BTreeSet<String>,
    expectations: JmapExpectations,
    checks: CheckCounts,
}

/// The `[name, arguments, callId]` triples of a request's `methodCalls` or a
/// response's `methodResponses`.
fn invocations<'a>(body: &'a Value, key: &str) -> Vec<(&'a str, &'a Value, &'a str)> {
    body.get(key)
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|call| {
                    let call = call.as_array()?;
                    Some((
                        call.first()?.as_str()?,
                        call.get(1)?,
                        call.get(2)?.as_str()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn object_keys(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The mailbox a create or update puts a message in: the one set to true
/// (`mailboxIds/X: true` in a patch, or a whole `mailboxIds` object).
fn mailbox_set(object: &Value) -> Option<String> {
    let object = object.as_object()?;
    if let Some(ids) = object.get("mailboxIds").and_then(Value::as_object) {
        return ids
            .iter()
            .find(|(_, on)| on.as_bool() == Some(true))
            .map(|(id, _)| id.clone());
    }
    object.iter().find_map(|(path, on)| {
        let id = path.strip_prefix("mailboxIds/")?;
        (on.as_bool() == Some(true)).then(|| id.to_owned())
    })
}

impl JmapSessionModel {
    /// A model for the session `client` (its client id in reports).
    pub fn new(client: impl Into<String>, options: JmapOptions) -> Self {
        JmapSessionModel {
            client: client.into(),
            options,
            step: 0,
            types: BTreeMap::new(),
            alive: BTreeSet::new(),
            expectations: JmapExpectations::default(),
            checks: CheckCounts::default(),
        }
    }

    /// Checks made so far, by kind.
    pub fn checks(&self) -> &CheckCounts {
        &self.checks
    }

    /// Where the session left its messages, for the audit after the run.
    pub fn expectations(&self) -> &JmapExpectations {
        &self.expectations
    }

    /// One request (`{"using": .., "methodCalls": [..]}`) and the response
    /// the server gave it (`{"methodResponses": [..], ..}`), both as sent
    /// over the wire. Returns the violations the response reveals.
    pub fn exchange(&mut self, request: &Value, response: &Value) -> Vec<Violation> {
        let calls = invocations(request, "methodCalls");
        let mut found = Vec::new();
        for (name, args, call_id) in invocations(response, "methodResponses") {
            // A call's own arguments, if the response answers one by name
            // (an implicit `Email/set` after `EmailSubmission/set` answers
            // no call of its own).
            let asked = calls
                .iter()
                .find(|(n, _, id)| *id == call_id && *n == name)
                .map(|(_, a, _)| *a);
            let asked_by_id = calls.iter().find(|(_, _, id)| *id == call_id);
            if name == "error" {
                // cannotCalculateChanges and every other method error: the
                // server said it did nothing; an unfinished /changes chain
                // from that call is dropped (RFC 8620 section 5.2 allows it).
                if let Some((called, called_args, _)) = asked_by_id
                    && let Some(kind) = called.strip_suffix("/changes")
                    && let Some(since) = called_args.get("sinceState").and_then(Value::as_str)
                {
                    self.book(kind).chains.remove(since);
                }
                continue;
            }
            let Some((kind, method)) = name.split_once('/') else {
                continue;
            };
            match method {
                "get" => found.extend(self.get(kind, args, asked)),
                "query" => {
                    self.step += 1;
                    let step = self.step;
                    let book = self.book(kind);
                    for id in strings(args.get("ids")) {
                        book.saw(&id, step);
                    }
                }
                "set" | "import" | "copy" => found.extend(self.set(kind, args, asked)),
                "changes" => found.extend(self.changes(kind, args)),
                _ => {}
            }
        }
        found
    }

    fn book(&mut self, kind: &str) -> &mut TypeBook {
        self.types.entry(kind.to_owned()).or_default()
    }

    fn violation(
        &self,
        kind: CheckKind,
        object: String,
        expected: String,
        seen: String,
    ) -> Violation {
        Violation {
            kind,
            client: self.client.clone(),
            mailbox: object,
            seq: None,
            uid: None,
            expected,
            seen,
        }
    }

    /// A state the session was told: it must not be one from before the
    /// session's own change.
    fn told_state(&mut self, kind: &str, state: &str, found: &mut Vec<Violation>) {
        self.step += 1;
        let step = self.step;
        let stale = self.book(kind).stale.contains(state);
        if stale {
            found.push(self.violation(
                CheckKind::JmapStateUnchanged,
                format!("{kind} state"),
                "a state after the session's own change".to_owned(),
                format!("state {state:?}, from before it"),
            ));
        }
        self.book(kind).observe(state, step);
    }

    fn get(&mut self, kind: &str, args: &Value, asked: Option<&Value>) -> Vec<Violation> {
        let mut found = Vec::new();
        if let Some(state) = args.get("state").and_then(Value::as_str) {
            self.told_state(kind, state, &mut found);
        }
        let step = self.step;
        let listed: Vec<String> = args
            .get("list")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|o| o.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for id in &listed {
            self.book(kind).saw(id, step);
        }
        if kind == "Email" {
            self.note_in_several(args);
        }
        if kind != "Email" || !self.options.sole_writer {
            return found;
        }
        let not_found = strings(args.get("notFound"));
        let asked_ids = strings(asked.and_then(|a| a.get("ids")));
        for id in asked_ids.iter().filter(|id| self.alive.contains(*id)) {
            self.checks.count(CheckKind::JmapCreatedNotFound);
            if not_found.contains(id) {
                found.push(self.violation(
                    CheckKind::JmapCreatedNotFound,
                    format!("Email {id}"),
                    "the Email the session created (never destroyed)".to_owned(),
                    "notFound".to_owned(),
                ));
            }
        }
        found
    }

    /// Emails an `Email/get` lists in more than one mailbox that the
    /// session has not placed yet: see [`JmapExpectations::in_several`].
    fn note_in_several(&mut self, args: &Value) {
        for email in args
            .get("list")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(id), Some(mailboxes)) = (
                email.get("id").and_then(Value::as_str),
                email.get("mailboxIds").and_then(Value::as_object),
            ) else {
                continue;
            };
            let several = mailboxes
                .values()
                .filter(|on| on.as_bool() == Some(true))
                .count()
                > 1;
            let placed = self.expectations.locations.contains_key(id);
            if several && !placed && self.expectations.in_several.len() < IN_SEVERAL_KEPT {
                self.expectations.in_several.insert(id.to_owned());
            }
        }
    }

    fn set(&mut self, kind: &str, args: &Value, asked: Option<&Value>) -> Vec<Violation> {
        let mut found = Vec::new();
        let before = self.book(kind).last_state.clone();
        let old_state = args.get("oldState").and_then(Value::as_str);
        if let Some(old) = old_state {
            self.told_state(kind, old, &mut found);
        }
        self.step += 1;
        let step = self.step;
        // created: {creationId: {id, ..}}; the request's create (or
        // import's emails) says where each went.
        let mut changed = 0;
        if let Some(created) = args.get("created").and_then(Value::as_object) {
            for (creation_id, object) in created {
                let Some(id) = object.get("id").and_then(Value::as_str) else {
                    continue;
                };
                changed += 1;
                self.book(kind).changed(id, Op::Created, step);
                self.book(kind).saw(id, step);
                if kind == "Email" {
                    self.alive.insert(id.to_owned());
                    let spec = asked.and_then(|a| {
                        a.get("create")
                            .or_else(|| a.get("emails"))
                            .and_then(|c| c.get(creation_id))
                    });
                    if let Some(mailbox) = spec.and_then(mailbox_set) {
                        self.expectations.locations.insert(id.to_owned(), mailbox);
                    }
                }
            }
        }
        for id in object_keys(args.get("updated")) {
            // Another session of the account may have made this update
            // first: then it changed nothing (see `shared_account`).
            if !self.options.shared_account {
                changed += 1;
                self.book(kind).changed(&id, Op::Updated, step);
            }
            if kind == "Email" {
                let patch = asked.and_then(|a| a.get("update")).and_then(|u| u.get(&id));
                if let Some(mailbox) = patch.and_then(mailbox_set) {
                    self.expectations.locations.insert(id.clone(), mailbox);
                }
            }
        }
        for id in strings(args.get("destroyed")) {
            // On a shared account the other session may have destroyed it
            // first, and Cyrus 3.6 then still lists it `destroyed`, the
            // state unchanged (RFC 8620 section 5.3 wants `notDestroyed`,
            // `notFound`): a destroy is held to nothing there either.
            if !self.options.shared_account {
                changed += 1;
                self.book(kind).changed(&id, Op::Destroyed, step);
            }
            if kind == "Email" {
                self.alive.remove(&id);
                self.expectations.locations.remove(&id);
                self.expectations.destroyed.insert(id);
            }
        }
        let Some(new_state) = args.get("newState").and_then(Value::as_str) else {
            return found;
        };
        if changed > 0 {
            self.checks.count(CheckKind::JmapStateUnchanged);
            let earlier = old_state.map(str::to_owned).or(before.clone());
            if earlier.as_deref() == Some(new_state) {
                found.push(self.violation(
                    CheckKind::JmapStateUnchanged,
                    format!("{kind} state"),
                    format!("a new state after {changed} change(s)"),
                    format!("newState {new_state:?} = the state before them"),
                ));
            }
            let book = self.book(kind);
            book.stale.extend(before);
            book.stale.extend(old_state.map(str::to_owned));
            book.stale.remove(new_state);
            if book.stale.len() > STATES_KEPT {
                book.stale.clear();
            }
        }
        self.step += 1;
        let step = self.step;
        self.book(kind).observe(new_state, step);
        found
    }

    fn changes(&mut self, kind: &str, args: &Value) -> Vec<Violation> {
        let mut found = Vec::new();
        let (Some(old), Some(new)) = (
            args.get("oldState").and_then(Value::as_str),
            args.get("newState").and_then(Value::as_str),
        ) else {
            return found;
        };
        let more = args.get("hasMoreChanges").and_then(Value::as_bool) == Some(true);
        let book = self.book(kind);
        let mut chain = book.chains.remove(old).unwrap_or_else(|| Chain {
            since: book.states.get(old).copied(),
            since_state: old.to_owned(),
            ..Chain::default()
        });
        chain.created.extend(strings(args.get("created")));
        chain.updated.extend(strings(args.get("updated")));
        chain.destroyed.extend(strings(args.get("destroyed")));
        if more {
            // An intermediate state is a past one, of a time the session
            // cannot place (it may be from before the session's own
            // changes): it is not recorded as seen now, only followed.
            self.book(kind).chains.insert(new.to_owned(), chain);
            return found;
        }
        self.told_state(kind, new, &mut found);
        let Some((since_first, since_last)) = chain.since else {
            // A state this session was never told: nothing to hold it to.
            return found;
        };
        let now = self.step;
        let book = &self.types[kind];
        let mut missing = Vec::new();
        let mut checked = 0;
        for change in book
            .changes
            .iter()
            .filter(|c| c.step > since_first && c.step < now)
        {
            let existed = change.seen_since.is_some_and(|s| s <= since_last);
            let destroyed_later = book.changes.iter().any(|c| {
                c.id == change.id && c.op == Op::Destroyed && c.step > since_first && c.step < now
            });
            let listed_in = |set: &BTreeSet<String>| set.contains(&change.id);
            let reported = match change.op {
                // Created since: created (or updated, by a lenient server).
                Op::Created => listed_in(&chain.created) || listed_in(&chain.updated),
                Op::Updated => {
                    listed_in(&chain.updated)
                        || listed_in(&chain.destroyed)
                        || listed_in(&chain.created)
                }
                Op::Destroyed => listed_in(&chain.destroyed),
            };
            // Created and destroyed since the old state: a server SHOULD
            // leave it out (RFC 8620 section 5.2), or may list it destroyed.
            // An id not known to exist at the old state may have been
            // created after it; then a destroy may be left out, and so may
            // a create or update if the id was destroyed since (by this
            // session, or by anyone when the session is not the only writer).
            let may_be_left_out = !existed
                && match change.op {
                    Op::Destroyed => true,
                    Op::Created | Op::Updated => destroyed_later || !self.options.sole_writer,
                };
            if may_be_left_out {
                // Nothing to hold the server to: not a check.
                continue;
            }
            checked += 1;
            if !reported {
                missing.push(change.clone());
            }
        }
        for _ in 0..checked {
            self.checks.count(CheckKind::JmapChangesMissing);
        }
        for change in missing {
            let (op, list) = match change.op {
                Op::Created => ("created", "created"),
                Op::Updated => ("updated", "updated or destroyed"),
                Op::Destroyed => ("destroyed", "destroyed"),
            };
            found.push(self.violation(
                CheckKind::JmapChangesMissing,
                format!("{kind} {}", change.id),
                format!(
                    "in {list} of {kind}/changes since {:?} (the session {op} it)",
                    chain.since_state
                ),
                "left out".to_owned(),
            ));
        }
        found
    }
}
