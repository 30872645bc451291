//! The IMAP session of a user who imitates a recorded client (issue 28):
//! the steps a [`ClientModel`] chooses for each action and each idle period
//! (`peakhour_imap::clients`, pure) performed here over the session's
//! connection slots, and the session's knowledge of its Inbox kept from
//! the replies, as for peakhour's own client. `run --client` and a
//! profile's `[clients]` choose the model ([`peakhour_workload::Personality`]).

use peakhour_imap::clients::{ClientModel, MAX_SLOTS, Slot, Step};
use peakhour_imap::fidelity::{WireCursor, wire_lines};
use peakhour_imap::{FetchedMessage, ImapConnection, ListEntry, Request, Wire};
use peakhour_workload::Personality;
use tokio::time::Instant;

use crate::sessions::header;

pub(crate) mod draw;

/// The model a personality follows; `None` for peakhour's own client.
pub(crate) fn model_of(personality: Personality) -> Option<ClientModel> {
    match personality {
        Personality::Peakhour => None,
        Personality::Thunderbird => Some(ClientModel::Thunderbird),
        Personality::Mbsync => Some(ClientModel::Mbsync),
        Personality::Neomutt => Some(ClientModel::Neomutt),
        Personality::Roundcube => Some(ClientModel::Roundcube),
    }
}

/// What a session imitating a client keeps beside peakhour's own state.
pub(crate) struct ClientState<S> {
    pub(crate) model: ClientModel,
    /// Slots 1.. (slot 0 is the session's own connection).
    extra: Vec<Option<ImapConnection<S>>>,
    /// Per slot, the folder selected on its open connection.
    open: Vec<Option<String>>,
    /// Every selectable folder, as the server listed them.
    folders: Vec<String>,
    drafts: String,
    /// Read but not yet marked `\Seen` on the server.
    pending_seen: Vec<u32>,
    /// Inbox UIDs the last FETCH found that the session did not know.
    fresh: Vec<u32>,
    /// When the client next wakes up while idle.
    next_burst: Instant,
    /// Folders the start's sweep has still to look at, each with its time.
    sweep: std::collections::VecDeque<(Instant, String)>,
    /// Steps the client runs on its own a little later, each with its time
    /// (a delayed IDLE, [`ClientModel::idle_delay`]).
    later: Vec<(Instant, Step)>,
    /// What the user's first action waits for
    /// ([`ClientModel::discovery_tail`]).
    tail: Vec<Step>,
    /// Folders mail went into since the client last looked at them, each
    /// with whether that mail is new to the client (moved there) or its own
    /// (copies it saved).
    changed: std::collections::BTreeMap<String, bool>,
    /// The day's speed (the plan's; a trace may change it).
    pub(crate) speed: f64,
    /// The client's start is over: a FETCH's unknown UIDs are new mail from
    /// now on (at the start they are the mailbox the client already has).
    synced: bool,
    /// The wire of every connection, when traced (the fidelity test).
    pub(crate) trace: Option<Trace>,
}

/// Every connection's traffic in the fixtures' transcript format.
#[derive(Default)]
pub(crate) struct Trace {
    pub(crate) started: Option<std::time::Instant>,
    /// Simulated seconds per real second (the plan's speed): the
    /// transcript is in the day's time, as a recording is.
    pub(crate) scale: f64,
    /// Simulated seconds before `started` (a rescaled trace).
    offset: f64,
    pub(crate) lines: Vec<String>,
    /// Per slot: the connection number it has now, and its cursors.
    connections: Vec<(u32, WireCursor, WireCursor)>,
    opened: u32,
}

impl Trace {
    /// Simulated seconds since the trace started.
    pub(crate) fn seconds(&self) -> f64 {
        self.offset
            + self
                .started
                .map_or(0.0, |s| s.elapsed().as_secs_f64() * self.scale)
    }

    /// From now on, `scale` simulated seconds per real second.
    pub(crate) fn rescale(&mut self, scale: f64) {
        self.offset = self.seconds();
        self.started = Some(std::time::Instant::now());
        self.scale = scale;
    }

    fn open(&mut self, slot: Slot) {
        self.opened += 1;
        if self.connections.len() <= slot {
            self.connections.resize_with(slot + 1, || {
                (0, WireCursor::default(), WireCursor::default())
            });
        }
        self.connections[slot] = (self.opened, WireCursor::default(), WireCursor::default());
        let at = self.seconds();
        self.lines.push(format!("{at:.6} c{} open", self.opened));
    }

    fn record(&mut self, slot: Slot, wire: Vec<Wire>) {
        let at = self.seconds();
        let Some((number, sent, received)) = self.connections.get_mut(slot) else {
            return;
        };
        for chunk in wire {
            let (side, bytes, cursor) = match &chunk {
                Wire::Sent(bytes) => ("C", bytes, &mut *sent),
                Wire::Received(bytes) => ("S", bytes, &mut *received),
            };
            for line in wire_lines(bytes, cursor) {
                self.lines.push(format!("{at:.6} c{number} {side}: {line}"));
            }
        }
    }
}

impl<S> ClientState<S> {
    /// The day runs at `speed` from now on: the client's pending wake-ups
    /// keep their distance in the day's time.
    pub(crate) fn set_speed(&mut self, speed: f64) {
        let now = Instant::now();
        let ratio = self.speed.max(1e-9) / speed.max(1e-9);
        let rescale = |at: Instant| now + at.saturating_duration_since(now).mul_f64(ratio);
        self.next_burst = rescale(self.next_burst);
        for (at, _) in &mut self.sweep {
            *at = rescale(*at);
        }
        for (at, _) in &mut self.later {
            *at = rescale(*at);
        }
        self.speed = speed;
        if let Some(trace) = self.trace.as_mut() {
            trace.rescale(speed);
        }
    }

    /// The state of a session that follows `model`, with the folders the
    /// server listed.
    pub(crate) fn new(
        model: ClientModel,
        listing: &[ListEntry],
        inbox: &str,
        traced: Option<f64>,
    ) -> Self {
        let selectable = |e: &&ListEntry| {
            !e.attributes.iter().any(|a| {
                a.eq_ignore_ascii_case("\\Noselect") || a.eq_ignore_ascii_case("\\NonExistent")
            })
        };
        let mut folders: Vec<String> = listing
            .iter()
            .filter(selectable)
            .map(|e| e.name.clone())
            .collect();
        if !folders.iter().any(|f| f == inbox) {
            folders.insert(0, inbox.to_owned());
        }
        let drafts = listing
            .iter()
            .find(|e| {
                e.attributes
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case("\\Drafts"))
            })
            .map_or_else(|| "Drafts".to_owned(), |e| e.name.clone());
        let mut open = vec![None; MAX_SLOTS];
        open[0] = Some(String::new());
        let trace = traced.map(|scale| {
            let mut trace = Trace {
                started: Some(std::time::Instant::now()),
                scale,
                ..Trace::default()
            };
            trace.open(0);
            trace
        });
        ClientState {
            model,
            extra: (1..MAX_SLOTS).map(|_| None).collect(),
            open,
            folders,
            drafts,
            pending_seen: Vec::new(),
            fresh: Vec::new(),
            next_burst: Instant::now(),
            sweep: std::collections::VecDeque::new(),
            later: Vec::new(),
            tail: Vec::new(),
            changed: std::collections::BTreeMap::new(),
            speed: 1.0,
            synced: false,
            trace,
        }
    }
}

/// The Message-ID in any header or body section a FETCH returned.
fn message_id_in(message: &FetchedMessage) -> Option<String> {
    if let Some(id) = message.envelope.as_ref().and_then(|e| e.message_id.clone()) {
        return Some(id);
    }
    message
        .sections
        .iter()
        .find_map(|(_, bytes)| header(bytes, "Message-ID"))
}

/// The name a command is recorded under (`imap.UID FETCH`).
fn event_name(request: &Request) -> &'static str {
    match request.name() {
        "NOOP" => "imap.NOOP",
        "SELECT" => "imap.SELECT",
        "STATUS" => "imap.STATUS",
        "FETCH" => "imap.FETCH",
        "UID FETCH" => "imap.UID FETCH",
        "UID STORE" => "imap.UID STORE",
        "UID COPY" => "imap.UID COPY",
        "UID MOVE" => "imap.UID MOVE",
        "UID SEARCH" => "imap.UID SEARCH",
        "EXPUNGE" => "imap.EXPUNGE",
        "APPEND" => "imap.APPEND",
        "LIST" => "imap.LIST",
        "LSUB" => "imap.LSUB",
        "NAMESPACE" => "imap.NAMESPACE",
        "CLOSE" => "imap.CLOSE",
        "CHECK" => "imap.CHECK",
        "CAPABILITY" => "imap.CAPABILITY",
        "ENABLE" => "imap.ENABLE",
        "ID" => "imap.ID",
        "LOGOUT" => "imap.LOGOUT",
        _ => "imap.OTHER",
    }
}

mod day;
mod steps;
