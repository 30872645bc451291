//! CalDAV: what a session wrote must be what it reads back. An ETag a PUT
//! returned is what the next GET or REPORT of that href shows, a deleted
//! event stays gone, and `If-Match` with the current ETag succeeds.
//!
//! These hold only where nobody else writes the session's events: another
//! session, or the server itself through scheduling (RFC 6638: an attendee's
//! reply changes the organizer's copy). So every check needs
//! [`CalDavOptions::sole_writer`], and [`CalDavSessionModel::changed_elsewhere`]
//! voids what the model knows of one href when the session learns of
//! another writer. Latitude kept: a PUT may return no ETag (RFC 4791
//! section 5.3.4: the server changed what it stored); then there is nothing
//! to compare until a read tells the ETag. A 412 on a stale `If-Match` is
//! correct and not reported.

use std::collections::HashMap;

use crate::violation::{CheckCounts, CheckKind, Violation};

/// Hrefs remembered per session; past it the model forgets them all (it
/// then checks less, never wrongly).
const HREFS_KEPT: usize = 100_000;

/// How the session shares its calendars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CalDavOptions {
    /// Nobody but this session writes the events it writes (no other
    /// session of the account, no scheduling into its calendars). Without
    /// it, no check is made: every difference could be another writer's.
    pub sole_writer: bool,
}

/// One entry of a multistatus answer (REPORT, PROPFIND): an href, its
/// status and its `getetag` if it had one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportEntry {
    /// The href as the server wrote it (a path, or a full URL).
    pub href: String,
    /// The entry's status (200, or 404 for a multiget of a missing href).
    pub status: u16,
    /// `DAV:getetag`, when the entry carried one.
    pub etag: Option<String>,
}

/// One CalDAV request and its answer, as the session sent and received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalDavExchange {
    /// `PUT`, `GET`, `DELETE`, `REPORT`, `PROPFIND`, ...
    pub method: String,
    /// The request's href (a path, or a full URL).
    pub href: String,
    /// The request's `If-Match` header, if it sent one.
    pub if_match: Option<String>,
    /// The answer's status code.
    pub status: u16,
    /// The answer's `ETag` header, if any.
    pub etag: Option<String>,
    /// The entries of a 207 multistatus answer, if any.
    pub report: Vec<ReportEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    /// The current ETag, from the session's PUT or its last read.
    Etag(String),
    /// Written by the session, ETag not told (RFC 4791 section 5.3.4).
    Written,
    /// Deleted by the session.
    Deleted,
}

/// One CalDAV session's model. Feed it every exchange
/// ([`CalDavSessionModel::exchange`]) in the order the session made them.
#[derive(Debug)]
pub struct CalDavSessionModel {
    client: String,
    options: CalDavOptions,
    known: HashMap<String, Known>,
    checks: CheckCounts,
}

/// The path of an href: a full URL loses its scheme and authority, so that
/// a REPORT's `http://host/dav/x.ics` and a PUT's `/dav/x.ics` are one.
fn path_of(href: &str) -> String {
    let href = href.trim();
    let path = match href.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => href,
    };
    path.to_owned()
}

fn success(status: u16) -> bool {
    (200..300).contains(&status)
}

impl CalDavSessionModel {
    /// A model for the session `client` (its client id in reports).
    pub fn new(client: impl Into<String>, options: CalDavOptions) -> Self {
        CalDavSessionModel {
            client: client.into(),
            options,
            known: HashMap::new(),
            checks: CheckCounts::default(),
        }
    }

    /// Checks made so far, by kind.
    pub fn checks(&self) -> &CheckCounts {
        &self.checks
    }

    /// Another writer changed or deleted `href` (the session learned of it,
    /// e.g. a scheduling reply): what the model knew of it no longer holds.
    pub fn changed_elsewhere(&mut self, href: &str) {
        self.known.remove(&path_of(href));
    }

    /// One request and its answer. Returns the violations it reveals.
    pub fn exchange(&mut self, exchange: &CalDavExchange) -> Vec<Violation> {
        let mut found = Vec::new();
        let href = path_of(&exchange.href);
        if self.known.len() >= HREFS_KEPT && !self.known.contains_key(&href) {
            self.known.clear();
        }
        let method = exchange.method.to_ascii_uppercase();
        match method.as_str() {
            "PUT" | "DELETE" => {
                self.if_match(&href, exchange, &mut found);
                if success(exchange.status) {
                    let now = match (method.as_str(), &exchange.etag) {
                        ("DELETE", _) => Known::Deleted,
                        (_, Some(etag)) => Known::Etag(etag.trim().to_owned()),
                        (_, None) => Known::Written,
                    };
                    self.known.insert(href, now);
                } else if method == "DELETE" && exchange.status == 404 {
                    self.known.insert(href, Known::Deleted);
                }
            }
            "GET" => match exchange.status {
                404 | 410 => self.read_gone(&href, &mut found),
                status if success(status) => {
                    // A GET names the event, so it could have answered 404:
                    // finding one the session has is a check it was not
                    // lost (a REPORT that filters proves nothing by leaving
                    // one out, so its finds are not counted so).
                    if self.options.sole_writer
                        && matches!(self.known.get(&href), Some(Known::Etag(_) | Known::Written))
                    {
                        self.checks.count(CheckKind::CaldavEventLost);
                    }
                    self.read(&href, exchange.etag.as_deref(), &mut found);
                }
                _ => {}
            },
            _ => {}
        }
        for entry in &exchange.report {
            let href = path_of(&entry.href);
            if href.ends_with('/') {
                // A collection (PROPFIND Depth 1 lists the calendar itself):
                // its ETag changes with every event in it.
                continue;
            }
            match entry.status {
                404 | 410 => self.read_gone(&href, &mut found),
                status if success(status) => self.read(&href, entry.etag.as_deref(), &mut found),
                _ => {}
            }
        }
        found
    }

    /// A complete listing of the collection `exchange.href` (a PROPFIND
    /// with Depth 1, not a REPORT that filters): as [`Self::exchange`], and
    /// every item under it the session deleted that the listing leaves out
    /// is one more check that it stayed gone.
    pub fn listing(&mut self, exchange: &CalDavExchange) -> Vec<Violation> {
        let found = self.exchange(exchange);
        if !self.options.sole_writer {
            return found;
        }
        let collection = path_of(&exchange.href);
        let listed: std::collections::HashSet<String> =
            exchange.report.iter().map(|e| path_of(&e.href)).collect();
        let stayed_gone = self
            .known
            .iter()
            .filter(|(href, known)| {
                **known == Known::Deleted
                    && href.starts_with(&collection)
                    && !listed.contains(href.as_str())
            })
            .count();
        for _ in 0..stayed_gone {
            self.checks.count(CheckKind::CaldavDeletedReturned);
        }
        found
    }

    fn violation(&self, kind: CheckKind, href: &str, expected: String, seen: String) -> Violation {
        Violation {
            kind,
            client: self.client.clone(),
            mailbox: href.to_owned(),
            seq: None,
            uid: None,
            expected,
            seen,
        }
    }

    /// A PUT or DELETE with `If-Match`: refused with 412 while the session,
    /// the only writer, holds the current ETag, the server broke RFC 7232.
    fn if_match(&mut self, href: &str, exchange: &CalDavExchange, found: &mut Vec<Violation>) {
        let (Some(sent), true) = (&exchange.if_match, self.options.sole_writer) else {
            return;
        };
        let Some(Known::Etag(current)) = self.known.get(href) else {
            return;
        };
        if current != sent.trim() {
            return; // a stale If-Match: a 412 is the right answer
        }
        self.checks.count(CheckKind::CaldavIfMatchRefused);
        if exchange.status == 412 {
            found.push(self.violation(
                CheckKind::CaldavIfMatchRefused,
                href,
                format!(
                    "{} with If-Match {sent} accepted (the current ETag)",
                    exchange.method
                ),
                "412 Precondition Failed".to_owned(),
            ));
        }
    }

    /// A read found the event with `etag` (if the answer carried one).
    fn read(&mut self, href: &str, etag: Option<&str>, found: &mut Vec<Violation>) {
        let etag = etag.map(str::trim);
        if self.options.sole_writer {
            match self.known.get(href) {
                Some(Known::Etag(expected)) => {
                    if let Some(seen) = etag {
                        self.checks.count(CheckKind::CaldavEtagMismatch);
                        if seen != expected {
                            found.push(self.violation(
                                CheckKind::CaldavEtagMismatch,
                                href,
                                format!("ETag {expected}"),
                                format!("ETag {seen}"),
                            ));
                            // Which of the two is true is unknown: the next
                            // read starts afresh, so one contradiction is
                            // reported once.
                            self.known.remove(href);
                            return;
                        }
                    }
                }
                Some(Known::Deleted) => {
                    self.checks.count(CheckKind::CaldavDeletedReturned);
                    found.push(self.violation(
                        CheckKind::CaldavDeletedReturned,
                        href,
                        "gone (the session deleted it)".to_owned(),
                        etag.map_or_else(
                            || "the event".to_owned(),
                            |e| format!("the event, ETag {e}"),
                        ),
                    ));
                }
                Some(Known::Written) | None => {}
            }
        }
        match etag {
            Some(etag) => {
                self.known
                    .insert(href.to_owned(), Known::Etag(etag.to_owned()));
            }
            // Still there, ETag not told: no longer "deleted".
            None => {
                if self.known.get(href) == Some(&Known::Deleted) {
                    self.known.insert(href.to_owned(), Known::Written);
                }
            }
        }
    }

    /// A read found no event at `href`.
    fn read_gone(&mut self, href: &str, found: &mut Vec<Violation>) {
        if self.options.sole_writer {
            match self.known.get(href) {
                Some(Known::Deleted) => self.checks.count(CheckKind::CaldavDeletedReturned),
                Some(known) => {
                    self.checks.count(CheckKind::CaldavEventLost);
                    let expected = match known {
                        Known::Etag(etag) => format!("the event, ETag {etag}"),
                        _ => "the event the session put".to_owned(),
                    };
                    found.push(self.violation(
                        CheckKind::CaldavEventLost,
                        href,
                        expected,
                        "404 Not Found".to_owned(),
                    ));
                }
                None => {}
            }
        }
        // An href the session never had stays unknown: its absence proves
        // nothing about a later appearance.
        if self.known.contains_key(href) {
            self.known.insert(href.to_owned(), Known::Deleted);
        }
    }
}
