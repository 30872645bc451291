//! What the model needs of each command the session sent: its tag, its
//! name, the messages it names and, for SELECT, FETCH, STORE and MOVE, the
//! arguments the checks depend on. Read by hand from the bytes the client
//! wrote (the client is ours, so its spellings are few), not through
//! imap-codec's command parser, which lacks MULTIAPPEND and would refuse the
//! whole command for it.

use crate::framing::Frame;
use crate::selected::fold;

/// A sequence set or UID set (`1:4,7,9:*`): ranges, `*` as `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NumberSet(Vec<(Option<u32>, Option<u32>)>);

impl NumberSet {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let bound = |s: &str| -> Option<Option<u32>> {
                if s == "*" {
                    Some(None)
                } else {
                    s.parse().ok().map(Some)
                }
            };
            let range = match part.split_once(':') {
                Some((a, b)) => (bound(a)?, bound(b)?),
                None => {
                    let n = bound(part)?;
                    (n, n)
                }
            };
            ranges.push(range);
        }
        (!ranges.is_empty()).then_some(Self(ranges))
    }

    /// Whether `n` is in the set, `*` standing for `largest`.
    pub(crate) fn contains(&self, n: u32, largest: u32) -> bool {
        self.0.iter().any(|&(a, b)| {
            let (a, b) = (a.unwrap_or(largest), b.unwrap_or(largest));
            (a.min(b)..=a.max(b)).contains(&n)
        })
    }
}

/// One search key the model can evaluate from what a session knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    All,
    Uid(NumberSet),
    /// A sequence set: only in SEARCH by sequence number, during which no
    /// EXPUNGE may renumber the messages (RFC 3501 section 7.4.1).
    Sequence(NumberSet),
    /// `SEEN`, `UNFLAGGED`, `KEYWORD x` ...: the flag (folded) set or not.
    /// Judged only for a sole writer: another session may change a flag
    /// between the search and the news of it.
    Flag {
        flag: String,
        set: bool,
    },
}

/// The criteria of a SEARCH, all of which a message must match (RFC 3501
/// section 6.4.4: the keys of a list are ANDed), as the text sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Criteria {
    pub(crate) keys: Vec<Key>,
    pub(crate) text: String,
}

impl Criteria {
    /// The criteria after `SEARCH`, or `None` when any key is one the model
    /// cannot evaluate (text, dates, sizes, OR, NOT, lists, ESEARCH's RETURN):
    /// then the answer is not checked.
    fn parse(uid: bool, words: &mut Words<'_>) -> Option<Self> {
        let text = words.rest().trim_end().to_owned();
        let mut keys = Vec::new();
        while let Some(word) = words.next() {
            let upper = word.to_ascii_uppercase();
            let flag = |flag: &str, set: bool| Key::Flag {
                flag: flag.to_owned(),
                set,
            };
            let key = match upper.as_str() {
                "ALL" => Key::All,
                "UID" => Key::Uid(NumberSet::parse(&words.next()?)?),
                "SEEN" | "UNSEEN" => flag("\\seen", upper == "SEEN"),
                "FLAGGED" | "UNFLAGGED" => flag("\\flagged", upper == "FLAGGED"),
                "ANSWERED" | "UNANSWERED" => flag("\\answered", upper == "ANSWERED"),
                "DELETED" | "UNDELETED" => flag("\\deleted", upper == "DELETED"),
                "DRAFT" | "UNDRAFT" => flag("\\draft", upper == "DRAFT"),
                "KEYWORD" | "UNKEYWORD" => flag(&fold(&words.next()?), upper == "KEYWORD"),
                _ if !uid => Key::Sequence(NumberSet::parse(&word)?),
                _ => return None,
            };
            keys.push(key);
        }
        (!keys.is_empty()).then_some(Criteria { keys, text })
    }

    /// Whether any key needs the message's flags.
    pub(crate) fn needs_flags(&self) -> bool {
        self.keys.iter().any(|k| matches!(k, Key::Flag { .. }))
    }
}

/// How a STORE changes flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreMode {
    Add,
    Remove,
    Replace,
}

/// A command as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Select {
        mailbox: String,
        read_only: bool,
    },
    Fetch {
        uid: bool,
        set: NumberSet,
        /// The FETCH sets `\Seen` itself (`BODY[...]`, `RFC822`, `RFC822.TEXT`).
        sets_seen: bool,
    },
    Store {
        uid: bool,
        set: NumberSet,
        mode: StoreMode,
        flags: Vec<String>,
        silent: bool,
        /// CONDSTORE's UNCHANGEDSINCE: the server may leave messages out.
        conditional: bool,
    },
    Move {
        uid: bool,
        set: NumberSet,
        target: String,
    },
    /// SEARCH (not SORT or THREAD, which RFC 3501 section 7.4.1 does not name).
    Search {
        uid: bool,
        /// The criteria, when the model can evaluate them ([`Criteria`]).
        criteria: Option<Criteria>,
    },
    /// CLOSE and UNSELECT: the mailbox is no longer selected.
    Close,
    Idle,
    /// Any other command, by name.
    Other(String),
}

/// One message the client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
    Command {
        tag: String,
        command: Command,
    },
    /// `DONE`, ending IDLE.
    Done,
    /// A line that is no command: an AUTHENTICATE exchange, or garbage.
    Other,
}

/// Reads one whole message the client sent.
pub(crate) fn read(frame: &Frame) -> Sent {
    let line = String::from_utf8_lossy(frame.first_line()).into_owned();
    if line.eq_ignore_ascii_case("DONE") {
        return Sent::Done;
    }
    let mut words = Words::new(&line);
    let (Some(tag), Some(first)) = (words.next(), words.next()) else {
        return Sent::Other;
    };
    let (uid, name) = if first.eq_ignore_ascii_case("UID") {
        match words.next() {
            Some(name) => (true, name),
            None => return Sent::Other,
        }
    } else {
        (false, first)
    };
    let name = name.to_ascii_uppercase();
    let command = match name.as_str() {
        "SELECT" | "EXAMINE" => Command::Select {
            mailbox: mailbox_argument(&mut words, frame),
            read_only: name == "EXAMINE",
        },
        "FETCH" => match words.next().and_then(|s| NumberSet::parse(&s)) {
            Some(set) => {
                let items = words.rest().to_ascii_uppercase();
                let sets_seen = items.contains("BODY[")
                    || items
                        .split([' ', '(', ')'])
                        .any(|item| item == "RFC822" || item == "RFC822.TEXT");
                Command::Fetch {
                    uid,
                    set,
                    sets_seen,
                }
            }
            None => Command::Other(name),
        },
        "STORE" => store(uid, &mut words).unwrap_or(Command::Other(name)),
        "MOVE" => match words.next().and_then(|s| NumberSet::parse(&s)) {
            Some(set) => Command::Move {
                uid,
                set,
                target: mailbox_argument(&mut words, frame),
            },
            None => Command::Other(name),
        },
        // Only SEARCH: RFC 3501 section 7.4.1 names it, not SORT or THREAD.
        "SEARCH" => Command::Search {
            uid,
            criteria: Criteria::parse(uid, &mut words),
        },
        "CLOSE" | "UNSELECT" => Command::Close,
        "IDLE" => Command::Idle,
        _ => Command::Other(if uid { format!("UID {name}") } else { name }),
    };
    Sent::Command { tag, command }
}

fn store(uid: bool, words: &mut Words<'_>) -> Option<Command> {
    let set = NumberSet::parse(&words.next()?)?;
    let mut mode_word = words.next()?;
    let mut conditional = false;
    if mode_word.starts_with('(') {
        // `(UNCHANGEDSINCE n)`, before the mode.
        conditional = true;
        while !mode_word.ends_with(')') {
            mode_word = words.next()?;
        }
        mode_word = words.next()?;
    }
    let upper = mode_word.to_ascii_uppercase();
    let (mode, rest) = match upper.as_bytes().first() {
        Some(b'+') => (StoreMode::Add, &upper[1..]),
        Some(b'-') => (StoreMode::Remove, &upper[1..]),
        _ => (StoreMode::Replace, upper.as_str()),
    };
    let silent = match rest {
        "FLAGS" => false,
        "FLAGS.SILENT" => true,
        _ => return None,
    };
    let flags = words
        .rest()
        .trim_matches(|c: char| c == '(' || c == ')' || c.is_ascii_whitespace())
        .split_ascii_whitespace()
        .map(str::to_owned)
        .collect();
    Some(Command::Store {
        uid,
        set,
        mode,
        flags,
        silent,
        conditional,
    })
}

/// A mailbox name argument: an atom, a quoted string or a literal.
fn mailbox_argument(words: &mut Words<'_>, frame: &Frame) -> String {
    let name = match words.next() {
        Some(word) if word.starts_with('{') && word.ends_with('}') => frame
            .literals
            .first()
            .map(|range| String::from_utf8_lossy(&frame.bytes[range.clone()]).into_owned())
            .unwrap_or_default(),
        Some(word) => word,
        None => String::new(),
    };
    normalize_mailbox(&name)
}

/// INBOX is case-insensitive (RFC 3501 section 5.1); other names are not.
pub(crate) fn normalize_mailbox(name: &str) -> String {
    if name.eq_ignore_ascii_case("INBOX") {
        "INBOX".to_owned()
    } else {
        name.to_owned()
    }
}

/// Space-separated words of a command line; a quoted string is one word,
/// its quotes and escapes removed.
struct Words<'a> {
    rest: &'a str,
}

impl<'a> Words<'a> {
    fn new(line: &'a str) -> Self {
        Self { rest: line }
    }

    fn rest(&self) -> &'a str {
        self.rest.trim_start()
    }

    fn next(&mut self) -> Option<String> {
        let text = self.rest.trim_start();
        if text.is_empty() {
            return None;
        }
        if let Some(quoted) = text.strip_prefix('"') {
            let mut word = String::new();
            let mut chars = quoted.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => word.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        self.rest = &quoted[i + 1..];
                        return Some(word);
                    }
                    c => word.push(c),
                }
            }
            self.rest = "";
            return Some(word);
        }
        let end = text.find(' ').unwrap_or(text.len());
        self.rest = &text[end..];
        Some(text[..end].to_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn frame(text: &str) -> Frame {
        Frame {
            bytes: text.as_bytes().to_vec(),
            literals: Vec::new(),
        }
    }

    #[test]
    fn store_move_and_fetch_are_read_with_their_arguments() {
        let Sent::Command { tag, command } =
            read(&frame("A7 UID STORE 4:6 -FLAGS.SILENT (\\Seen $Work)\r\n"))
        else {
            panic!()
        };
        assert_eq!(tag, "A7");
        assert_eq!(
            command,
            Command::Store {
                uid: true,
                set: NumberSet::parse("4:6").unwrap(),
                mode: StoreMode::Remove,
                flags: vec!["\\Seen".into(), "$Work".into()],
                silent: true,
                conditional: false,
            }
        );
        let Sent::Command { command, .. } = read(&frame("A8 MOVE 2 \"Old mail\"\r\n")) else {
            panic!()
        };
        assert!(matches!(command, Command::Move { target, .. } if target == "Old mail"));
        let Sent::Command { command, .. } = read(&frame("A9 FETCH 1:* (UID BODY.PEEK[])\r\n"))
        else {
            panic!()
        };
        assert!(matches!(
            command,
            Command::Fetch {
                sets_seen: false,
                ..
            }
        ));
        assert_eq!(read(&frame("DONE\r\n")), Sent::Done);
    }

    #[test]
    fn search_criteria_are_read_when_the_model_can_evaluate_them() {
        let criteria = |line: &str| match read(&frame(line)) {
            Sent::Command {
                command: Command::Search { criteria, .. },
                ..
            } => criteria,
            other => panic!("{other:?}"),
        };
        let all = criteria("A1 UID SEARCH ALL\r\n").unwrap();
        assert_eq!((all.keys, all.text.as_str()), (vec![Key::All], "ALL"));
        let keys = criteria("A2 UID SEARCH UID 5:* UNSEEN KEYWORD $Work\r\n")
            .unwrap()
            .keys;
        assert_eq!(keys.len(), 3);
        assert_eq!(
            keys[2],
            Key::Flag {
                flag: "$work".into(),
                set: true
            }
        );
        assert!(matches!(
            criteria("A3 SEARCH 2:4 FLAGGED\r\n").unwrap().keys[0],
            Key::Sequence(_)
        ));
        // Not evaluable: text, OR, a sequence set in UID SEARCH, ESEARCH.
        for line in [
            "A4 UID SEARCH HEADER X-Peakhour-Run r1\r\n",
            "A5 SEARCH OR SEEN FLAGGED\r\n",
            "A6 UID SEARCH 1:3\r\n",
            "A7 UID SEARCH RETURN (ALL) ALL\r\n",
            "A8 SEARCH\r\n",
        ] {
            assert_eq!(criteria(line), None, "{line}");
        }
    }

    #[test]
    fn number_sets_stand_star_for_the_largest() {
        let set = NumberSet::parse("2,5:*").unwrap();
        assert!(set.contains(9, 9) && set.contains(2, 9) && !set.contains(3, 9));
        assert!(NumberSet::parse("1:x").is_none());
    }
}
