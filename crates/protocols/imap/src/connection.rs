//! The thin tokio driver: the shared [`Pump`] writes what the core asks and
//! reads until the core has an answer; this module times each command and
//! says what the events mean. All protocol decisions stay in the core.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use peakhour_net::{
    MAX_READ, Progress, Pump, PumpError, Secret, Security, Stopwatch, Timed, Transport,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::core::{ClientCore, Event, Reply};
use crate::error::ImapError;
use crate::framer::Limits;
use crate::request::Request;
use crate::types::{
    AppendUid, Capabilities, CopyUid, FetchItem, FetchedMessage, ListEntry, MailboxInfo,
    MailboxState, MailboxUpdate, Namespaces, SearchKey, SortCriterion, StatusInfo, StatusItem,
    StoreMode, ThreadAlgorithm, ThreadNode,
};

/// Updates kept for the next `noop`/`idle_wait` when nobody collects them;
/// the mailbox state stays exact regardless.
const MAX_PENDING_UPDATES: usize = 256;

/// What `idle_wait` returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idle {
    /// The server reported changes (new mail, expunges, flag changes).
    Updates(Vec<MailboxUpdate>),
    /// The time given ran out with nothing to report.
    TimedOut,
}

/// An IMAP connection: [`ClientCore`] over a byte stream (a
/// [`Transport`] in production, anything `AsyncRead + AsyncWrite` in tests).
///
/// Commands run one at a time and return [`Timed`] values measured from the
/// start of the write to the tagged completion parsed. Dropping a command
/// future before it finishes leaves the protocol mid-command: drop the
/// connection too. The one exception is [`ImapConnection::idle_wait`], which
/// is cancel-safe.
///
/// Commands wait as long as the server takes unless a deadline is set with
/// [`ImapConnection::set_command_timeout`]; after [`ImapError::Timeout`] the
/// connection is mid-command: drop it.
#[derive(Debug)]
pub struct ImapConnection<S = Transport> {
    pump: Pump<S, ClientCore>,
    pending_updates: Vec<MailboxUpdate>,
    command_timeout: Option<Duration>,
    /// The next command carries IDLE behind it ([`ImapConnection::idle_after_next_command`]).
    idle_behind: bool,
    /// When the IDLE in flight was written, until its `+` arrives.
    idle_sent_at: Option<Instant>,
    /// How long the last IDLE took from its write to the server's `+`.
    idle_start_time: Option<Duration>,
    /// How long the last IDLE ended by a command's DONE took to complete.
    idle_done_time: Option<Duration>,
}

impl ImapConnection<Transport> {
    /// Connects, reads the greeting and keeps the capabilities it lists.
    /// The time runs from the start of the connect to the greeting parsed.
    pub async fn connect(
        host: &str,
        port: u16,
        security: Security,
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> Result<Timed<ImapConnection>, ImapError> {
        Self::connect_from(None, host, port, security, tls, timeout).await
    }

    /// [`ImapConnection::connect`] from the local address `source` when given
    /// (see [`Transport::connect_from`]).
    pub async fn connect_from(
        source: Option<std::net::IpAddr>,
        host: &str,
        port: u16,
        security: Security,
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
    ) -> Result<Timed<ImapConnection>, ImapError> {
        let stopwatch = Stopwatch::start();
        let deadline = tokio::time::Instant::now() + timeout;
        let transport = Transport::connect_from(source, host, port, security, tls, timeout).await?;
        // The greeting gets what is left of the timeout, and a server that
        // never greets is named as such (issue 26: "CONNECT timed out"
        // blamed the TCP connect).
        let connection =
            Self::greet(transport, Limits::default(), Some((deadline, timeout))).await?;
        Ok(stopwatch.finish(connection.value))
    }

    /// STARTTLS, then the TLS handshake. Capabilities must be asked again
    /// afterwards; commands that need them do so by themselves.
    pub async fn starttls(
        &mut self,
        host: &str,
        config: Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, ImapError> {
        let stopwatch = Stopwatch::start();
        self.ensure_capabilities().await?;
        self.run(&Request::StartTls).await?;
        self.pump.core.starttls_completed()?;
        self.pump.stream.upgrade(host, config).await?;
        Ok(stopwatch.finish(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> ImapConnection<S> {
    /// Runs the client over an already connected stream and reads the greeting.
    pub async fn from_stream(stream: S, limits: Limits) -> Result<Timed<Self>, ImapError> {
        Self::greet(stream, limits, None).await
    }

    /// [`ImapConnection::from_stream`], waiting for the greeting until
    /// `deadline` (with the timeout it came from, for the error) if given.
    async fn greet(
        stream: S,
        limits: Limits,
        deadline: Option<(tokio::time::Instant, Duration)>,
    ) -> Result<Timed<Self>, ImapError> {
        let stopwatch = Stopwatch::start();
        let mut connection = Self {
            pump: Pump::new(stream, ClientCore::new(limits), MAX_READ),
            pending_updates: Vec::new(),
            command_timeout: None,
            idle_behind: false,
            idle_sent_at: None,
            idle_start_time: None,
            idle_done_time: None,
        };
        loop {
            let event = connection
                .pump
                .next_event(&stopwatch, deadline.map(|(at, _)| at))
                .await;
            let event = event
                .map_err(|e| pump_error(e, "waiting for the greeting", deadline.map(|(_, t)| t)))?;
            if let Event::Greeting { .. } = event {
                break;
            }
        }
        Ok(stopwatch.finish(connection))
    }

    /// Bounds every later command, from its first write to its completion
    /// (for IDLE: to the server's `+`, and DONE to the completion). `None`,
    /// the default, waits as long as the server takes.
    pub fn set_command_timeout(&mut self, timeout: Option<Duration>) {
        self.command_timeout = timeout;
    }

    /// What the server advertised most recently (see [`Capabilities::is_known`]).
    pub fn capabilities(&self) -> &Capabilities {
        self.pump.core.capabilities()
    }

    /// The selected mailbox as tracked from the server's updates.
    pub fn mailbox(&self) -> Option<&MailboxState> {
        self.pump.core.mailbox()
    }

    /// Starts or stops recording the connection's bytes in wire order
    /// ([`ClientCore::record_wire`]), for a state-check model of the session.
    pub fn record_wire(&mut self, on: bool) {
        self.pump.core.record_wire(on);
    }

    /// The bytes recorded since the last call ([`ClientCore::take_wire`]).
    pub fn take_wire(&mut self) -> Vec<crate::core::Wire> {
        self.pump.core.take_wire()
    }

    /// Runs any request and returns its reply; the typed methods below are
    /// built on it.
    ///
    /// A request made while idling ends IDLE first: DONE goes out in the
    /// same write as the request when it [`Request::can_follow_idle`] (the
    /// time returned then runs from that write and covers the end of IDLE
    /// too), else DONE alone, and the request once IDLE has completed.
    pub async fn run(&mut self, request: &Request) -> Result<Timed<Reply>, ImapError> {
        let after_idle = self.begin(request).await?;
        if std::mem::take(&mut self.idle_behind)
            && !matches!(request, Request::Idle | Request::Logout)
            && self.pump.core.queue_idle().is_ok()
        {
            self.idle_sent_at = Some(Instant::now());
        }
        let stopwatch = Stopwatch::start();
        let reply = self
            .drive(request.name(), false, after_idle, &stopwatch)
            .await;
        match reply? {
            Some(reply) => Ok(stopwatch.finish(reply)),
            None => Err(ImapError::malformed(
                "IDLE accepted outside idle_start",
                &[],
            )),
        }
    }

    /// CAPABILITY.
    pub async fn capability(&mut self) -> Result<Timed<Capabilities>, ImapError> {
        let timed = self.run(&Request::Capability).await?;
        Ok(timed.map(|_| self.pump.core.capabilities().clone()))
    }

    /// ID with the client's fields; returns the server's.
    pub async fn id(
        &mut self,
        fields: &[(&str, &str)],
    ) -> Result<Timed<Vec<(String, Option<String>)>>, ImapError> {
        self.ensure_capabilities().await?;
        let fields = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let timed = self.run(&Request::Id(fields)).await?;
        Ok(timed.map(|reply| match reply {
            Reply::Id(fields) => fields,
            _ => Vec::new(),
        }))
    }

    /// LOGIN.
    pub async fn login(
        &mut self,
        username: &str,
        password: &Secret<String>,
    ) -> Result<Timed<()>, ImapError> {
        let request = Request::Login {
            username: username.to_owned(),
            password: password.clone(),
        };
        Ok(self.run(&request).await?.map(drop))
    }

    /// AUTHENTICATE PLAIN (with SASL-IR when offered).
    pub async fn authenticate_plain(
        &mut self,
        username: &str,
        password: &Secret<String>,
    ) -> Result<Timed<()>, ImapError> {
        self.ensure_capabilities().await?;
        let request = Request::AuthenticatePlain {
            username: username.to_owned(),
            password: password.clone(),
        };
        Ok(self.run(&request).await?.map(drop))
    }

    /// LIST.
    pub async fn list(
        &mut self,
        reference: &str,
        pattern: &str,
    ) -> Result<Timed<Vec<ListEntry>>, ImapError> {
        let request = Request::List {
            reference: reference.to_owned(),
            pattern: pattern.to_owned(),
        };
        Ok(self.run(&request).await?.map(|reply| match reply {
            Reply::List(entries) => entries,
            _ => Vec::new(),
        }))
    }

    /// NAMESPACE (RFC 2342): the user's own, other users' and shared
    /// namespaces. Needs the NAMESPACE capability (checked before sending).
    pub async fn namespace(&mut self) -> Result<Timed<Namespaces>, ImapError> {
        self.ensure_capabilities().await?;
        Ok(self
            .run(&Request::Namespace)
            .await?
            .map(|reply| match reply {
                Reply::Namespace(namespaces) => namespaces,
                _ => Namespaces::default(),
            }))
    }

    /// CREATE.
    pub async fn create(&mut self, mailbox: &str) -> Result<Timed<()>, ImapError> {
        Ok(self
            .run(&Request::Create(mailbox.to_owned()))
            .await?
            .map(drop))
    }

    /// SELECT.
    pub async fn select(&mut self, mailbox: &str) -> Result<Timed<MailboxInfo>, ImapError> {
        Ok(self
            .run(&Request::Select(mailbox.to_owned()))
            .await?
            .map(mailbox_reply))
    }

    /// EXAMINE.
    pub async fn examine(&mut self, mailbox: &str) -> Result<Timed<MailboxInfo>, ImapError> {
        Ok(self
            .run(&Request::Examine(mailbox.to_owned()))
            .await?
            .map(mailbox_reply))
    }

    /// STATUS.
    pub async fn status(
        &mut self,
        mailbox: &str,
        items: &[StatusItem],
    ) -> Result<Timed<StatusInfo>, ImapError> {
        let request = Request::Status {
            mailbox: mailbox.to_owned(),
            items: items.to_vec(),
        };
        Ok(self.run(&request).await?.map(|reply| match reply {
            Reply::Status(info) => info,
            _ => StatusInfo::default(),
        }))
    }

    /// FETCH or UID FETCH.
    pub async fn fetch(
        &mut self,
        set: &str,
        items: &[FetchItem],
        uid: bool,
    ) -> Result<Timed<Vec<FetchedMessage>>, ImapError> {
        let request = Request::Fetch {
            set: set.to_owned(),
            items: items.to_vec(),
            uid,
        };
        Ok(self.run(&request).await?.map(fetch_reply))
    }

    /// STORE or UID STORE; returns the new flags unless `silent`.
    pub async fn store(
        &mut self,
        set: &str,
        mode: StoreMode,
        flags: &[&str],
        silent: bool,
        uid: bool,
    ) -> Result<Timed<Vec<FetchedMessage>>, ImapError> {
        let request = Request::Store {
            set: set.to_owned(),
            mode,
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
            silent,
            uid,
        };
        Ok(self.run(&request).await?.map(fetch_reply))
    }

    /// COPY or UID COPY.
    pub async fn copy(
        &mut self,
        set: &str,
        mailbox: &str,
        uid: bool,
    ) -> Result<Timed<Option<CopyUid>>, ImapError> {
        let request = Request::Copy {
            set: set.to_owned(),
            mailbox: mailbox.to_owned(),
            uid,
        };
        Ok(self.run(&request).await?.map(copy_reply))
    }

    /// MOVE (RFC 6851) when offered, else COPY + STORE +FLAGS \Deleted +
    /// (UID) EXPUNGE, timed as one action. See [`Request::move_messages`].
    pub async fn move_messages(
        &mut self,
        set: &str,
        mailbox: &str,
        uid: bool,
    ) -> Result<Timed<Option<CopyUid>>, ImapError> {
        let stopwatch = Stopwatch::start();
        self.ensure_capabilities().await?;
        let mut copied = None;
        // IDLE, if asked for, goes behind the last of the commands.
        let idle_behind = std::mem::take(&mut self.idle_behind);
        let requests = Request::move_messages(self.pump.core.capabilities(), set, mailbox, uid);
        let last = requests.len().saturating_sub(1);
        for (index, request) in requests.iter().enumerate() {
            self.idle_behind = idle_behind && index == last;
            if let Reply::Copied(uids) = self.run(request).await?.value {
                copied = uids;
            }
        }
        Ok(stopwatch.finish(copied))
    }

    /// EXPUNGE; returns the expunged sequence numbers.
    pub async fn expunge(&mut self) -> Result<Timed<Vec<u32>>, ImapError> {
        Ok(self.run(&Request::Expunge).await?.map(expunge_reply))
    }

    /// UID EXPUNGE (UIDPLUS).
    pub async fn uid_expunge(&mut self, uid_set: &str) -> Result<Timed<Vec<u32>>, ImapError> {
        self.ensure_capabilities().await?;
        Ok(self
            .run(&Request::UidExpunge(uid_set.to_owned()))
            .await?
            .map(expunge_reply))
    }

    /// APPEND, with LITERAL+ when offered; returns `[APPENDUID]` with UIDPLUS.
    pub async fn append(
        &mut self,
        mailbox: &str,
        flags: &[&str],
        internal_date: Option<SystemTime>,
        message: &[u8],
    ) -> Result<Timed<Option<AppendUid>>, ImapError> {
        self.ensure_capabilities().await?;
        let request = Request::Append {
            mailbox: mailbox.to_owned(),
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
            internal_date,
            message: message.to_vec(),
        };
        Ok(self.run(&request).await?.map(|reply| match reply {
            Reply::Appended(uid) => uid,
            _ => None,
        }))
    }

    /// APPEND of several messages in one command (MULTIAPPEND, RFC 3502):
    /// stored all or none, with one round trip under LITERAL+.
    /// [`ImapError::NotOffered`] when the server lacks MULTIAPPEND.
    pub async fn multi_append(
        &mut self,
        mailbox: &str,
        flags: &[&str],
        messages: Vec<Vec<u8>>,
    ) -> Result<Timed<()>, ImapError> {
        self.ensure_capabilities().await?;
        let request = Request::MultiAppend {
            mailbox: mailbox.to_owned(),
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
            messages,
        };
        Ok(self.run(&request).await?.map(drop))
    }

    /// SEARCH or UID SEARCH.
    pub async fn search(
        &mut self,
        criteria: &SearchKey,
        uid: bool,
    ) -> Result<Timed<Vec<u32>>, ImapError> {
        let request = Request::Search {
            criteria: criteria.clone(),
            uid,
        };
        Ok(self.run(&request).await?.map(numbers_reply))
    }

    /// SORT or UID SORT; [`ImapError::NotOffered`] without the SORT capability.
    pub async fn sort(
        &mut self,
        by: &[SortCriterion],
        criteria: &SearchKey,
        uid: bool,
    ) -> Result<Timed<Vec<u32>>, ImapError> {
        self.ensure_capabilities().await?;
        let request = Request::Sort {
            by: by.to_vec(),
            criteria: criteria.clone(),
            uid,
        };
        Ok(self.run(&request).await?.map(numbers_reply))
    }

    /// THREAD or UID THREAD; [`ImapError::NotOffered`] without `THREAD=algorithm`.
    pub async fn thread(
        &mut self,
        algorithm: ThreadAlgorithm,
        criteria: &SearchKey,
        uid: bool,
    ) -> Result<Timed<Vec<ThreadNode>>, ImapError> {
        self.ensure_capabilities().await?;
        let request = Request::Thread {
            algorithm,
            criteria: criteria.clone(),
            uid,
        };
        Ok(self.run(&request).await?.map(|reply| match reply {
            Reply::Threads(threads) => threads,
            _ => Vec::new(),
        }))
    }

    /// NOOP; returns the updates the server reported since the last collection.
    pub async fn noop(&mut self) -> Result<Timed<Vec<MailboxUpdate>>, ImapError> {
        let timed = self.run(&Request::Noop).await?;
        Ok(timed.map(|_| std::mem::take(&mut self.pending_updates)))
    }

    /// LOGOUT. The server's BYE before the OK is expected, not an error.
    pub async fn logout(mut self) -> Result<Timed<()>, ImapError> {
        let timed = self.run(&Request::Logout).await?;
        // The server closes next; a failed shutdown changes nothing we measure.
        let _ = self.pump.stream.shutdown().await;
        Ok(timed.map(drop))
    }

    /// Starts IDLE and waits for the server's `+`. Then call
    /// [`ImapConnection::idle_wait`] as often as needed. IDLE lasts until
    /// [`ImapConnection::idle_done`] or the next command, which ends it with
    /// DONE in the same write.
    ///
    /// When an IDLE is already on its way ([`ImapConnection::idle_after_next_command`])
    /// or still running, nothing is sent: this waits for its `+` if needed,
    /// and the time returned is that wait. [`ImapConnection::take_idle_start_time`]
    /// tells whether an IDLE was accepted, and how long after it was written.
    pub async fn idle_start(&mut self) -> Result<Timed<()>, ImapError> {
        let stopwatch = Stopwatch::start();
        if self.pump.core.is_idling() {
            return Ok(stopwatch.finish(()));
        }
        if self.pump.core.is_idle_requested() {
            return self.await_idle_accepted(&stopwatch).await;
        }
        self.ensure_capabilities().await?;
        let after_idle = self.begin(&Request::Idle).await?;
        self.idle_sent_at = Some(Instant::now());
        let stopwatch = Stopwatch::start();
        match self.drive("IDLE", true, after_idle, &stopwatch).await? {
            None => Ok(stopwatch.finish(())),
            // Completed before `+`: the server ended IDLE at once.
            Some(_) => Err(ImapError::malformed(
                "IDLE completed before it started",
                &[],
            )),
        }
    }

    /// Waits up to `max` for the server to report changes while idling.
    ///
    /// **Cancel-safe**: it can be a branch of `tokio::select!`. Its only await
    /// is a read into the connection's own buffer, and every update is stored
    /// in the connection before it is returned, so a cancelled wait loses
    /// nothing: the next `idle_wait`, `idle_done` or `noop` returns it, and
    /// [`ImapConnection::mailbox`] is always current.
    pub async fn idle_wait(&mut self, max: Duration) -> Result<Idle, ImapError> {
        // Not the pump's `next_event`: waiting for news is not a command.
        // Running out of time is the normal end, not an error, and every
        // update already here is returned before reading more.
        let deadline = Instant::now() + max;
        let clock = Stopwatch::start();
        loop {
            loop {
                match self.pump.core.next()? {
                    Progress::NeedMoreInput => break,
                    Progress::Event(event) => self.on_idle_event(event)?,
                    // Nothing is written while idling; DONE comes from idle_done.
                    Progress::Output(_) => {
                        return Err(ImapError::malformed("write requested while idling", &[]));
                    }
                }
            }
            if !self.pending_updates.is_empty() {
                return Ok(Idle::Updates(std::mem::take(&mut self.pending_updates)));
            }
            match tokio::time::timeout_at(deadline, self.pump.read_once(&clock)).await {
                Ok(read) => read.map_err(|e| pump_error(e, "IDLE", None))?,
                Err(_elapsed) => return Ok(Idle::TimedOut),
            }
        }
    }

    /// Ends IDLE with DONE and waits for the completion; returns the updates
    /// not yet collected. The time covers DONE to the tagged OK.
    ///
    /// Not needed before another command, which ends IDLE itself and saves a
    /// write and a round trip; but call it first when that command's
    /// arguments depend on the mailbox's state, since
    /// [`ImapConnection::mailbox`] may still miss updates the server sends as
    /// IDLE ends.
    pub async fn idle_done(&mut self) -> Result<Timed<Vec<MailboxUpdate>>, ImapError> {
        let stopwatch = Stopwatch::start();
        if self.pump.core.is_busy() {
            // Not busy: the server already ended IDLE by itself (seen in idle_wait).
            self.pump.core.idle_done();
            self.drive("IDLE", false, false, &stopwatch).await?;
        }
        Ok(stopwatch.finish(std::mem::take(&mut self.pending_updates)))
    }

    /// Sends IDLE behind the next command, in the same write, so that idling
    /// starts when that command completes without another write or round
    /// trip. Then [`ImapConnection::idle_start`] only waits for the `+`, if
    /// it has not arrived yet. Ignored for IDLE and LOGOUT, and without the
    /// IDLE capability.
    pub fn idle_after_next_command(&mut self) {
        self.idle_behind = true;
    }

    /// True from the moment an IDLE is written until it ends.
    pub fn idle_in_progress(&self) -> bool {
        self.pump.core.is_idling() || self.pump.core.is_idle_requested()
    }

    /// How long the last IDLE the server accepted took, from the write that
    /// carried it to the `+`. Taken once, so that every IDLE on the wire is
    /// counted once.
    pub fn take_idle_start_time(&mut self) -> Option<Duration> {
        self.idle_start_time.take()
    }

    /// How long the last IDLE that a command ended took, from the write that
    /// carried DONE to IDLE's tagged OK. Taken once, so that every DONE on
    /// the wire is counted once. (An explicit [`ImapConnection::idle_done`]
    /// returns its own time instead.)
    pub fn take_idle_done_time(&mut self) -> Option<Duration> {
        self.idle_done_time.take()
    }

    /// Hands `request` to the core. While idling, DONE goes first, in the
    /// same write when the request may follow it (true then).
    async fn begin(&mut self, request: &Request) -> Result<bool, ImapError> {
        if self.pump.core.is_idle_requested() {
            // DONE may only follow the `+`.
            self.await_idle_accepted(&Stopwatch::start()).await?;
        }
        if self.pump.core.is_idling() {
            if request.can_follow_idle() {
                self.pump.core.send_after_idle(request)?;
                return Ok(true);
            }
            let done = self.idle_done().await?;
            self.idle_done_time = Some(done.elapsed);
        }
        self.pump.core.send(request)?;
        Ok(false)
    }

    /// Reads until the server's `+` to the IDLE in flight.
    async fn await_idle_accepted(&mut self, stopwatch: &Stopwatch) -> Result<Timed<()>, ImapError> {
        match self.drive("IDLE", true, false, stopwatch).await? {
            None => Ok(stopwatch.finish(())),
            Some(_) => Err(ImapError::malformed(
                "IDLE completed before it started",
                &[],
            )),
        }
    }

    fn idle_accepted(&mut self) {
        if let Some(sent) = self.idle_sent_at.take() {
            self.idle_start_time = Some(sent.elapsed());
        }
    }

    fn on_idle_event(&mut self, event: Event) -> Result<(), ImapError> {
        match event {
            Event::Update(update) => self.keep_update(update),
            Event::Rejected(rejection) => return Err(rejected(rejection)),
            Event::IdleAccepted => self.idle_accepted(),
            Event::Greeting { .. } | Event::Completed { .. } => {}
        }
        Ok(())
    }

    /// Writes and reads until the command in flight completes (`Some`), or,
    /// with `until_idling`, until the server accepts IDLE (`None`), within the
    /// command timeout if one is set. `after_idle`: the command went out
    /// behind DONE, and IDLE's own completion comes first.
    async fn drive(
        &mut self,
        command: &'static str,
        until_idling: bool,
        mut after_idle: bool,
        stopwatch: &Stopwatch,
    ) -> Result<Option<Reply>, ImapError> {
        let deadline = self.command_timeout.map(|after| Instant::now() + after);
        loop {
            let event = self.pump.next_event(stopwatch, deadline).await;
            let event = event.map_err(|e| pump_error(e, command, self.command_timeout))?;
            if after_idle {
                // The IDLE the command followed ends first, OK or not: the
                // server takes the command either way.
                if let Event::Completed { .. } | Event::Rejected(_) = event {
                    after_idle = false;
                    self.idle_done_time = Some(stopwatch.elapsed());
                    continue;
                }
            }
            match event {
                Event::Completed { reply, .. } => return Ok(Some(reply)),
                Event::Rejected(rejection) => return Err(rejected(rejection)),
                Event::Update(update) => self.keep_update(update),
                Event::IdleAccepted => {
                    self.idle_accepted();
                    if until_idling {
                        return Ok(None);
                    }
                }
                Event::Greeting { .. } => {}
            }
        }
    }

    fn keep_update(&mut self, update: MailboxUpdate) {
        if self.pending_updates.len() < MAX_PENDING_UPDATES {
            self.pending_updates.push(update);
        }
    }

    async fn ensure_capabilities(&mut self) -> Result<(), ImapError> {
        if !self.pump.core.capabilities().is_known() {
            // An IDLE asked for goes behind the command the caller meant.
            let idle_behind = std::mem::take(&mut self.idle_behind);
            self.run(&Request::Capability).await?;
            self.idle_behind = idle_behind;
        }
        Ok(())
    }
}

/// What went wrong in the pump, as this crate's error. `after` is the
/// command timeout, the only deadline the pump is given.
fn pump_error(
    error: PumpError<ImapError>,
    during: &'static str,
    after: Option<Duration>,
) -> ImapError {
    match error {
        PumpError::Core(error) => error,
        PumpError::Transport(error) => ImapError::Transport(error),
        PumpError::DeadlineExceeded => ImapError::Timeout {
            during,
            after: after.unwrap_or_default(),
        },
        PumpError::Closed => ImapError::Closed { bye: None },
    }
}

fn rejected(rejection: crate::types::Rejection) -> ImapError {
    ImapError::Rejected {
        command: rejection.command,
        refusal: rejection.refusal,
        text: rejection.text,
    }
}

fn mailbox_reply(reply: Reply) -> MailboxInfo {
    match reply {
        Reply::Mailbox(info) => info,
        _ => MailboxInfo::default(),
    }
}

fn fetch_reply(reply: Reply) -> Vec<FetchedMessage> {
    match reply {
        Reply::Fetch(messages) => messages,
        _ => Vec::new(),
    }
}

fn copy_reply(reply: Reply) -> Option<CopyUid> {
    match reply {
        Reply::Copied(uids) => uids,
        _ => None,
    }
}

fn expunge_reply(reply: Reply) -> Vec<u32> {
    match reply {
        Reply::Expunged(seqs) => seqs,
        _ => Vec::new(),
    }
}

fn numbers_reply(reply: Reply) -> Vec<u32> {
    match reply {
        Reply::Numbers(numbers) => numbers,
        _ => Vec::new(),
    }
}
