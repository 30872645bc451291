//! Client personalities (issue 28): the commands four real mail clients
//! send for each action of a working day, as data and small pure functions,
//! read off their recordings (`tests/fixtures/clients/`, docs/clients.md).
//!
//! A [`ClientModel`] turns an action and what the session knows of the
//! mailbox ([`View`]) into [`Step`]s over numbered connection slots: open a
//! connection and log in, run a command, IDLE, log out. Nothing here is a
//! byte copy of a recording: message numbers and UID ranges come from the
//! session's state, folder walks from the folder list, header pages from the
//! Inbox's size. The engine performs the steps (its IMAP session), and the
//! fidelity measure ([`crate::fidelity`]) checks what it sent against the
//! recordings.
//!
//! Slot 0 is the session's own connection; the others are the extra
//! connections a client holds (Thunderbird) or opens per request (Roundcube
//! opens and closes slot 0 itself).

use std::time::Duration;

use crate::request::Request;
use crate::types::{BodySection, FetchItem, SearchKey, StatusItem, StoreMode};

/// A connection slot of one user's session: 0 is the session's own.
pub type Slot = usize;

/// The most connections a model holds at once (Thunderbird's default
/// `max_cached_connections`).
pub const MAX_SLOTS: usize = 5;

/// A recorded client whose behaviour a session can take on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientModel {
    /// Thunderbird 153 ESR, warm start: a connection per folder that changed
    /// since it last looked (up to 5 in all), IDLE on each 2 s after its last
    /// command, renewed every 120 s; flags marked on the next command.
    Thunderbird,
    /// mbsync (isync 1.4): every action is one `mbsync -a`: log in, walk every
    /// folder, log out; a sync every 300 s while idle.
    Mbsync,
    /// neomutt 2022: one connection, no IDLE, a NOOP every 600 s; every
    /// check starts it on the Inbox and fetches every header again.
    Neomutt,
    /// Roundcube 1.6: one login per page view or AJAX request, a list
    /// refresh (one more login) every 60 s, header pages of 50.
    Roundcube,
}

/// One thing a client does on one of its connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Opens a connection in the slot and logs in (AUTHENTICATE PLAIN, as
    /// every recorded client did); one that is open already is dropped first.
    Open(Slot),
    /// Runs a command on the slot's connection (ending its IDLE first).
    Run(Slot, Request),
    /// Runs the command only when the slot's selected mailbox holds
    /// messages (mbsync asks nothing of an empty folder).
    RunIfAny(Slot, Request),
    /// Fetches `items` of the Inbox messages the slot's last FETCH or
    /// NOOP showed that the session did not know (new mail): one `UID FETCH`
    /// each when `one_by_one` (mbsync downloading), else one for all
    /// (Thunderbird's and neomutt's headers of new mail). Nothing when
    /// nothing is new.
    FetchNew {
        /// The connection.
        slot: Slot,
        /// What to fetch of each new message.
        items: Vec<FetchItem>,
        /// One command per message.
        one_by_one: bool,
    },
    /// Enters IDLE on the slot.
    Idle(Slot),
    /// LOGOUT; the connection closes.
    Logout(Slot),
    /// The connection closes without LOGOUT (neomutt's quit).
    Drop(Slot),
}

/// What the session knows when it asks a model for an action's steps.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The Inbox as the server names it.
    pub inbox: &'a str,
    /// Where sent mail is kept.
    pub sent: &'a str,
    /// Where deleted mail goes.
    pub trash: &'a str,
    /// Where drafts are kept (neomutt and Roundcube look at it).
    pub drafts: &'a str,
    /// Every folder the server listed, the Inbox included.
    pub folders: &'a [String],
    /// The Inbox's UIDs the session knows, ascending.
    pub uids: &'a [u32],
    /// Per slot, the folder its open connection has selected (`Some("")`
    /// when open with none selected); `None` when the slot is closed.
    pub open: &'a [Option<String>],
    /// Messages read since the last command that marks them (Thunderbird
    /// and neomutt set `\Seen` on their next command, not when reading).
    pub pending_seen: &'a [u32],
}

impl View<'_> {
    fn highest(&self) -> Option<u32> {
        self.uids.last().copied()
    }

    /// The first UID of the newest `page` messages (Roundcube's list).
    fn page_from(&self, page: usize) -> Option<u32> {
        let n = self.uids.len();
        (n > 0).then(|| self.uids[n.saturating_sub(page)])
    }

    fn slot_of(&self, folder: &str) -> Option<Slot> {
        self.open.iter().position(|f| f.as_deref() == Some(folder))
    }

    fn is_open(&self, slot: Slot) -> bool {
        self.open.get(slot).is_some_and(Option::is_some)
    }
}

/// The header fields each client lists in its `BODY.PEEK[HEADER.FIELDS]`.
const NEOMUTT_HEADERS: &[&str] = &[
    "DATE",
    "FROM",
    "SENDER",
    "SUBJECT",
    "TO",
    "CC",
    "MESSAGE-ID",
    "REFERENCES",
    "CONTENT-TYPE",
    "CONTENT-DESCRIPTION",
    "IN-REPLY-TO",
    "REPLY-TO",
    "LINES",
    "LIST-POST",
    "LIST-SUBSCRIBE",
    "LIST-UNSUBSCRIBE",
    "X-LABEL",
    "X-ORIGINAL-TO",
];
const THUNDERBIRD_HEADERS: &[&str] = &[
    "From",
    "To",
    "Cc",
    "Bcc",
    "Subject",
    "Date",
    "Message-ID",
    "Priority",
    "X-Priority",
    "References",
    "Newsgroups",
    "In-Reply-To",
    "Content-Type",
    "Reply-To",
    "Received",
];
const ROUNDCUBE_HEADERS: &[&str] = &[
    "DATE",
    "FROM",
    "TO",
    "SUBJECT",
    "CONTENT-TYPE",
    "CC",
    "REPLY-TO",
    "LIST-POST",
    "DISPOSITION-NOTIFICATION-TO",
    "X-PRIORITY",
];
/// Roundcube's message list: 50 rows a page (`mail_pagesize`).
pub const ROUNDCUBE_PAGE: usize = 50;

fn headers(names: &[&str]) -> FetchItem {
    FetchItem::Body {
        section: BodySection::HeaderFields(names.iter().map(|&n| n.to_owned()).collect()),
        peek: true,
    }
}

fn fetch(set: impl Into<String>, items: Vec<FetchItem>, uid: bool) -> Request {
    Request::Fetch {
        set: set.into(),
        items,
        uid,
    }
}

fn store(set: impl Into<String>, flag: &str, silent: bool) -> Request {
    Request::Store {
        set: set.into(),
        mode: StoreMode::Add,
        flags: vec![flag.to_owned()],
        silent,
        uid: true,
    }
}

fn status(folder: &str, items: &[StatusItem]) -> Request {
    Request::Status {
        mailbox: folder.to_owned(),
        items: items.to_vec(),
    }
}

fn list(pattern: &str) -> Request {
    Request::List {
        reference: String::new(),
        pattern: pattern.to_owned(),
    }
}

fn uid_set(uids: &[u32]) -> String {
    uids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn append(folder: &str, message: &[u8]) -> Request {
    Request::Append {
        mailbox: folder.to_owned(),
        flags: vec!["\\Seen".to_owned()],
        internal_date: None,
        message: message.to_vec(),
    }
}

impl ClientModel {
    /// Every model, in the order the documentation lists them.
    pub const ALL: [ClientModel; 4] = [
        ClientModel::Thunderbird,
        ClientModel::Mbsync,
        ClientModel::Neomutt,
        ClientModel::Roundcube,
    ];

    /// The model's name, as `run --client` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ClientModel::Thunderbird => "thunderbird",
            ClientModel::Mbsync => "mbsync",
            ClientModel::Neomutt => "neomutt",
            ClientModel::Roundcube => "roundcube",
        }
    }

    /// The model of this name.
    pub fn from_name(name: &str) -> Option<ClientModel> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the client's wake-ups keep a schedule of their own rather
    /// than counting from the user's last action. mbsync runs from a timer.
    /// Thunderbird answers the server's keepalive, which Dovecot sends every
    /// 2 minutes to all of a user's connections at once, whatever the user
    /// does: in the warm recording all three connections renewed at 53.1 to
    /// 53.6 s, though their IDLEs had begun at 27.42, 32.11 and 43.59 s.
    pub fn wakes_on_schedule(self) -> bool {
        matches!(self, ClientModel::Thunderbird | ClientModel::Mbsync)
    }

    /// Whether slot 0 stays logged in between actions (Thunderbird,
    /// neomutt); Roundcube and mbsync log out after every request.
    pub fn keeps_connection(self) -> bool {
        matches!(self, ClientModel::Thunderbird | ClientModel::Neomutt)
    }

    /// How often the client wakes up while the user does nothing (simulated
    /// time): Thunderbird renews IDLE every 120 s, mbsync's timer runs every
    /// 300 s, neomutt polls with NOOP every 600 s (its `timeout`), Roundcube
    /// refreshes its list every 60 s (`refresh_interval`).
    ///
    /// Thunderbird's 120 s are the server's: it leaves IDLE (DONE, NOOP,
    /// `UID fetch <next>:* (FLAGS)`, IDLE 2 s later) when Dovecot's
    /// keepalive `* OK Still here` arrives (`imap_idle_notify_interval`,
    /// 2 minutes): each of the 127 renewals in the two recordings follows
    /// one within 60 ms.
    pub fn idle_period(self) -> Duration {
        Duration::from_secs(match self {
            ClientModel::Thunderbird => 120,
            ClientModel::Mbsync => 300,
            ClientModel::Neomutt => 600,
            ClientModel::Roundcube => 60,
        })
    }

    /// The folder sweep that follows the start, if the client makes one:
    /// when it begins after the start and how far apart its folders are
    /// (simulated time). Thunderbird asks every folder's STATUS, one every
    /// 0.406 s from 8.3 s after its start (the warm recording: 43 STATUS
    /// from 8.34 s to 25.40 s after its first connection opened).
    pub fn startup_sweep(self) -> Option<(Duration, Duration)> {
        match self {
            ClientModel::Thunderbird => {
                Some((Duration::from_millis(8300), Duration::from_millis(406)))
            }
            _ => None,
        }
    }

    /// How long after its last command on a connection the client enters
    /// IDLE there (simulated time). Thunderbird waits 2 s every time in the
    /// warm recording: the Inbox's `UID fetch 1:* (FLAGS)` at 0.20 s, IDLE
    /// at 2.24 s; after the move's fetch 18.94 s, IDLE 20.94 s; Sent's and
    /// Folder1's connections 22.57/24.57 s and 25.42/27.42 s; after each
    /// 120 s renewal 53.13/55.13 s. The others idle at once (or never).
    pub fn idle_delay(self) -> Duration {
        match self {
            ClientModel::Thunderbird => Duration::from_secs(2),
            _ => Duration::ZERO,
        }
    }

    /// The end of the client's folder discovery, which the user's first
    /// look at the mailbox (whatever the action) waits for, or the start's
    /// sweep if that comes first. Thunderbird's
    /// warm start shows its window at 0.237 s while the folder connection's
    /// `LIST (SUBSCRIBED)` is still being answered (0.277 s); then it asks
    /// for the Inbox on its own, `LIST "" "INBOX"` at 0.292 s, in the
    /// recorded open_inbox ("the Inbox shown in the 3-pane tab (folder
    /// discovery, then the header list)", says its manifest).
    pub fn discovery_tail(self, view: &View<'_>) -> Vec<Step> {
        match self {
            ClientModel::Thunderbird => vec![Step::Run(1, list(view.inbox))],
            _ => Vec::new(),
        }
    }

    /// The folders the start's sweep looks at, in the order the client
    /// keeps them. Thunderbird skips the Inbox (selected already) and Trash
    /// (both recordings STATUS 43 of 45 folders, never those two; its
    /// `GetNewMessagesForNonInboxFolders` leaves out Inbox and Trash). Its
    /// first start walks the server's LIST order (Sent, Calendar,
    /// Folder40 ... Folder1, Drafts); a warm start walks the folders as it
    /// finds them in its profile's mail directory, an order that has nothing
    /// to do with names or use (Folder2, Folder27, Folder28, Folder38 ...
    /// Sent 36th, Folder1 43rd): the directory's hash order. `profile` stands
    /// for that profile: one fixed shuffle per user.
    pub fn sweep_order(self, view: &View<'_>, profile: u64) -> Vec<String> {
        if self != ClientModel::Thunderbird {
            return Vec::new();
        }
        let mut folders: Vec<String> = view
            .folders
            .iter()
            .filter(|f| *f != view.inbox && *f != view.trash)
            .cloned()
            .collect();
        folders.sort_by_key(|f| (directory_hash(profile, f), f.clone()));
        folders
    }

    /// The folders that changed since the client last looked at them, as a
    /// new session begins: a connection of their own when the start's sweep
    /// reaches them. Thunderbird does not learn a folder's next UID from its
    /// own APPEND or MOVE, so the folders it wrote to in its last session
    /// look changed at the next start: the first recording appended to Sent
    /// (41.98 s) after its last SELECT there (8.75 s), and the warm start
    /// then opened a connection for Sent (22.55 s, c3) though nothing else
    /// had touched it. A user who sends mail starts every day so.
    pub fn changed_at_start(self, view: &View<'_>) -> Vec<String> {
        match self {
            ClientModel::Thunderbird => vec![view.sent.to_owned()],
            _ => Vec::new(),
        }
    }

    /// The Inbox message the client shows once `uid` has been moved away,
    /// marked `\Seen` with its next command on the Inbox. Thunderbird's
    /// message pane moves on to the next message after a move: the warm
    /// recording's delete stores two `\Seen` flags (29.60 s and 29.63 s)
    /// before its `uid move`, one of them the message shown after the move.
    /// A delete leaves nothing to mark (its next Inbox command, the 120 s
    /// renewal at 53.13 s, stores nothing).
    pub fn shown_after_move(self, view: &View<'_>, uid: u32, delete: bool) -> Option<u32> {
        if self != ClientModel::Thunderbird || delete {
            return None;
        }
        let rest = view.uids.iter().copied().filter(|&u| u != uid);
        rest.clone()
            .filter(|&u| u < uid)
            .max()
            .or_else(|| rest.max())
    }

    /// One folder of the sweep: its STATUS on the folder connection, and,
    /// when it `changed` since the client last looked (mail moved or saved
    /// into it; `Some(true)` when that mail is new to the client, moved
    /// there, `Some(false)` when it wrote it itself), a connection of its
    /// own that synchronises it and idles there (Thunderbird opened one for
    /// Folder1 after a move, and one for Sent, each as the sweep reached it).
    pub fn sweep_folder(self, view: &View<'_>, folder: &str, changed: Option<bool>) -> Vec<Step> {
        if self != ClientModel::Thunderbird || folder == view.inbox {
            return Vec::new();
        }
        let items = [
            StatusItem::UidNext,
            StatusItem::Messages,
            StatusItem::Unseen,
            StatusItem::Recent,
        ];
        let mut steps = vec![Step::Run(1, status(folder, &items))];
        if let Some(new_mail) = changed
            && view.slot_of(folder).is_none()
        {
            let slot = free_slot(view);
            steps.extend(thunderbird_open_folder(view, slot, folder, new_mail));
            steps.push(Step::Idle(slot));
        }
        steps
    }

    /// After the engine opened slot 0 and read the folder list on it
    /// (NAMESPACE, LIST): the rest of the client's start.
    pub fn logon(self, view: &View<'_>) -> Vec<Step> {
        match self {
            ClientModel::Thunderbird => {
                let mut steps = vec![
                    Step::Run(0, Request::Id(thunderbird_id())),
                    Step::Run(0, Request::Select(view.inbox.to_owned())),
                    Step::Run(0, fetch("1:*", vec![FetchItem::Flags], true)),
                    Step::Idle(0),
                ];
                // The folder connection: it lists the folders, then goes
                // quiet; the end of its discovery comes after the Inbox is
                // shown ([`ClientModel::discovery_tail`]).
                steps.extend([Step::Open(1), Step::Run(1, Request::Id(thunderbird_id()))]);
                steps
            }
            ClientModel::Neomutt => neomutt_start(view),
            ClientModel::Mbsync => {
                let mut steps = Vec::new();
                sync_folders(view, &mut steps, |_| Vec::new());
                steps.push(Step::Logout(0));
                steps
            }
            ClientModel::Roundcube => {
                let mut steps = vec![Step::Logout(0)];
                steps.extend(roundcube_list_page(view, true));
                steps
            }
        }
    }

    /// The user opens the Inbox to see what is new.
    pub fn check_inbox(self, view: &View<'_>) -> Vec<Step> {
        match self {
            // Already selected, kept current by IDLE: Thunderbird shows
            // its copy and sends nothing (the warm recording's open_inbox
            // holds only the start's sweep).
            ClientModel::Thunderbird => Vec::new(),
            // A terminal user starts neomutt on the Inbox (the recording's
            // open_inbox); the previous one quits (CLOSE) first.
            ClientModel::Neomutt => {
                let mut steps = Vec::new();
                if view.is_open(0) {
                    steps.extend([Step::Run(0, Request::Close), Step::Drop(0)]);
                }
                steps.push(Step::Open(0));
                steps.extend(neomutt_start(view));
                steps
            }
            ClientModel::Mbsync => mbsync_sync(view, |_| Vec::new()),
            // The login form and the list it opens on.
            ClientModel::Roundcube => {
                let mut steps = vec![
                    Step::Open(0),
                    Step::Run(0, Request::Namespace),
                    Step::Run(0, list("*")),
                    Step::Logout(0),
                ];
                steps.extend(roundcube_list_page(view, true));
                steps
            }
        }
    }

    /// The user opens message `uid` of the Inbox.
    pub fn read(self, view: &View<'_>, uid: u32) -> Vec<Step> {
        match self {
            // The body is in the offline copy and `\Seen` goes out with the
            // next command: nothing on the wire now.
            ClientModel::Thunderbird => Vec::new(),
            // The body; `\Seen` is stored with the next change.
            ClientModel::Neomutt => vec![Step::Run(
                0,
                fetch(
                    uid.to_string(),
                    vec![FetchItem::Body {
                        section: BodySection::Full,
                        peek: true,
                    }],
                    true,
                ),
            )],
            // The flag was changed in the local Maildir; one sync.
            ClientModel::Mbsync => mbsync_sync(view, |_| Vec::new()),
            ClientModel::Roundcube => roundcube_preview(view, uid),
        }
    }

    /// The user moves message `uid` of the Inbox to `folder`; `delete` when
    /// it goes to Trash (the delete key). `upload` is what mbsync appends to
    /// the target folder in its place (it has the message in its local copy;
    /// the session has a stand-in of a typical size).
    pub fn move_message(
        self,
        view: &View<'_>,
        uid: u32,
        folder: &str,
        delete: bool,
        upload: &[u8],
    ) -> Vec<Step> {
        match self {
            ClientModel::Thunderbird => thunderbird_move(view, uid, folder, delete),
            ClientModel::Neomutt => neomutt_move(view, uid, folder, delete),
            ClientModel::Mbsync => {
                let inbox = view.inbox.to_owned();
                let target = folder.to_owned();
                let upload = upload.to_vec();
                mbsync_sync(view, move |f| {
                    // The local change: `\Deleted` on the source; a move also
                    // uploads the message to its new folder (mbsync does not
                    // move on the server).
                    let mut extra = Vec::new();
                    if f == inbox {
                        extra.push(store(uid.to_string(), "\\Deleted", true));
                        extra.push(Request::Check);
                    }
                    if f == target && !delete {
                        extra.push(Request::Append {
                            mailbox: target.clone(),
                            flags: Vec::new(),
                            internal_date: None,
                            message: upload.clone(),
                        });
                    }
                    extra
                })
            }
            ClientModel::Roundcube => roundcube_move(view, uid, folder, delete),
        }
    }

    /// The user's client keeps a copy of a sent `message` in Sent.
    pub fn save_sent(self, view: &View<'_>, message: &[u8]) -> Vec<Step> {
        match self {
            // On Sent's own connection when it has one, else on the
            // Inbox's (which leaves IDLE for it and goes back).
            ClientModel::Thunderbird => {
                let slot = view.slot_of(view.sent).unwrap_or(0);
                vec![
                    Step::Run(slot, append(view.sent, message)),
                    Step::Run(slot, Request::Noop),
                    Step::Idle(slot),
                ]
            }
            ClientModel::Neomutt => {
                let mut steps = pending_seen(view, 0, true);
                let items = neomutt_status_items();
                steps.push(Step::Run(0, status(view.drafts, &items)));
                steps.push(Step::Run(0, status(view.sent, &items)));
                steps.push(Step::Run(0, append(view.sent, message)));
                steps
            }
            ClientModel::Mbsync => {
                let sent = view.sent.to_owned();
                let copy = message.to_vec();
                mbsync_sync(view, move |f| {
                    if f == sent {
                        vec![Request::Append {
                            mailbox: sent.clone(),
                            flags: vec!["\\Seen".to_owned()],
                            internal_date: None,
                            message: copy.clone(),
                        }]
                    } else {
                        Vec::new()
                    }
                })
            }
            ClientModel::Roundcube => roundcube_send(view, message),
        }
    }

    /// What the client does each [`ClientModel::idle_period`] while the
    /// user does nothing.
    pub fn idle_burst(self, view: &View<'_>) -> Vec<Step> {
        match self {
            ClientModel::Thunderbird => {
                let mut steps = Vec::new();
                for (slot, folder) in view.open.iter().enumerate() {
                    // The folder connection (slot 1) does not idle.
                    if slot == 1 {
                        continue;
                    }
                    if let Some(folder) = folder {
                        let highest = (folder == view.inbox).then(|| view.highest()).flatten();
                        steps.extend(thunderbird_refresh(view, slot, highest));
                    }
                }
                steps
            }
            // The poll, and the headers of what it announced.
            ClientModel::Neomutt => vec![
                Step::Run(0, Request::Noop),
                Step::FetchNew {
                    slot: 0,
                    items: vec![
                        FetchItem::Uid,
                        FetchItem::Flags,
                        FetchItem::InternalDate,
                        FetchItem::Size,
                        headers(NEOMUTT_HEADERS),
                    ],
                    one_by_one: false,
                },
            ],
            ClientModel::Mbsync => mbsync_sync(view, |_| Vec::new()),
            ClientModel::Roundcube => {
                let next = view.highest().map_or(1, |h| h + 1);
                vec![
                    Step::Open(0),
                    Step::Run(
                        0,
                        status(view.inbox, &[StatusItem::Messages, StatusItem::Unseen]),
                    ),
                    Step::Run(0, Request::Select(view.inbox.to_owned())),
                    Step::Run(
                        0,
                        Request::Search {
                            criteria: SearchKey::Uid(format!("{next}:*")),
                            uid: true,
                        },
                    ),
                    Step::Logout(0),
                ]
            }
        }
    }
}

fn thunderbird_id() -> Vec<(String, String)> {
    vec![
        ("name".to_owned(), "Thunderbird".to_owned()),
        ("version".to_owned(), "153.7.0".to_owned()),
    ]
}

/// A slot for another folder: the first closed one past the folder
/// connection (a new connection while it holds fewer than 5), or the last
/// when all are taken, which then selects the folder in place of its own
/// (Thunderbird's `GetImapConnection` reuses a free connection at its
/// limit: the first recording's fifth connection, c5, went from Folder40 to
/// Folder39 and on with a SELECT each, no new login).
fn free_slot(view: &View<'_>) -> Slot {
    (2..MAX_SLOTS)
        .find(|&slot| !view.is_open(slot))
        .unwrap_or(MAX_SLOTS - 1)
}

/// The key of a user's mail profile for [`ClientModel::sweep_order`]: one
/// per user and run seed.
pub fn profile_key(seed: u64, user: u32) -> u64 {
    seed ^ u64::from(user).rotate_left(32)
}

/// A fixed pseudo-random rank of `folder` in the mail directory of the
/// profile `profile` (SplitMix64 over FNV-1a of the name): the same for a
/// user in every session, different from one user to the next.
fn directory_hash(profile: u64, folder: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in folder.bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h ^ profile.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `\Seen` for the messages read since the last command, one `UID STORE`
/// each (Thunderbird), or all in one (neomutt, `.SILENT`).
fn pending_seen(view: &View<'_>, slot: Slot, silent: bool) -> Vec<Step> {
    if view.pending_seen.is_empty() {
        return Vec::new();
    }
    if silent {
        return vec![Step::Run(
            slot,
            store(uid_set(view.pending_seen), "\\Seen", true),
        )];
    }
    view.pending_seen
        .iter()
        .map(|uid| Step::Run(slot, store(uid.to_string(), "\\Seen", false)))
        .collect()
}

/// Thunderbird leaving IDLE on a folder to look for news: NOOP, the flags
/// of anything past what it has (`UID fetch <next>:* (FLAGS)`), IDLE again.
fn thunderbird_refresh(view: &View<'_>, slot: Slot, highest: Option<u32>) -> Vec<Step> {
    let mut steps = if slot == 0 {
        pending_seen(view, 0, false)
    } else {
        Vec::new()
    };
    let from = highest.map_or_else(|| "1:*".to_owned(), |h| format!("{}:*", h + 1));
    steps.push(Step::Run(slot, Request::Noop));
    steps.push(Step::Run(slot, fetch(from, vec![FetchItem::Flags], true)));
    // New mail's headers, as the warm recording fetched a new Sent copy's.
    steps.push(Step::FetchNew {
        slot,
        items: vec![
            FetchItem::Uid,
            FetchItem::Size,
            FetchItem::Flags,
            headers(THUNDERBIRD_HEADERS),
        ],
        one_by_one: false,
    });
    steps.push(Step::Idle(slot));
    steps
}

/// Thunderbird opening a connection for a folder that changed: select it,
/// its flags, the headers of mail it has not seen (`new_mail`), NOOP, the
/// flags past what it has, and IDLE there. An empty folder gets its SELECT
/// and NOOP only (the first start's Sent and Calendar, c3 and c4); the warm
/// start fetched the headers of the message moved into Folder1 (`UID fetch
/// 7 (UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS ...])`), not of Sent's
/// copy, which its previous session had fetched.
fn thunderbird_open_folder(view: &View<'_>, slot: Slot, folder: &str, new_mail: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if !view.is_open(slot) {
        steps.extend([
            Step::Open(slot),
            Step::Run(slot, Request::Id(thunderbird_id())),
        ]);
    }
    steps.extend([
        Step::Run(slot, Request::Select(folder.to_owned())),
        Step::RunIfAny(slot, fetch("1:*", vec![FetchItem::Flags], true)),
    ]);
    if new_mail {
        let header_items = vec![
            FetchItem::Uid,
            FetchItem::Size,
            FetchItem::Flags,
            headers(THUNDERBIRD_HEADERS),
        ];
        steps.push(Step::RunIfAny(slot, fetch("*", header_items, true)));
    }
    steps.extend([
        Step::Run(slot, Request::Noop),
        Step::RunIfAny(slot, fetch("*", vec![FetchItem::Flags], true)),
    ]);
    steps
}

fn thunderbird_move(view: &View<'_>, uid: u32, folder: &str, delete: bool) -> Vec<Step> {
    let mut steps = pending_seen(view, 0, false);
    if delete && !view.pending_seen.contains(&uid) {
        // The delete key marks the message read before it goes to Trash.
        steps.push(Step::Run(0, store(uid.to_string(), "\\Seen", false)));
    }
    steps.push(Step::Run(
        0,
        Request::Move {
            set: uid.to_string(),
            mailbox: folder.to_owned(),
            uid: true,
        },
    ));
    let highest = view.uids.iter().copied().filter(|&u| u != uid).max();
    let from = highest.map_or_else(|| "1:*".to_owned(), |h| format!("{}:*", h + 1));
    steps.push(Step::Run(0, Request::Noop));
    steps.push(Step::Run(0, fetch(from, vec![FetchItem::Flags], true)));
    steps.push(Step::Idle(0));
    // The target folder gets a connection of its own when the client next
    // looks at it ([`ClientModel::sweep_folder`]), not now.
    steps
}

fn neomutt_status_items() -> [StatusItem; 5] {
    [
        StatusItem::UidNext,
        StatusItem::UidValidity,
        StatusItem::Unseen,
        StatusItem::Recent,
        StatusItem::Messages,
    ]
}

/// neomutt's start, once logged in: capabilities, UTF-8, the hierarchy
/// delimiter, the Inbox with every message's headers (no header cache), and
/// its postponed-mail folder.
fn neomutt_start(view: &View<'_>) -> Vec<Step> {
    let items = vec![
        FetchItem::Uid,
        FetchItem::Flags,
        FetchItem::InternalDate,
        FetchItem::Size,
        headers(NEOMUTT_HEADERS),
    ];
    vec![
        Step::Run(0, Request::Capability),
        Step::Run(0, Request::Enable(vec!["UTF8=ACCEPT".to_owned()])),
        Step::Run(0, list("")),
        Step::Run(0, Request::Select(view.inbox.to_owned())),
        Step::RunIfAny(0, fetch("1:*", items, false)),
        Step::Run(0, status(view.drafts, &neomutt_status_items())),
    ]
}

fn neomutt_move(view: &View<'_>, uid: u32, folder: &str, delete: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if !delete {
        // Saving to a folder: its status, then a copy (no MOVE).
        steps.push(Step::Run(0, status(folder, &neomutt_status_items())));
        steps.push(Step::Run(
            0,
            Request::Copy {
                set: uid.to_string(),
                mailbox: folder.to_owned(),
                uid: true,
            },
        ));
    }
    // The delete flag and the pending `\Seen` go out on the sync (`$`),
    // then the expunge; neomutt keeps no Trash by default.
    steps.push(Step::Run(0, store(uid.to_string(), "\\Deleted", true)));
    steps.extend(pending_seen(view, 0, true));
    steps.push(Step::Run(0, Request::Expunge));
    steps
}

/// One `mbsync -a` on slot 0: log in, the folder list, every folder
/// selected, its UIDs and flags, the changes `local(folder)` pushes, new
/// Inbox mail downloaded, CLOSE; LOGOUT.
fn mbsync_sync(view: &View<'_>, local: impl FnMut(&str) -> Vec<Request>) -> Vec<Step> {
    let mut steps = vec![
        Step::Open(0),
        Step::Run(0, Request::Namespace),
        Step::Run(0, list("*")),
    ];
    sync_folders(view, &mut steps, local);
    steps.push(Step::Logout(0));
    steps
}

fn sync_folders(
    view: &View<'_>,
    steps: &mut Vec<Step>,
    mut local: impl FnMut(&str) -> Vec<Request>,
) {
    for folder in view.folders {
        steps.push(Step::Run(0, Request::Select(folder.clone())));
        steps.push(Step::RunIfAny(
            0,
            fetch("1:*", vec![FetchItem::Uid, FetchItem::Flags], true),
        ));
        if folder == view.inbox {
            steps.push(Step::FetchNew {
                slot: 0,
                items: vec![FetchItem::Body {
                    section: BodySection::Full,
                    peek: true,
                }],
                one_by_one: true,
            });
        }
        steps.extend(local(folder).into_iter().map(|r| Step::Run(0, r)));
        steps.push(Step::Run(0, Request::Close));
    }
}

fn roundcube_list_items() -> Vec<FetchItem> {
    vec![
        FetchItem::Uid,
        FetchItem::Size,
        FetchItem::Flags,
        FetchItem::InternalDate,
        headers(ROUNDCUBE_HEADERS),
    ]
}

/// Roundcube's Inbox list (a request of its own), the folder list with
/// every special folder's counts (another), each on a connection of its
/// own; `first` for the page the login opens on, which checks the Inbox's
/// counts first.
fn roundcube_list_page(view: &View<'_>, first: bool) -> Vec<Step> {
    let counts = [StatusItem::Messages, StatusItem::Unseen];
    let mut steps = Vec::new();
    if first {
        steps.extend([Step::Open(0), Step::Run(0, list("*")), Step::Logout(0)]);
    }
    steps.extend([
        Step::Open(0),
        Step::Run(0, status(view.inbox, &counts)),
        Step::Run(0, Request::Select(view.inbox.to_owned())),
    ]);
    if let Some(highest) = view.highest() {
        steps.push(Step::Run(
            0,
            Request::Search {
                criteria: SearchKey::Uid(highest.to_string()),
                uid: true,
            },
        ));
    }
    steps.push(Step::Run(
        0,
        Request::Search {
            criteria: SearchKey::All,
            uid: true,
        },
    ));
    if let Some(from) = view.page_from(ROUNDCUBE_PAGE) {
        steps.push(Step::Run(
            0,
            fetch(format!("{from}:*"), roundcube_list_items(), true),
        ));
    }
    if first {
        steps.push(Step::Run(0, status(view.inbox, &counts)));
    }
    steps.push(Step::Logout(0));
    steps.extend([Step::Open(0), Step::Run(0, list("*"))]);
    for folder in [view.inbox, view.drafts, view.sent, view.trash] {
        steps.push(Step::Run(0, status(folder, &counts)));
    }
    steps.push(Step::Logout(0));
    steps
}

/// Roundcube's preview pane: the message's structure and headers, its text,
/// the folder list, `\Seen`.
fn roundcube_preview(view: &View<'_>, uid: u32) -> Vec<Step> {
    let mut items = roundcube_list_items();
    items.insert(4, FetchItem::BodyStructure);
    vec![
        Step::Open(0),
        Step::Run(0, Request::Select(view.inbox.to_owned())),
        Step::Run(0, fetch(uid.to_string(), items, true)),
        Step::Run(
            0,
            fetch(
                uid.to_string(),
                vec![FetchItem::Body {
                    section: BodySection::Text,
                    peek: true,
                }],
                true,
            ),
        ),
        Step::Run(0, list("*")),
        Step::Run(0, store(uid.to_string(), "\\Seen", true)),
        Step::Logout(0),
    ]
}

/// Roundcube's move (drag and drop) or delete: the move, the list's counts
/// and the row that slides into the page, then the next message previewed.
fn roundcube_move(view: &View<'_>, uid: u32, folder: &str, delete: bool) -> Vec<Step> {
    let counts = [StatusItem::Messages, StatusItem::Unseen];
    let rest: Vec<u32> = view.uids.iter().copied().filter(|&u| u != uid).collect();
    let mut steps = vec![
        Step::Open(0),
        Step::Run(0, status(view.inbox, &counts)),
        Step::Run(0, Request::Select(view.inbox.to_owned())),
        Step::Run(
            0,
            Request::Search {
                criteria: SearchKey::Uid(view.highest().unwrap_or(uid).to_string()),
                uid: true,
            },
        ),
    ];
    if delete {
        steps.push(Step::Run(0, store(uid.to_string(), "\\Seen", true)));
    }
    steps.push(Step::Run(
        0,
        Request::Move {
            set: uid.to_string(),
            mailbox: folder.to_owned(),
            uid: true,
        },
    ));
    steps.push(Step::Run(0, status(view.inbox, &counts)));
    if let Some(&highest) = rest.last() {
        steps.push(Step::Run(
            0,
            Request::Search {
                criteria: SearchKey::Uid(highest.to_string()),
                uid: true,
            },
        ));
    }
    steps.push(Step::Run(0, status(folder, &counts)));
    steps.push(Step::Run(
        0,
        Request::Search {
            criteria: SearchKey::All,
            uid: true,
        },
    ));
    // The row that enters the page from below.
    if rest.len() >= ROUNDCUBE_PAGE {
        let entering = rest[rest.len() - ROUNDCUBE_PAGE];
        steps.push(Step::Run(
            0,
            fetch(entering.to_string(), roundcube_list_items(), true),
        ));
    }
    steps.push(Step::Logout(0));
    // The message after it opens in the preview pane.
    let next = rest
        .iter()
        .rev()
        .find(|&&u| u < uid)
        .or(rest.last())
        .copied();
    if let Some(next) = next {
        steps.extend(roundcube_preview(view, next));
    }
    steps
}

/// Roundcube's compose page, the send (a copy to Sent), and the list it
/// returns to.
fn roundcube_send(view: &View<'_>, message: &[u8]) -> Vec<Step> {
    let lsub = Request::Lsub {
        reference: String::new(),
        pattern: view.sent.to_owned(),
    };
    let mut steps = vec![
        Step::Open(0),
        Step::Run(0, lsub.clone()),
        Step::Logout(0),
        Step::Open(0),
        Step::Run(0, list("*")),
        Step::Logout(0),
        Step::Open(0),
        Step::Run(0, lsub),
        Step::Run(0, list(view.sent)),
        Step::Run(0, append(view.sent, message)),
        Step::Logout(0),
        Step::Open(0),
        Step::Run(0, list("*")),
        Step::Logout(0),
    ];
    let page = roundcube_list_page(view, false);
    // The list, then the folder counts of Inbox and Trash only.
    let split = page.iter().rposition(|s| *s == Step::Open(0)).unwrap_or(0);
    steps.extend(page[..split].iter().cloned());
    let counts = [StatusItem::Messages, StatusItem::Unseen];
    steps.extend([
        Step::Open(0),
        Step::Run(0, list("*")),
        Step::Run(0, status(view.inbox, &counts)),
        Step::Run(0, status(view.trash, &counts)),
        Step::Logout(0),
    ]);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(uids: &'a [u32], folders: &'a [String], open: &'a [Option<String>]) -> View<'a> {
        View {
            inbox: "INBOX",
            sent: "Sent",
            trash: "Trash",
            drafts: "Drafts",
            folders,
            uids,
            open,
            pending_seen: &[],
        }
    }

    fn commands(steps: &[Step]) -> Vec<&'static str> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Run(_, r) | Step::RunIfAny(_, r) => Some(r.name()),
                Step::Open(_) => Some("AUTHENTICATE"),
                Step::Logout(_) => Some("LOGOUT"),
                Step::Idle(_) => Some("IDLE"),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn issue_28_item_2_roundcube_lists_the_newest_page_of_the_inbox_whatever_its_size() {
        let folders = vec!["INBOX".to_owned()];
        let uids: Vec<u32> = (1..=73).collect();
        let steps = ClientModel::Roundcube.check_inbox(&view(&uids, &folders, &[]));
        let page = steps.iter().find_map(|s| match s {
            Step::Run(_, Request::Fetch { set, .. }) => Some(set.clone()),
            _ => None,
        });
        assert_eq!(page.as_deref(), Some("24:*"), "73 - 50 + 1");
        assert_eq!(
            steps.iter().filter(|s| matches!(s, Step::Open(_))).count(),
            4,
            "the login form and the list are four requests, four logins"
        );
        let small: Vec<u32> = (5..=9).collect();
        let steps = ClientModel::Roundcube.check_inbox(&view(&small, &folders, &[]));
        assert!(steps.contains(&Step::Run(0, fetch("5:*", roundcube_list_items(), true))));
    }

    #[test]
    fn issue_28_item_2_mbsync_walks_every_folder_it_is_given() {
        let folders: Vec<String> = ["INBOX", "Sent", "Folder1"].map(String::from).to_vec();
        let steps = ClientModel::Mbsync.check_inbox(&view(&[1, 2], &folders, &[]));
        let names = commands(&steps);
        assert_eq!(names.iter().filter(|&&n| n == "SELECT").count(), 3);
        assert_eq!(names.iter().filter(|&&n| n == "CLOSE").count(), 3);
        assert_eq!(names.first(), Some(&"AUTHENTICATE"));
        assert_eq!(names.last(), Some(&"LOGOUT"));
    }

    #[test]
    fn issue_28_item_3_thunderbird_walks_its_folders_in_a_fixed_order_per_profile() {
        let folders: Vec<String> = ["INBOX", "Trash", "Sent", "Drafts"]
            .map(String::from)
            .into_iter()
            .chain((1..=40).map(|n| format!("Folder{n}")))
            .collect();
        let v = view(&[], &folders, &[]);
        let tb = ClientModel::Thunderbird;
        let order = tb.sweep_order(&v, profile_key(28, 3));
        assert_eq!(order.len(), 42, "every folder but the Inbox and Trash");
        assert!(!order.iter().any(|f| f == "INBOX" || f == "Trash"));
        assert_eq!(
            order,
            tb.sweep_order(&v, profile_key(28, 3)),
            "fixed per profile"
        );
        assert_ne!(
            order,
            tb.sweep_order(&v, profile_key(28, 4)),
            "another profile"
        );
        let mut sorted = order.clone();
        sorted.sort();
        assert_ne!(order, sorted, "not the names' order");
        assert!(ClientModel::Neomutt.sweep_order(&v, 1).is_empty());
        assert_eq!(tb.changed_at_start(&v), ["Sent"]);
        assert_eq!(tb.idle_delay(), Duration::from_secs(2));
        assert_eq!(ClientModel::Neomutt.idle_delay(), Duration::ZERO);
    }

    #[test]
    fn issue_28_item_3_thunderbird_opens_a_connection_per_changed_folder_up_to_five_then_reuses_one()
     {
        let folders: Vec<String> = ["INBOX", "Sent", "Folder1"].map(String::from).to_vec();
        let tb = ClientModel::Thunderbird;
        let some = |f: &str| Some(f.to_owned());
        // The Inbox's and the folder connection: Sent gets a new one.
        let open = vec![some("INBOX"), some(""), None, None, None];
        let v = view(&[1], &folders, &open);
        let steps = tb.sweep_folder(&v, "Sent", Some(false));
        assert_eq!(
            commands(&steps),
            [
                "STATUS",
                "AUTHENTICATE",
                "ID",
                "SELECT",
                "UID FETCH",
                "NOOP",
                "UID FETCH",
                "IDLE"
            ]
        );
        assert!(steps.contains(&Step::Open(2)));
        // Unchanged: its STATUS only.
        assert_eq!(commands(&tb.sweep_folder(&v, "Folder1", None)), ["STATUS"]);
        // Mail moved there: the headers of what is new to the client too.
        let names = commands(&tb.sweep_folder(&v, "Folder1", Some(true)));
        assert_eq!(names.iter().filter(|&&n| n == "UID FETCH").count(), 3);
        // Five connections: the last one selects the folder, no new login.
        let full = vec![
            some("INBOX"),
            some(""),
            some("Sent"),
            some("Folder2"),
            some("Folder3"),
        ];
        let v = view(&[1], &folders, &full);
        let steps = tb.sweep_folder(&v, "Folder1", Some(true));
        assert!(!commands(&steps).contains(&"AUTHENTICATE"));
        assert!(steps.contains(&Step::Run(4, Request::Select("Folder1".to_owned()))));
    }

    #[test]
    fn issue_28_item_3_thunderbird_shows_the_next_message_after_a_move_not_after_a_delete() {
        let folders = vec!["INBOX".to_owned()];
        let v = view(&[3, 4, 5], &folders, &[]);
        let tb = ClientModel::Thunderbird;
        assert_eq!(
            tb.shown_after_move(&v, 4, false),
            Some(3),
            "the next one down"
        );
        assert_eq!(
            tb.shown_after_move(&v, 3, false),
            Some(5),
            "the last when none is below"
        );
        assert_eq!(tb.shown_after_move(&v, 4, true), None);
        assert_eq!(ClientModel::Neomutt.shown_after_move(&v, 4, false), None);
    }

    #[test]
    fn issue_28_item_2_neomutt_and_thunderbird_mark_a_read_message_on_their_next_command() {
        let folders = vec!["INBOX".to_owned()];
        let open = vec![Some("INBOX".to_owned())];
        let mut v = view(&[3, 4, 5], &folders, &open);
        assert!(ClientModel::Thunderbird.read(&v, 4).is_empty());
        v.pending_seen = &[4];
        let steps = ClientModel::Thunderbird.move_message(&v, 5, "Folder1", false, b"");
        assert_eq!(steps[0], Step::Run(0, store("4", "\\Seen", false)));
        let steps = ClientModel::Neomutt.move_message(&v, 5, "Trash", true, b"");
        assert_eq!(
            commands(&steps),
            ["UID STORE", "UID STORE", "EXPUNGE"],
            "neomutt deletes in place: no Trash, no MOVE"
        );
    }
}
