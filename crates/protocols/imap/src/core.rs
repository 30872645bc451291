//! The sans-I/O client: bytes from the server in, events and bytes to write out.
//!
//! One command is in flight at a time. That is what a simulated user does (it
//! waits for each answer before the next action), and it makes every tagged
//! completion unambiguous: a tag that is not the current one is an error.

use std::cell::Cell;
use std::collections::VecDeque;

use peakhour_net::{Progress, ProtocolCore};

use imap_codec::decode::{Decoder, GreetingDecodeError, ResponseDecodeError};
use imap_codec::imap_types::core::{IString, NString, Vec1};
use imap_codec::imap_types::fetch::MessageDataItem;
use imap_codec::imap_types::response::{
    Capability, Code, Data, Greeting, GreetingKind, Response, Status, StatusKind,
};
use imap_codec::imap_types::status::StatusDataItem;
use imap_codec::{GreetingCodec, ResponseCodec};

use crate::modseq::WithoutModseq;

use crate::convert;
use crate::error::{ImapError, Refusal};
use crate::framer::{Framed, Framer, Limits, LiteralSpan};
use crate::quick::{self, Quick};
use crate::request::{Outgoing, Request};
use crate::types::{
    AppendUid, Capabilities, CopyUid, FetchedMessage, ListEntry, MailboxState, MailboxUpdate,
    Namespaces, Rejection, StatusInfo, ThreadNode,
};

/// The smallest literal [`ClientCore`] decodes without imap-codec seeing its
/// bytes: below it, building the message without them costs more than
/// imap-codec's check of each byte would.
const LITERAL_LEFT_OUT_MIN: usize = 256;

thread_local! {
    /// Where a message is rebuilt with its literal left out (its lines only,
    /// so it stays small); one per thread, reused.
    static SHELL: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Bytes that went over the wire, as [`ClientCore::record_wire`] records
/// them. A password the client sent is in `Sent`: never log these.
#[derive(Clone, PartialEq, Eq)]
pub enum Wire {
    /// Bytes the core handed out to write.
    Sent(Vec<u8>),
    /// Bytes handed to the core, as they were read.
    Received(Vec<u8>),
}

// By hand: `Sent` may hold a LOGIN password, which must never be printed.
impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wire::Sent(bytes) => write!(f, "Sent({} bytes)", bytes.len()),
            Wire::Received(bytes) => write!(f, "Received({} bytes)", bytes.len()),
        }
    }
}

/// Something the server told us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The greeting arrived; `preauth` if the server logged us in already.
    Greeting {
        /// `* PREAUTH`.
        preauth: bool,
    },
    /// The selected mailbox changed (also applied to [`ClientCore::mailbox`]).
    Update(MailboxUpdate),
    /// The server accepted IDLE (`+ idling`); updates follow until DONE.
    IdleAccepted,
    /// The command in flight completed with OK.
    Completed {
        /// The command's name.
        command: &'static str,
        /// What it returned.
        reply: Reply,
    },
    /// The command in flight completed with NO or BAD.
    Rejected(Rejection),
}

/// The result of a command that completed with OK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Nothing beyond OK (LOGIN, CREATE, STORE .SILENT, IDLE, NOOP ...).
    Done,
    /// LIST.
    List(Vec<ListEntry>),
    /// SELECT / EXAMINE.
    Mailbox(MailboxState),
    /// STATUS.
    Status(StatusInfo),
    /// FETCH, and STORE without .SILENT.
    Fetch(Vec<FetchedMessage>),
    /// SEARCH / SORT: sequence numbers or UIDs.
    Numbers(Vec<u32>),
    /// THREAD.
    Threads(Vec<ThreadNode>),
    /// APPEND, with `[APPENDUID]` when the server has UIDPLUS.
    Appended(Option<AppendUid>),
    /// COPY / MOVE, with `[COPYUID]` when the server has UIDPLUS.
    Copied(Option<CopyUid>),
    /// EXPUNGE: the sequence numbers expunged, in the order reported.
    Expunged(Vec<u32>),
    /// ID: the server's fields.
    Id(Vec<(String, Option<String>)>),
    /// NAMESPACE.
    Namespace(Namespaces),
}

/// What the command in flight collects from untagged data until it completes.
#[derive(Debug)]
enum Collected {
    Nothing,
    List(Vec<ListEntry>),
    Mailbox,
    Status(StatusInfo),
    Fetch(Vec<FetchedMessage>),
    Numbers(Vec<u32>),
    Threads(Vec<ThreadNode>),
    Appended(Option<AppendUid>),
    Copied(Option<CopyUid>),
    Expunged(Vec<u32>),
    Id(Vec<(String, Option<String>)>),
    Namespace(Namespaces),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdlePhase {
    NotIdle,
    /// IDLE sent, `+` not yet seen.
    Requested,
    /// `+` seen; updates flow until DONE.
    Idling,
    /// DONE queued or sent; waiting for the tagged completion.
    Done,
}

struct InFlight {
    tag: String,
    request_kind: RequestKind,
    command: &'static str,
    /// Pieces still to write; the front is the next to go.
    outgoing: VecDeque<Outgoing>,
    collected: Collected,
    /// Bytes and responses of untagged data received while in flight,
    /// held to [`Limits::max_collected_bytes`] and
    /// [`Limits::max_collected_responses`].
    collected_bytes: u64,
    collected_responses: u64,
    idle: IdlePhase,
    /// DONE was asked for before the server's `+` arrived.
    done_requested: bool,
    /// For SELECT and EXAMINE: the mailbox state that starts when the
    /// command does (a SELECT deselects the current mailbox even if it then
    /// fails). Applied when the command becomes the one in flight.
    selecting: Option<MailboxState>,
}

// By hand: `outgoing` may hold a LOGIN password, which must never be printed.
impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("tag", &self.tag)
            .field("command", &self.command)
            .field("pieces_to_write", &self.outgoing.len())
            .field("collected", &self.collected)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

/// The parts of a request the core still needs after encoding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RequestKind {
    Select,
    Fetch,
    Login,
    StartTls,
    Logout,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitingGreeting,
    Ready,
    /// After BYE, EOF or a fatal error: nothing more can happen.
    Closed,
}

/// The sans-I/O IMAP client.
///
/// Feed it server bytes with [`ClientCore::enqueue_input`], start commands
/// with [`ClientCore::send`], and call [`ClientCore::next`] until it says
/// [`Progress::NeedMoreInput`]: the shape of every peakhour protocol core
/// ([`ProtocolCore`]). It never touches a socket or a clock.
#[derive(Debug)]
pub struct ClientCore {
    framer: Framer,
    limits: Limits,
    phase: Phase,
    next_tag: u32,
    capabilities: Capabilities,
    mailbox: Option<MailboxState>,
    in_flight: Option<InFlight>,
    /// Commands sent behind the one in flight, in the same write: a command
    /// after DONE ([`ClientCore::send_after_idle`]), IDLE behind a command
    /// ([`ClientCore::queue_idle`]), or both. Each becomes the one in flight
    /// when the one before it completes.
    queued: VecDeque<InFlight>,
    events: VecDeque<Event>,
    /// The BYE text, kept so the error for the connection closing can show it.
    bye: Option<String>,
    /// The server closed the connection; what is buffered is all there is.
    input_closed: bool,
    /// Every byte written and read, in wire order, while recording
    /// ([`ClientCore::record_wire`]); `None` when not recording.
    wire: Option<Vec<Wire>>,
}

impl ClientCore {
    /// A client waiting for the server's greeting.
    pub fn new(limits: Limits) -> Self {
        Self {
            framer: Framer::new(limits),
            limits,
            phase: Phase::AwaitingGreeting,
            next_tag: 1,
            capabilities: Capabilities::default(),
            mailbox: None,
            in_flight: None,
            queued: VecDeque::new(),
            events: VecDeque::new(),
            bye: None,
            input_closed: false,
            wire: None,
        }
    }

    /// Hands server bytes to the client; call [`ClientCore::next`] afterwards.
    pub fn enqueue_input(&mut self, bytes: &[u8]) {
        if let Some(wire) = &mut self.wire {
            wire.push(Wire::Received(bytes.to_vec()));
        }
        self.framer.enqueue(bytes);
    }

    /// What the server advertised most recently.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// The selected mailbox, if any.
    pub fn mailbox(&self) -> Option<&MailboxState> {
        self.mailbox.as_ref()
    }

    /// True while a command is waiting for its completion.
    pub fn is_busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// True between the server's `+` to IDLE and [`ClientCore::idle_done`].
    pub fn is_idling(&self) -> bool {
        self.in_flight
            .as_ref()
            .is_some_and(|f| f.idle == IdlePhase::Idling)
    }

    /// True while an IDLE in flight waits for the server's `+`.
    pub fn is_idle_requested(&self) -> bool {
        self.in_flight
            .as_ref()
            .is_some_and(|f| f.idle == IdlePhase::Requested)
    }

    /// Sends IDLE right behind the command in flight, in the same write: once
    /// that command completes, IDLE is the command in flight, and the server's
    /// `+` ([`Event::IdleAccepted`]) follows the command's completion without
    /// another round trip. Returns IDLE's tag.
    ///
    /// The command may itself be queued behind DONE: DONE, the command and
    /// IDLE then all go out in one write.
    ///
    /// [`ImapError::Busy`] unless the last command started is not IDLE and is
    /// still in flight or queued; [`ImapError::NotOffered`] without the IDLE
    /// capability. Nothing is queued then.
    pub fn queue_idle(&mut self) -> Result<String, ImapError> {
        let busy = ImapError::Busy { command: "IDLE" };
        let last = self.queued.back().or(self.in_flight.as_ref());
        if self.phase != Phase::Ready || !last.is_some_and(|f| f.idle == IdlePhase::NotIdle) {
            return Err(busy);
        }
        let flight = self.prepare(&Request::Idle)?;
        let tag = flight.tag.clone();
        self.queued.push_back(flight);
        Ok(tag)
    }

    /// Starts `request`; its bytes come out of [`ClientCore::next`]. Returns the tag.
    ///
    /// Fails without sending anything if a command is in flight, if the server
    /// does not offer what the request needs, or if an argument cannot be sent.
    pub fn send(&mut self, request: &Request) -> Result<String, ImapError> {
        let command = request.name();
        match self.phase {
            Phase::Ready => {}
            Phase::AwaitingGreeting => return Err(ImapError::Busy { command }),
            Phase::Closed => return Err(self.closed_error()),
        }
        if self.in_flight.is_some() {
            return Err(ImapError::Busy { command });
        }
        let flight = self.prepare(request)?;
        let tag = flight.tag.clone();
        self.activate(flight);
        Ok(tag)
    }

    /// Ends IDLE and starts `request` behind it: DONE and the request go out
    /// in one write (one system call and one packet instead of two, and no
    /// round trip waited for in between). IDLE then completes with
    /// [`Event::Completed`] (`command` "IDLE"), and `request` after it.
    /// Returns the request's tag.
    ///
    /// Only while idling (the server's `+` seen, DONE not yet asked for), and
    /// only for a request that [`Request::can_follow_idle`]; otherwise
    /// [`ImapError::Busy`] and nothing is queued.
    pub fn send_after_idle(&mut self, request: &Request) -> Result<String, ImapError> {
        let command = request.name();
        if self.phase != Phase::Ready
            || !self.is_idling()
            || !self.queued.is_empty()
            || !request.can_follow_idle()
        {
            return Err(ImapError::Busy { command });
        }
        let flight = self.prepare(request)?;
        let tag = flight.tag.clone();
        self.idle_done();
        self.queued.push_back(flight);
        Ok(tag)
    }

    /// Encodes `request` under the next tag; nothing changes if it fails.
    fn prepare(&mut self, request: &Request) -> Result<InFlight, ImapError> {
        let command = request.name();
        request.check_offered(&self.capabilities)?;
        let tag = format!("A{:04}", self.next_tag);
        let outgoing = request.encode(&tag, &self.capabilities)?;
        self.next_tag = self.next_tag.wrapping_add(1);
        let mut selecting = None;
        let (request_kind, collected) = match request {
            Request::Select(name) | Request::Examine(name) => {
                selecting = Some(MailboxState {
                    name: name.clone(),
                    read_only: matches!(request, Request::Examine(_)),
                    ..MailboxState::default()
                });
                (RequestKind::Select, Collected::Mailbox)
            }
            Request::Fetch { .. } => (RequestKind::Fetch, Collected::Fetch(Vec::new())),
            Request::Store { silent: false, .. } => {
                (RequestKind::Other, Collected::Fetch(Vec::new()))
            }
            Request::Login { .. } | Request::AuthenticatePlain { .. } => {
                (RequestKind::Login, Collected::Nothing)
            }
            Request::StartTls => (RequestKind::StartTls, Collected::Nothing),
            Request::Logout => (RequestKind::Logout, Collected::Nothing),
            Request::List { .. } => (RequestKind::Other, Collected::List(Vec::new())),
            Request::Status { mailbox, .. } => (
                RequestKind::Other,
                Collected::Status(StatusInfo {
                    mailbox: mailbox.clone(),
                    ..StatusInfo::default()
                }),
            ),
            Request::Search { .. } | Request::Sort { .. } => {
                (RequestKind::Other, Collected::Numbers(Vec::new()))
            }
            Request::Thread { .. } => (RequestKind::Other, Collected::Threads(Vec::new())),
            Request::Append { .. } | Request::MultiAppend { .. } => {
                (RequestKind::Other, Collected::Appended(None))
            }
            Request::Copy { .. } | Request::Move { .. } => {
                (RequestKind::Other, Collected::Copied(None))
            }
            Request::Expunge | Request::UidExpunge(_) => {
                (RequestKind::Other, Collected::Expunged(Vec::new()))
            }
            Request::Id(_) => (RequestKind::Other, Collected::Id(Vec::new())),
            Request::Namespace => (
                RequestKind::Other,
                Collected::Namespace(Namespaces::default()),
            ),
            _ => (RequestKind::Other, Collected::Nothing),
        };
        Ok(InFlight {
            tag,
            request_kind,
            command,
            outgoing: outgoing.into(),
            collected,
            collected_bytes: 0,
            collected_responses: 0,
            idle: if matches!(request, Request::Idle) {
                IdlePhase::Requested
            } else {
                IdlePhase::NotIdle
            },
            done_requested: false,
            selecting,
        })
    }

    /// Makes `flight` the command in flight.
    fn activate(&mut self, mut flight: InFlight) {
        if let Some(state) = flight.selecting.take() {
            self.mailbox = Some(state);
        }
        self.in_flight = Some(flight);
    }

    /// Ends IDLE: queues `DONE` (at once, or as soon as the server's `+` arrives).
    /// The IDLE command then completes with [`Event::Completed`].
    pub fn idle_done(&mut self) {
        if let Some(flight) = &mut self.in_flight {
            match flight.idle {
                IdlePhase::Idling => {
                    flight.idle = IdlePhase::Done;
                    flight
                        .outgoing
                        .push_back(Outgoing::Bytes(b"DONE\r\n".to_vec()));
                }
                IdlePhase::Requested => flight.done_requested = true,
                IdlePhase::NotIdle | IdlePhase::Done => {}
            }
        }
    }

    /// The server closed the connection. Once the complete responses still
    /// buffered are handed out, [`ClientCore::next`] reports it: a truncated
    /// response if bytes of one were pending, else "closed".
    pub fn input_closed(&mut self) {
        self.input_closed = true;
    }

    fn end_of_input(&mut self) -> ImapError {
        let pending = self.framer.buffered();
        let error = if !pending.is_empty() {
            ImapError::malformed("truncated response at end of stream", pending)
        } else {
            self.closed_error()
        };
        self.phase = Phase::Closed;
        error
    }

    /// After a successful STARTTLS the driver upgrades the transport; any byte
    /// the server sent after its OK arrived in plain text and could have been
    /// injected by an attacker, so it is refused (CVE-2011-0411 class).
    pub fn starttls_completed(&mut self) -> Result<(), ImapError> {
        if !self.framer.buffered().is_empty() {
            let error =
                ImapError::malformed("plain-text data after STARTTLS", self.framer.buffered());
            self.phase = Phase::Closed;
            return Err(error);
        }
        self.framer.clear();
        self.capabilities.forget();
        Ok(())
    }

    /// The next thing to do: bytes to write, an event, or "need more input".
    ///
    /// An `Err` is fatal (malformed data, BYE, a broken limit): the connection
    /// must be dropped, and later calls keep failing.
    #[expect(
        clippy::should_implement_trait,
        reason = "the `next` of every peakhour protocol core, after imap-next; it never ends, so it is no iterator"
    )]
    pub fn next(&mut self) -> Result<Progress<Event>, ImapError> {
        if self.phase == Phase::Closed {
            return Err(self.closed_error());
        }
        if let Some(bytes) = self.writable() {
            return Ok(self.output(bytes));
        }
        loop {
            if let Some(event) = self.events.pop_front() {
                return Ok(Progress::Event(event));
            }
            let message = match self.framer.next_message() {
                Ok(Some(message)) => message,
                Ok(None) if self.input_closed => return Err(self.end_of_input()),
                Ok(None) => return Ok(Progress::NeedMoreInput),
                Err(error) => return Err(self.fail(error)),
            };
            if let Err(error) = self.process(message) {
                return Err(self.fail(error));
            }
            if let Some(bytes) = self.writable() {
                return Ok(self.output(bytes));
            }
        }
    }

    /// Bytes to write, recorded first when recording.
    fn output(&mut self, bytes: Vec<u8>) -> Progress<Event> {
        if let Some(wire) = &mut self.wire {
            wire.push(Wire::Sent(bytes.clone()));
        }
        Progress::Output(bytes)
    }

    /// Starts (or stops, dropping what was recorded) recording every byte
    /// the core hands out to write and every byte handed to it, in wire
    /// order: what a state-check model (`peakhour-state-check`) of this
    /// session reads. Take them with [`ClientCore::take_wire`] after each
    /// command; they are kept until then.
    pub fn record_wire(&mut self, on: bool) {
        self.wire = on.then(Vec::new);
    }

    /// The bytes recorded since the last call, in wire order (empty when
    /// not recording).
    pub fn take_wire(&mut self) -> Vec<Wire> {
        self.wire.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn fail(&mut self, error: ImapError) -> ImapError {
        self.phase = Phase::Closed;
        self.in_flight = None;
        self.queued.clear();
        error
    }

    fn closed_error(&self) -> ImapError {
        ImapError::Closed {
            bye: self.bye.clone(),
        }
    }

    /// Everything that can go out before the next continuation request: the
    /// command in flight's, and, as each has nothing more to send, the
    /// commands queued behind it.
    fn writable(&mut self) -> Option<Vec<u8>> {
        let flight = self.in_flight.as_mut()?;
        let mut out: Option<Vec<u8>> = None;
        take_bytes(&mut flight.outgoing, &mut out);
        if flight.outgoing.is_empty() {
            for queued in &mut self.queued {
                take_bytes(&mut queued.outgoing, &mut out);
                if !queued.outgoing.is_empty() {
                    break;
                }
            }
        }
        out
    }

    /// Decodes one framed message and applies it. The buffer is lent out so
    /// the borrowed response can live while `self` is updated.
    fn process(&mut self, message: Framed) -> Result<(), ImapError> {
        let buffer = self.framer.take_buffer();
        let result = match buffer.get(message.range.clone()) {
            Some(bytes) => match message.only_literal {
                Some(span) => self.decode_literal_apart(bytes, message.range.start, span),
                None => self.decode_and_apply(bytes),
            },
            None => Err(ImapError::malformed("framing error", &[])),
        };
        self.framer.return_buffer(buffer);
        result
    }

    /// Decodes a message whose only literal is a FETCH's message body
    /// without handing the body to imap-codec, which checks every byte of a
    /// literal for NUL one at a time: for a read of a 4 KiB message that was
    /// 4% of the generator's CPU. The message is decoded with the literal
    /// emptied (`{0}`), the body is checked for NUL here (a word at a time),
    /// and its bytes go where the empty literal was. Anything else (a small
    /// literal, a literal8, a literal that is not a body section, a message
    /// that does not decode so) is decoded whole as before, so the result is
    /// the same either way; the transcripts and `tests/literal_apart.rs`
    /// check that.
    fn decode_literal_apart(
        &mut self,
        bytes: &[u8],
        offset: usize,
        span: LiteralSpan,
    ) -> Result<(), ImapError> {
        let (open, data_start, data_end) = (
            span.open - offset,
            span.data_start - offset,
            span.data_end - offset,
        );
        let data = &bytes[data_start..data_end];
        if self.phase != Phase::Ready
            || data.len() < LITERAL_LEFT_OUT_MIN
            || open == 0
            || bytes[open - 1] == b'~'
        {
            return self.decode_and_apply(bytes);
        }
        let mut shell = SHELL.take();
        shell.clear();
        shell.extend_from_slice(&bytes[..open]);
        shell.extend_from_slice(b"{0}\r\n");
        shell.extend_from_slice(&bytes[data_end..]);
        let applied = match ResponseCodec::default().decode(&shell) {
            Ok(([], response)) if holds_body_literal(&response) => Some(if data.contains(&0) {
                // What imap-codec says of a literal with a NUL in it.
                Err(ImapError::malformed("not an IMAP response", bytes))
            } else {
                self.apply(response, bytes, Some(data))
            }),
            _ => None,
        };
        if shell.capacity() <= 4096 {
            SHELL.set(shell);
        }
        match applied {
            Some(result) => result,
            None => self.decode_and_apply(bytes),
        }
    }

    fn decode_and_apply(&mut self, bytes: &[u8]) -> Result<(), ImapError> {
        if self.phase == Phase::AwaitingGreeting {
            let greeting = match GreetingCodec::default().decode(bytes) {
                Ok(([], greeting)) => greeting,
                Ok(_) => return Err(ImapError::malformed("trailing bytes after greeting", bytes)),
                Err(GreetingDecodeError::Incomplete | GreetingDecodeError::Failed) => {
                    return Err(ImapError::malformed("not an IMAP greeting", bytes));
                }
            };
            return self.on_greeting(greeting);
        }
        if let Some(quick) = quick::read(bytes) {
            return self.apply_quick(quick, bytes);
        }
        if let Some(message) = quick::read_fetch(bytes) {
            self.count_collected(bytes)?;
            self.on_fetched(message);
            return Ok(());
        }
        let response = match ResponseCodec::default().decode(bytes) {
            Ok(([], response)) => response,
            Ok(_) => return Err(ImapError::malformed("trailing bytes after response", bytes)),
            Err(ResponseDecodeError::Incomplete | ResponseDecodeError::LiteralFound { .. }) => {
                return Err(ImapError::malformed("incomplete response", bytes));
            }
            Err(ResponseDecodeError::Failed) => return self.apply_without_modseq(bytes),
        };
        self.apply(response, bytes, None)
    }

    /// A FETCH imap-codec could not decode because of its CONDSTORE
    /// `MODSEQ` item (`crate::modseq`): applied without it.
    fn apply_without_modseq(&mut self, bytes: &[u8]) -> Result<(), ImapError> {
        let malformed = || ImapError::malformed("not an IMAP response", bytes);
        match crate::modseq::without_modseq(bytes).ok_or_else(malformed)? {
            WithoutModseq::Nothing => self.count_collected(bytes),
            WithoutModseq::Rest(rest) => match ResponseCodec::default().decode(&rest) {
                Ok(([], response)) => self.apply(response, bytes, None),
                _ => Err(malformed()),
            },
        }
    }

    /// Applies a response read without imap-codec ([`quick::read`]): the
    /// same as [`ClientCore::apply`] does with imap-codec's reading of it.
    fn apply_quick(&mut self, quick: Quick<'_>, bytes: &[u8]) -> Result<(), ImapError> {
        let data = match quick {
            Quick::Continuation => return self.on_continuation(bytes),
            Quick::TaggedOk { tag, text } => {
                return self.on_tagged(tag, StatusKind::Ok, None, text, bytes);
            }
            Quick::Exists(n) => Data::Exists(n),
            Quick::Recent(n) => Data::Recent(n),
            Quick::Expunge(n) => Data::Expunge(n),
        };
        self.count_collected(bytes)?;
        self.on_data(data, None);
        Ok(())
    }

    /// Applies a decoded response. `bytes`: the message as received;
    /// `body`: the bytes of its body literal, when it was decoded without
    /// them ([`ClientCore::decode_literal_apart`]).
    fn apply(
        &mut self,
        response: Response<'_>,
        bytes: &[u8],
        body: Option<&[u8]>,
    ) -> Result<(), ImapError> {
        match response {
            Response::CommandContinuationRequest(_) => self.on_continuation(bytes),
            Response::Data(data) => {
                self.count_collected(bytes)?;
                self.on_data(data, body);
                Ok(())
            }
            Response::Status(Status::Untagged(body)) => {
                self.on_code(body.code.as_ref());
                Ok(())
            }
            Response::Status(Status::Bye(bye)) => {
                self.bye = Some(bye.text.to_string());
                let logging_out = self
                    .in_flight
                    .as_ref()
                    .is_some_and(|f| f.request_kind == RequestKind::Logout);
                if logging_out {
                    // Expected: the tagged OK to LOGOUT follows.
                    Ok(())
                } else {
                    Err(self.closed_error())
                }
            }
            Response::Status(Status::Tagged(tagged)) => {
                let body = &tagged.body;
                self.on_tagged(
                    tagged.tag.inner(),
                    body.kind,
                    body.code.as_ref(),
                    body.text.inner(),
                    bytes,
                )
            }
        }
    }

    /// Counts untagged data against the command in flight's collection
    /// limits (IDLE collects nothing and is not counted: its updates are
    /// handed out, and kept only up to a small number, as they arrive).
    fn count_collected(&mut self, bytes: &[u8]) -> Result<(), ImapError> {
        let limits = self.limits;
        let Some(flight) = self.in_flight.as_mut() else {
            return Ok(());
        };
        if flight.idle != IdlePhase::NotIdle {
            return Ok(());
        }
        flight.collected_bytes = flight.collected_bytes.saturating_add(bytes.len() as u64);
        flight.collected_responses += 1;
        if flight.collected_bytes > limits.max_collected_bytes
            || flight.collected_responses > limits.max_collected_responses
        {
            return Err(ImapError::malformed(
                "the answer to one command exceeded the client's limit (Limits::max_collected_bytes \
                 or max_collected_responses): a server sending endless untagged data",
                bytes,
            ));
        }
        Ok(())
    }

    fn on_greeting(&mut self, greeting: Greeting<'_>) -> Result<(), ImapError> {
        if let Some(Code::Capability(caps)) = &greeting.code {
            self.set_capabilities(caps);
        }
        match greeting.kind {
            GreetingKind::Bye => {
                self.bye = Some(greeting.text.to_string());
                Err(self.closed_error())
            }
            kind => {
                self.phase = Phase::Ready;
                self.events.push_back(Event::Greeting {
                    preauth: kind == GreetingKind::PreAuth,
                });
                Ok(())
            }
        }
    }

    fn on_continuation(&mut self, bytes: &[u8]) -> Result<(), ImapError> {
        let Some(flight) = self.in_flight.as_mut() else {
            return Err(ImapError::malformed(
                "continuation request with no command",
                bytes,
            ));
        };
        if flight.outgoing.front() == Some(&Outgoing::AwaitContinuation) {
            flight.outgoing.pop_front();
            return Ok(());
        }
        if flight.idle == IdlePhase::Requested {
            if flight.done_requested {
                flight.idle = IdlePhase::Done;
                flight
                    .outgoing
                    .push_back(Outgoing::Bytes(b"DONE\r\n".to_vec()));
            } else {
                flight.idle = IdlePhase::Idling;
            }
            self.events.push_back(Event::IdleAccepted);
            return Ok(());
        }
        Err(ImapError::malformed(
            "unexpected continuation request",
            bytes,
        ))
    }

    /// A tagged completion: its tag, its kind, its response code and its text.
    fn on_tagged(
        &mut self,
        tag: &str,
        kind: StatusKind,
        code: Option<&Code<'_>>,
        text: &str,
        bytes: &[u8],
    ) -> Result<(), ImapError> {
        let Some(flight) = self.in_flight.take_if(|f| f.tag == tag) else {
            return Err(ImapError::malformed(
                "tagged completion for an unknown tag",
                bytes,
            ));
        };
        if kind != StatusKind::Ok {
            if flight.request_kind == RequestKind::Select {
                self.mailbox = None;
            }
            self.events.push_back(Event::Rejected(Rejection {
                command: flight.command,
                refusal: if kind == StatusKind::No {
                    Refusal::No
                } else {
                    Refusal::Bad
                },
                text: text.to_owned(),
            }));
            self.start_queued();
            return Ok(());
        }
        let had_capabilities = matches!(code, Some(Code::Capability(_)));
        if flight.request_kind == RequestKind::Login && !had_capabilities {
            // What the server offers changes once logged in; ask again lazily.
            self.capabilities.forget();
        }
        let mut collected = flight.collected;
        match code {
            Some(Code::AppendUid { uid_validity, uid }) => {
                collected = Collected::Appended(Some(AppendUid {
                    uid_validity: uid_validity.get(),
                    uid: uid.get(),
                }));
            }
            Some(Code::ReadOnly) => {
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.read_only = true;
                }
            }
            Some(Code::ReadWrite) => {
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.read_only = false;
                }
            }
            Some(Code::CopyUid { .. }) => {
                if let Collected::Copied(slot) = &mut collected {
                    *slot = copy_uid(code);
                }
            }
            other => self.on_code(other),
        }
        let reply = match collected {
            Collected::Nothing => Reply::Done,
            Collected::List(entries) => Reply::List(entries),
            Collected::Mailbox => Reply::Mailbox(self.mailbox.clone().unwrap_or_default()),
            Collected::Status(info) => Reply::Status(info),
            Collected::Fetch(messages) => Reply::Fetch(messages),
            Collected::Numbers(numbers) => Reply::Numbers(numbers),
            Collected::Threads(threads) => Reply::Threads(threads),
            Collected::Appended(uid) => Reply::Appended(uid),
            Collected::Copied(uid) => Reply::Copied(uid),
            Collected::Expunged(seqs) => Reply::Expunged(seqs),
            Collected::Id(fields) => Reply::Id(fields),
            Collected::Namespace(namespaces) => Reply::Namespace(namespaces),
        };
        if flight.request_kind == RequestKind::StartTls {
            self.capabilities.forget();
        }
        self.events.push_back(Event::Completed {
            command: flight.command,
            reply,
        });
        self.start_queued();
        Ok(())
    }

    /// The command queued behind the one that completed becomes the one in flight.
    fn start_queued(&mut self) {
        if let Some(queued) = self.queued.pop_front() {
            self.activate(queued);
        }
    }

    /// Response codes that carry state, in untagged OK or in a tagged OK.
    fn on_code(&mut self, code: Option<&Code<'_>>) {
        let Some(code) = code else { return };
        match code {
            Code::Capability(caps) => self.set_capabilities(caps),
            Code::CopyUid { .. } => {
                // MOVE reports COPYUID in an untagged OK before the EXPUNGEs.
                if let Some(InFlight {
                    collected: Collected::Copied(slot),
                    ..
                }) = &mut self.in_flight
                {
                    *slot = copy_uid(Some(code));
                }
            }
            _ => {
                if let Some(mailbox) = &mut self.mailbox {
                    match code {
                        Code::UidValidity(n) => mailbox.uid_validity = Some(n.get()),
                        Code::UidNext(n) => mailbox.uid_next = Some(n.get()),
                        Code::Unseen(n) => mailbox.first_unseen = Some(n.get()),
                        Code::PermanentFlags(flags) => {
                            mailbox.permanent_flags = convert::permanent_flags(flags);
                        }
                        Code::ReadOnly => mailbox.read_only = true,
                        _ => {}
                    }
                }
            }
        }
    }

    fn set_capabilities(&mut self, caps: &Vec1<Capability<'_>>) {
        self.capabilities = Capabilities::from_names(caps.as_ref().iter().map(|c| c.to_string()));
    }

    /// Whether mailbox changes are news to report, rather than the answer to
    /// the SELECT in flight.
    fn reports_updates(&self) -> bool {
        !self
            .in_flight
            .as_ref()
            .is_some_and(|f| f.request_kind == RequestKind::Select)
    }

    fn on_data(&mut self, data: Data<'_>, body: Option<&[u8]>) {
        let collected = self.in_flight.as_mut().map(|f| &mut f.collected);
        match data {
            Data::Capability(caps) => self.set_capabilities(&caps),
            Data::List {
                items,
                delimiter,
                mailbox,
            } => {
                if let Some(Collected::List(entries)) = collected {
                    entries.push(ListEntry {
                        name: convert::mailbox_name(&mailbox),
                        delimiter: delimiter.map(|d| d.inner()),
                        attributes: items.iter().map(ToString::to_string).collect(),
                    });
                }
            }
            Data::Status { mailbox, items } => {
                if let Some(Collected::Status(info)) = collected {
                    info.mailbox = convert::mailbox_name(&mailbox);
                    for item in items.iter() {
                        match item {
                            StatusDataItem::Messages(n) => info.messages = Some(*n),
                            StatusDataItem::Recent(n) => info.recent = Some(*n),
                            StatusDataItem::UidNext(n) => info.uid_next = Some(n.get()),
                            StatusDataItem::UidValidity(n) => info.uid_validity = Some(n.get()),
                            StatusDataItem::Unseen(n) => info.unseen = Some(*n),
                            _ => {}
                        }
                    }
                }
            }
            Data::Search(numbers) | Data::Sort(numbers) => {
                if let Some(Collected::Numbers(out)) = collected {
                    out.extend(numbers.iter().map(|n| n.get()));
                }
            }
            Data::Thread(threads) => {
                if let Some(Collected::Threads(out)) = collected {
                    out.extend(convert::threads(&threads));
                }
            }
            Data::Id { parameters } => {
                if let Some(Collected::Id(out)) = collected {
                    for (key, value) in parameters.unwrap_or_default() {
                        out.push((convert::lossy(key.as_ref()), convert::nstring(&value)));
                    }
                }
            }
            Data::Namespace {
                personal,
                other,
                shared,
            } => {
                if let Some(Collected::Namespace(out)) = collected {
                    *out = Namespaces {
                        personal: convert::namespaces(&personal),
                        other: convert::namespaces(&other),
                        shared: convert::namespaces(&shared),
                    };
                }
            }
            Data::Flags(flags) => {
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.flags = flags.iter().map(ToString::to_string).collect();
                }
            }
            Data::Exists(n) => {
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.exists = n;
                }
                self.update(MailboxUpdate::Exists(n));
            }
            Data::Recent(n) => {
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.recent = n;
                }
                self.update(MailboxUpdate::Recent(n));
            }
            Data::Expunge(seq) => {
                if let Some(Collected::Expunged(out)) = collected {
                    out.push(seq.get());
                }
                if let Some(mailbox) = &mut self.mailbox {
                    mailbox.exists = mailbox.exists.saturating_sub(1);
                }
                self.update(MailboxUpdate::Expunge(seq.get()));
            }
            Data::Fetch { seq, items } => self.on_fetch(seq.get(), items, body),
            _ => {}
        }
    }

    fn update(&mut self, update: MailboxUpdate) {
        if self.reports_updates() {
            self.events.push_back(Event::Update(update));
        }
    }

    /// `body`: the bytes of the body literal left out of `items`, if one was.
    fn on_fetch(&mut self, seq: u32, items: Vec1<MessageDataItem<'_>>, body: Option<&[u8]>) {
        self.on_fetched(fetched_message(seq, items, body));
    }

    /// A message of a FETCH response: collected by the FETCH in flight, or,
    /// outside a FETCH, its flags reported as an update.
    fn on_fetched(&mut self, message: FetchedMessage) {
        let is_fetch = self
            .in_flight
            .as_ref()
            .is_some_and(|f| f.request_kind == RequestKind::Fetch);
        if !is_fetch && let Some(flags) = &message.flags {
            self.update(MailboxUpdate::Flags {
                seq: message.seq,
                uid: message.uid,
                flags: flags.clone(),
            });
        }
        if let Some(InFlight {
            collected: Collected::Fetch(messages),
            ..
        }) = &mut self.in_flight
        {
            messages.push(message);
        }
    }
}

/// A FETCH response's items as this crate's message. `body`: the bytes of
/// the body literal left out of `items`, if one was.
pub(crate) fn fetched_message(
    seq: u32,
    items: Vec1<MessageDataItem<'_>>,
    mut body: Option<&[u8]>,
) -> FetchedMessage {
    let mut message = FetchedMessage {
        seq,
        ..FetchedMessage::default()
    };
    for item in items.into_inner() {
        match item {
            MessageDataItem::Uid(uid) => message.uid = Some(uid.get()),
            MessageDataItem::Flags(flags) => message.flags = Some(convert::fetched_flags(&flags)),
            MessageDataItem::Envelope(envelope) => {
                message.envelope = Some(convert::envelope(&envelope));
            }
            MessageDataItem::Rfc822Size(size) => message.size = Some(size),
            MessageDataItem::InternalDate(date) => {
                message.internal_date = Some(convert::date(&date));
            }
            MessageDataItem::BodyStructure(structure) | MessageDataItem::Body(structure) => {
                message.body_parts = Some(convert::body_parts(&structure));
            }
            MessageDataItem::BodyExt { section, data, .. } => {
                let bytes = section_bytes(data, &mut body);
                message.sections.push((convert::section(&section), bytes));
            }
            MessageDataItem::Rfc822(data) => {
                let bytes = section_bytes(data, &mut body);
                message
                    .sections
                    .push((crate::types::BodySection::Full, bytes));
            }
            _ => {}
        }
    }
    message
}

/// Whether `response` is a FETCH whose body section (`BODY[...]` or
/// `RFC822`) is a literal: in a message rebuilt with its only literal
/// emptied, that literal is the one left out.
fn holds_body_literal(response: &Response<'_>) -> bool {
    let Response::Data(Data::Fetch { items, .. }) = response else {
        return false;
    };
    items.as_ref().iter().any(|item| {
        matches!(
            item,
            MessageDataItem::BodyExt {
                data: NString(Some(IString::Literal(_))),
                ..
            } | MessageDataItem::Rfc822(NString(Some(IString::Literal(_))))
        )
    })
}

/// A fetched section's bytes: those of the literal left out of the decoding
/// (`left_out`, taken once) when the section is that literal, else its own.
fn section_bytes(data: NString<'_>, left_out: &mut Option<&[u8]>) -> Vec<u8> {
    match data.0 {
        Some(IString::Literal(_)) if left_out.is_some() => {
            left_out.take().map(<[u8]>::to_vec).unwrap_or_default()
        }
        other => NString(other)
            .into_option()
            .map(|b| b.into_owned())
            .unwrap_or_default(),
    }
}

/// Moves the bytes at the front of `outgoing` into `out`, up to the first
/// wait for a continuation request.
fn take_bytes(outgoing: &mut VecDeque<Outgoing>, out: &mut Option<Vec<u8>>) {
    while let Some(Outgoing::Bytes(_)) = outgoing.front() {
        if let Some(Outgoing::Bytes(bytes)) = outgoing.pop_front() {
            match out {
                Some(out) => out.extend_from_slice(&bytes),
                None => *out = Some(bytes),
            }
        }
    }
}

impl ProtocolCore for ClientCore {
    type Event = Event;
    type Error = ImapError;

    fn enqueue_input(&mut self, bytes: &[u8]) {
        ClientCore::enqueue_input(self, bytes);
    }

    fn input_closed(&mut self) {
        ClientCore::input_closed(self);
    }

    fn next(&mut self) -> Result<Progress<Event>, ImapError> {
        ClientCore::next(self)
    }
}

fn copy_uid(code: Option<&Code<'_>>) -> Option<CopyUid> {
    match code {
        Some(Code::CopyUid {
            uid_validity,
            source,
            destination,
        }) => Some(CopyUid {
            uid_validity: uid_validity.get(),
            source: convert::uid_set(source),
            destination: convert::uid_set(destination),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use crate::types::FetchItem;

    fn idling() -> ClientCore {
        let mut core = ClientCore::new(Limits::default());
        core.enqueue_input(b"* OK [CAPABILITY IMAP4rev1 IDLE] hi\r\n");
        assert!(matches!(
            core.next(),
            Ok(Progress::Event(Event::Greeting { .. }))
        ));
        core.send(&Request::Idle).unwrap();
        assert_eq!(
            core.next().unwrap(),
            Progress::Output(b"A0001 IDLE\r\n".to_vec())
        );
        core.enqueue_input(b"+ idling\r\n");
        assert_eq!(core.next().unwrap(), Progress::Event(Event::IdleAccepted));
        core
    }

    fn uid_fetch(uid: bool) -> Request {
        Request::Fetch {
            set: "7".into(),
            items: vec![FetchItem::Uid],
            uid,
        }
    }

    #[test]
    fn issue_27_item_1_the_wire_is_recorded_in_order_when_asked() {
        let mut core = ClientCore::new(Limits::default());
        core.enqueue_input(b"* OK [CAPABILITY IMAP4rev1 IDLE] hi\r\n");
        assert!(core.take_wire().is_empty(), "recorded before asked");
        core.record_wire(true);
        assert!(matches!(
            core.next(),
            Ok(Progress::Event(Event::Greeting { .. }))
        ));
        core.send(&Request::Noop).unwrap();
        assert!(matches!(core.next(), Ok(Progress::Output(_))));
        core.enqueue_input(b"* 3 EXISTS\r\n");
        core.enqueue_input(b"A0001 OK done\r\n");
        while !matches!(core.next().unwrap(), Progress::NeedMoreInput) {}
        assert_eq!(
            core.take_wire(),
            vec![
                Wire::Sent(b"A0001 NOOP\r\n".to_vec()),
                Wire::Received(b"* 3 EXISTS\r\n".to_vec()),
                Wire::Received(b"A0001 OK done\r\n".to_vec()),
            ]
        );
        assert!(core.take_wire().is_empty());
        core.record_wire(false);
        core.enqueue_input(b"* 4 EXISTS\r\n");
        assert!(core.take_wire().is_empty());
        assert_eq!(
            format!("{:?}", Wire::Sent(b"secret".to_vec())),
            "Sent(6 bytes)"
        );
    }

    #[test]
    fn done_and_the_next_command_are_one_write() {
        let mut core = idling();
        assert_eq!(core.send_after_idle(&uid_fetch(true)).unwrap(), "A0002");
        assert_eq!(
            core.next().unwrap(),
            Progress::Output(b"DONE\r\nA0002 UID FETCH 7 UID\r\n".to_vec())
        );
        assert_eq!(core.next().unwrap(), Progress::NeedMoreInput);
        core.enqueue_input(b"A0001 OK idle done\r\n* 1 FETCH (UID 7)\r\nA0002 OK done\r\n");
        let completed = |core: &mut ClientCore| match core.next().unwrap() {
            Progress::Event(Event::Completed { command, .. }) => command,
            other => panic!("{other:?}"),
        };
        assert_eq!(completed(&mut core), "IDLE");
        assert_eq!(completed(&mut core), "UID FETCH");
        assert!(!core.is_busy());
    }

    #[test]
    fn idle_rides_behind_a_command() {
        let mut core = idling();
        // DONE, the command behind it, and a new IDLE: one write.
        core.send_after_idle(&uid_fetch(true)).unwrap();
        assert_eq!(core.queue_idle().unwrap(), "A0003");
        assert!(matches!(core.queue_idle(), Err(ImapError::Busy { .. })));
        assert_eq!(
            core.next().unwrap(),
            Progress::Output(b"DONE\r\nA0002 UID FETCH 7 UID\r\nA0003 IDLE\r\n".to_vec())
        );
        core.enqueue_input(b"A0001 OK idle done\r\nA0002 OK done\r\n+ idling\r\n");
        assert!(matches!(
            core.next().unwrap(),
            Progress::Event(Event::Completed {
                command: "IDLE",
                ..
            })
        ));
        assert!(matches!(
            core.next().unwrap(),
            Progress::Event(Event::Completed {
                command: "UID FETCH",
                ..
            })
        ));
        assert!(core.is_idle_requested());
        assert_eq!(core.next().unwrap(), Progress::Event(Event::IdleAccepted));
        assert!(core.is_idling());
    }

    #[test]
    fn sequence_numbers_do_not_follow_done() {
        let mut core = idling();
        let refused = core.send_after_idle(&uid_fetch(false));
        assert!(matches!(refused, Err(ImapError::Busy { command: "FETCH" })));
        // Nothing was queued, and IDLE goes on until DONE.
        assert!(core.is_idling());
        assert_eq!(core.next().unwrap(), Progress::NeedMoreInput);
    }

    #[test]
    fn a_select_behind_done_leaves_the_mailbox_alone_until_idle_ends() {
        let mut core = idling();
        core.send(&Request::Noop).unwrap_err();
        core.send_after_idle(&Request::Select("Other".into()))
            .unwrap();
        assert!(matches!(core.next().unwrap(), Progress::Output(_)));
        assert!(core.mailbox().is_none(), "selected before IDLE ended");
        core.enqueue_input(b"A0001 OK idle done\r\n");
        assert!(matches!(
            core.next().unwrap(),
            Progress::Event(Event::Completed {
                command: "IDLE",
                ..
            })
        ));
        assert_eq!(core.mailbox().map(|m| m.name.as_str()), Some("Other"));
    }
}
