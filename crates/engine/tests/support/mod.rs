//! A fake mail system in the test's own process: scripted IMAP and SMTP
//! servers over `tokio::io::duplex` streams, sharing one store of
//! mailboxes, so that a whole run can be driven on tokio's paused clock.
//!
//! They speak just enough of each protocol for the engine's users and its
//! reconciliation, and have knobs for the faults the tests need: refused
//! connections and logins, slow or hanging commands, a mail queue that
//! delivers when the test says (or never), a server that never greets, one
//! that never answers DONE, one that answers a FETCH with endless literals,
//! and test hooks that make a connection attempt panic (the engine's own
//! code has no such hook).

#![allow(dead_code, reason = "each test uses some of the knobs")]

pub(crate) mod imap;
pub(crate) mod smtp;

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use peakhour_engine::{
    Connector, Credentials, Endpoint, Event, Observer, ReconcileProgress, RunClock, RunSettings,
    SelfSample, Target,
};
use peakhour_imap::{ImapConnection, ImapError, Limits};
use peakhour_net::{Secret, Timed, TlsSettings, TransportError};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};
use peakhour_workload::{Overrides, Plan, Profile};
use tokio::io::DuplexStream;
use tokio::sync::watch;
use tokio::time::Instant;

/// Every user's password on the fake servers.
pub(crate) const PASSWORD: &str = "secret";

/// One message in a folder.
#[derive(Debug, Clone)]
pub(crate) struct StoredMessage {
    pub(crate) uid: u32,
    pub(crate) seen: bool,
    pub(crate) message_id: String,
    pub(crate) run_id: Option<String>,
}

/// One user's folders.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    pub(crate) folders: BTreeMap<String, Vec<StoredMessage>>,
    next_uid: HashMap<String, u32>,
}

impl Mailbox {
    fn new() -> Self {
        let mut mailbox = Mailbox::default();
        mailbox.folders.insert("INBOX".into(), Vec::new());
        mailbox
    }

    pub(crate) fn folder(&self, name: &str) -> Option<&Vec<StoredMessage>> {
        self.folders.get(&canonical(name))
    }

    pub(crate) fn add(&mut self, folder: &str, mut message: StoredMessage) -> u32 {
        let folder = canonical(folder);
        let next = self.next_uid.entry(folder.clone()).or_insert(1);
        message.uid = *next;
        *next += 1;
        let uid = message.uid;
        self.folders.entry(folder).or_default().push(message);
        uid
    }
}

/// INBOX is case-insensitive; other names are kept as they are.
pub(crate) fn canonical(name: &str) -> String {
    if name.eq_ignore_ascii_case("INBOX") {
        "INBOX".into()
    } else {
        name.to_owned()
    }
}

/// When the mail queue delivers the `n`th accepted message (0-based),
/// accepted at `accepted`; `None` keeps it forever.
pub(crate) type DeliveryPlan = Box<dyn Fn(usize, Instant) -> Option<Instant> + Send + Sync>;

/// How long the IMAP server waits before answering a command, by its name
/// (`SELECT`, `UID SEARCH` ...) and the user's login.
pub(crate) type CommandDelay = Box<dyn Fn(&str, &str) -> Duration + Send + Sync>;

/// What the servers hold and how they misbehave.
pub(crate) struct Store {
    pub(crate) mailboxes: HashMap<String, Mailbox>,
    /// Messages accepted over SMTP so far.
    pub(crate) accepted: usize,
    /// (when, login, command) of every IMAP command, for assertions.
    pub(crate) log: Vec<(Instant, String, String)>,
    /// When each IMAP connection was asked for.
    pub(crate) imap_connects: Vec<Instant>,
    /// This many IMAP connections are refused before any is accepted.
    pub(crate) refuse_imap_connects: usize,
    /// LOGIN fails for this user until then.
    pub(crate) refuse_login_until: HashMap<String, Instant>,
    /// `UID FETCH n:*` answers nothing this many times (a server that
    /// announces a message before it can be fetched by UID).
    pub(crate) hide_from_uid_fetch: usize,
    pub(crate) delivery: DeliveryPlan,
    /// The folder the mail queue delivers into (a server-side filter).
    pub(crate) delivery_folder: String,
    pub(crate) delay: CommandDelay,
    /// IMAP connections are accepted and never greeted.
    pub(crate) silent_imap: bool,
    /// DONE ends no IDLE: the server goes quiet instead.
    pub(crate) stall_done: bool,
    /// FETCH is answered with `* n FETCH (... BODY[] {1024} ...)` forever.
    pub(crate) endless_fetch: bool,
    /// The most bytes one endless FETCH got through before the client hung up.
    pub(crate) endless_bytes_max: u64,
    /// The IMAP client's limits, as the connector sets them.
    pub(crate) imap_limits: Limits,
    /// Test hook: the first SMTP connection asked for at or after then panics.
    pub(crate) panic_smtp_connect_at: Option<Instant>,
    /// Test hook: every IMAP connection asked for at or after then panics.
    pub(crate) panic_imap_connects_from: Option<Instant>,
    /// Every other RCPT TO is refused (550), counting from the first.
    pub(crate) refuse_every_other_rcpt: bool,
    /// RCPT TO commands seen so far.
    pub(crate) rcpts: usize,
    /// IMAP commands (`SELECT`, `UID MOVE`) answered `NO` with this text.
    pub(crate) refuse_imap: Vec<(&'static str, &'static str)>,
}

/// The fake mail system: a store, and a connector that opens in-memory
/// connections to its IMAP and SMTP servers.
#[derive(Clone)]
pub(crate) struct FakeMail {
    store: Arc<Mutex<Store>>,
    /// Bumped on every delivery, so idling sessions look again.
    changes: Arc<watch::Sender<u64>>,
}

impl FakeMail {
    /// Mailboxes for `users` (addresses); mail is delivered at once, commands
    /// are answered at once.
    pub(crate) fn new(users: impl IntoIterator<Item = String>) -> Self {
        let mailboxes = users
            .into_iter()
            .map(|address| (address, Mailbox::new()))
            .collect();
        let store = Store {
            mailboxes,
            accepted: 0,
            log: Vec::new(),
            imap_connects: Vec::new(),
            refuse_imap_connects: 0,
            refuse_login_until: HashMap::new(),
            hide_from_uid_fetch: 0,
            delivery: Box::new(|_, accepted| Some(accepted)),
            delivery_folder: "INBOX".into(),
            delay: Box::new(|_, _| Duration::ZERO),
            silent_imap: false,
            stall_done: false,
            endless_fetch: false,
            endless_bytes_max: 0,
            imap_limits: Limits::default(),
            panic_smtp_connect_at: None,
            panic_imap_connects_from: None,
            refuse_every_other_rcpt: false,
            refuse_imap: Vec::new(),
            rcpts: 0,
        };
        FakeMail {
            store: Arc::new(Mutex::new(store)),
            changes: Arc::new(watch::channel(0).0),
        }
    }

    /// The store, to set knobs or look at what happened.
    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        self.store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Times at which `command` was received, from any session.
    pub(crate) fn command_times(&self, command: &str) -> Vec<Instant> {
        self.store()
            .log
            .iter()
            .filter(|(_, _, c)| c == command)
            .map(|(at, _, _)| *at)
            .collect()
    }

    /// Puts a message into `address`'s delivery folder now and wakes idling sessions.
    pub(crate) fn deliver_now(&self, address: &str, message_id: &str, run_id: Option<&str>) {
        let mut store = self.store();
        let folder = store.delivery_folder.clone();
        if let Some(mailbox) = store.mailboxes.get_mut(address) {
            mailbox.add(
                &folder,
                StoredMessage {
                    uid: 0,
                    seen: false,
                    message_id: message_id.to_owned(),
                    run_id: run_id.map(str::to_owned),
                },
            );
        }
        drop(store);
        self.changes.send_modify(|n| *n += 1);
    }

    /// A message accepted over SMTP: into the queue, delivered when the
    /// delivery plan says.
    pub(crate) fn accept(&self, recipients: Vec<String>, message: &[u8]) {
        let message_id = header(message, "Message-ID").unwrap_or_default();
        let run_id = header(message, "X-Peakhour-Run");
        let deliver_at = {
            let mut store = self.store();
            let n = store.accepted;
            store.accepted += 1;
            (store.delivery)(n, Instant::now())
        };
        let Some(at) = deliver_at else { return };
        let mail = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            for recipient in recipients {
                mail.deliver_now(&recipient, &message_id, run_id.as_deref());
            }
        });
    }

    /// How long to wait before answering `command` of `login`.
    pub(crate) fn delay(&self, command: &str, login: &str) -> Duration {
        (self.store().delay)(command, login)
    }
}

/// Whether a one-shot hook set for `at` fires now (and disarms it).
fn take_hook(hook: &mut Option<Instant>) -> bool {
    if hook.is_some_and(|at| Instant::now() >= at) {
        *hook = None;
        return true;
    }
    false
}

fn header(message: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(message);
    let head = text.split("\r\n\r\n").next()?;
    head.split("\r\n").find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

impl Connector for FakeMail {
    type Stream = DuplexStream;

    async fn connect_imap(
        &self,
        _endpoint: &Endpoint,
        _tls: &Arc<rustls::ClientConfig>,
        _timeout: Duration,
    ) -> Result<Timed<ImapConnection<DuplexStream>>, ImapError> {
        let (refused, silent, limits) = {
            let mut store = self.store();
            store.imap_connects.push(Instant::now());
            let refused = store.refuse_imap_connects > 0;
            store.refuse_imap_connects = store.refuse_imap_connects.saturating_sub(1);
            if store
                .panic_imap_connects_from
                .is_some_and(|from| Instant::now() >= from)
            {
                drop(store);
                panic!("test hook: an IMAP connection attempt panics");
            }
            (refused, store.silent_imap, store.imap_limits)
        };
        if refused {
            return Err(ImapError::Transport(TransportError::Connect {
                addr: "fake:143".into(),
                source: io::Error::from(io::ErrorKind::ConnectionRefused),
            }));
        }
        let (client, server) = tokio::io::duplex(64 * 1024);
        if silent {
            // Accepted, never greeted: held open until the client hangs up.
            tokio::spawn(async move {
                let mut server = server;
                let _ = tokio::io::AsyncReadExt::read(&mut server, &mut [0; 64]).await;
            });
        } else {
            tokio::spawn(imap::serve(self.clone(), server));
        }
        // No deadline here on purpose: the engine must not trust a
        // connector to bound the greeting.
        ImapConnection::from_stream(client, limits).await
    }

    async fn starttls_imap(
        &self,
        _imap: &mut ImapConnection<DuplexStream>,
        _endpoint: &Endpoint,
        _tls: &Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, ImapError> {
        Err(ImapError::NotOffered("STARTTLS"))
    }

    async fn connect_smtp(
        &self,
        _endpoint: &Endpoint,
        flavor: Flavor,
        _tls: &Arc<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Timed<SmtpConnection<DuplexStream>>, SmtpError> {
        if take_hook(&mut self.store().panic_smtp_connect_at) {
            panic!("test hook: an SMTP connection attempt panics");
        }
        let (client, server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(smtp::serve(self.clone(), server));
        SmtpConnection::from_stream(client, flavor, timeout).await
    }

    async fn starttls_smtp(
        &self,
        _smtp: &mut SmtpConnection<DuplexStream>,
        _endpoint: &Endpoint,
        _tls: &Arc<rustls::ClientConfig>,
    ) -> Result<Timed<()>, SmtpError> {
        unreachable!("the fake target's endpoints ask for no STARTTLS")
    }
}

/// A plan from a small profile: `users` users of `bench.test`, a day of
/// 8 hours at speed 480 (one simulated day is a real minute), and the
/// actions given as TOML tables (`[actions.check_inbox]\nper_day = 60`).
pub(crate) fn plan(users: u32, actions: &str) -> Arc<Plan> {
    let source = format!(
        r#"
name = "fake"
description = "a test profile"
day = "8h"
speed = 480.0
[users]
count = {users}
name = "user{{n}}"
first = 1
domain = "bench.test"
[recipients]
average = 1
spread = "fixed"
list_fraction = 0
[lists]
per_users = 0
{actions}
[[mix]]
label = "tiny"
weight = 1
body = "1KB"
"#
    );
    let profile = Profile::parse("fake.toml", &source).expect("the test profile parses");
    Arc::new(Plan::resolve(&profile, &Overrides::default()).expect("the test plan resolves"))
}

/// The fake system's mailboxes for every user of `plan`.
pub(crate) fn fake_mail(plan: &Plan) -> FakeMail {
    FakeMail::new((0..plan.users()).map(|u| plan.address(u)))
}

/// A target whose endpoints the fake connector ignores; plain, one shared
/// password.
pub(crate) fn target() -> Arc<Target> {
    let tls = TlsSettings {
        verify: false,
        ..TlsSettings::default()
    }
    .client_config()
    .expect("a TLS config");
    Arc::new(Target {
        smtp: Endpoint::parse("smtp://fake:25", &["smtp"]).expect("smtp"),
        imap: Endpoint::parse("imap://fake:143", &["imap"]).expect("imap"),
        lmtp: None,
        jmap: None,
        caldav: None,
        pop3: None,
        tls,
        credentials: Credentials::Shared(Secret::new(PASSWORD.into())),
        options: peakhour_engine::ServerOptions::default(),
    })
}

/// A run shaped as given, with 10 s intervals and 30 s timeouts.
pub(crate) fn settings(ramp_up: u64, duration: u64, drain: u64) -> RunSettings {
    RunSettings {
        run_id: "fake-run".into(),
        ramp_up: Duration::from_secs(ramp_up),
        duration: Duration::from_secs(duration),
        drain: Duration::from_secs(drain),
        action_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(10),
        client_name: "client.peakhour.test".into(),
        interval: Duration::from_secs(10),
        qos_p95_ms: None,
        shard: peakhour_engine::Shard::whole(),
        start_at: None,
        protocol: peakhour_engine::MailProtocol::Imap,
        check_state: None,
    }
}

/// Keeps what the engine showed its observer, with the time it was shown.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) events: Vec<(Instant, Event)>,
    pub(crate) progress: Vec<(Instant, ReconcileProgress)>,
}

impl Seen {
    pub(crate) fn logged_on(&self, change: i32) -> Vec<Instant> {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, Event::LoggedOn(c) if *c == change))
            .map(|(at, _)| *at)
            .collect()
    }

    pub(crate) fn delivered(&self) -> Vec<Instant> {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Delivered(_)))
            .map(|(at, _)| *at)
            .collect()
    }
}

impl Observer for Seen {
    fn event(&mut self, _clock: &RunClock, at: Instant, event: &Event) {
        self.events.push((at, event.clone()));
    }

    fn lag(&mut self, _clock: &RunClock, _at: Instant, _lag: Duration) {}

    fn tick(&mut self, _clock: &RunClock, _at: Instant, _sample: SelfSample) {}

    fn reconciling(&mut self, progress: ReconcileProgress) {
        self.progress.push((Instant::now(), progress));
    }
}
