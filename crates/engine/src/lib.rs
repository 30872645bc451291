//! # peakhour-engine
//!
//! The engine layer of peakhour: simulated users as tokio tasks with state,
//! the run's phases, timeouts, reconnects, cancellation, delivery tracking,
//! the generator's self-check, and the run's record.
//!
//! * One run core (`core`) for every load: one [`Observer`], one
//!   [`RunRecorder`], one loop over the tasks of a mail run ([`run`]) or a file
//!   run ([`files::run_files`]); it knows no protocol.
//! * One session per protocol (`sessions`: IMAP, SMTP, JMAP, POP3, CalDAV,
//!   files), each a `UserSession`, and one table routing an action to its
//!   protocol; a session knows no phase.
//! * A user ([`run`]) keeps one IMAP session for the day, as an online client
//!   does: it knows which messages its Inbox holds and which are unread, idles
//!   between actions so new mail is noticed when it arrives, and performs the
//!   actions its [`Schedule`](peakhour_workload::Schedule) says, on real
//!   messages.
//! * Every action is timed from its **intended** start (the schedule's time),
//!   not from when it happened to begin, so a server that falls behind is seen
//!   falling behind (coordinated omission); late starts are counted.
//! * Users never record anything themselves: they send [`Event`]s down a
//!   channel to one task, which records them with a [`RunRecorder`] (the
//!   analysis layer's interval and delivery recorders) and shows them to an
//!   [`Observer`] the caller plugs in ([`LiveLine`], drawn on the binary's
//!   status line, in `peakhour-app`). A run returns
//!   a [`RunResult`]: its [`RunRecord`](peakhour_analysis::RunRecord), with
//!   the metadata, and how it ended.
//! * Every submitted message is tracked by Message-ID until each recipient has
//!   seen it; after the drain, a header search in the mailbox of each
//!   recipient still waiting (and only those, [`SEARCH_TASKS`] in parallel)
//!   reconciles the rest: the Inbox first, then, only if copies are still
//!   missing, every other folder but Sent (a copy may have been filed or
//!   deleted before it was noticed). What is still missing is named as lost.
//! * Connections are opened by a [`Connector`]: [`NetConnector`] (TCP and
//!   TLS) in a real run, in-memory streams to fake servers in tests. All
//!   timing is on tokio's clock, so a whole run can be tested on a paused
//!   clock ([`run_with`]).
//! * Mail goes only to the run's [`Population`]: the users file's addresses
//!   or the profile's pattern. Every recipient is checked against it before
//!   the SMTP transaction starts, and one outside it stops the run.
//! * Every network wait has a deadline: connects, greetings, TLS handshakes
//!   and STARTTLS get the connect timeout, every IMAP and SMTP command the
//!   action timeout, each mailbox search of the reconciliation
//!   [`MAILBOX_SEARCH_LIMIT`] and the whole reconciliation
//!   [`RECONCILE_LIMIT`]. A user that cannot go on has its remaining actions
//!   counted `not-attempted`, and a task that panics is counted (`panic`).
//! * [`init`] brings mailboxes to a profile's starting state over IMAP
//!   APPEND or LMTP, and takes another way of filling them from its caller
//!   ([`init::init_with`]: `peakhour-app` clones a mailbox on the lab's disk).
//! * [`session_tasks`] runs the planner's atomic session tasks (a logon, a
//!   delivery, a search without an index, idle sessions held) at a steady rate.
//!
//! The engine takes resolved endpoints and plans: reading the lab, starting
//! the monitor and wording the status line belong to `peakhour-app`, the
//! layer above, so that this crate depends on neither the lab nor the monitor.
//! * [`limits`] says which limit of this machine (file descriptors,
//!   ephemeral ports per source address, memory) a run would hit first, and
//!   spreads users over loopback source addresses or refuses with shards.
//! * [`state_checks`] runs the state checks (`run --check-state`):
//!   a model beside every IMAP, JMAP and CalDAV session, checkpoints across
//!   the IMAP sessions of each account, their pauses kept out of every
//!   latency, the audit after a run over JMAP, and after the reconciliation
//!   each delivered copy compared with its submission.
//! * [`files`] runs file clients (NetBench's disk mix, dbench trace replay) against a
//!   directory or an SMB share.
#![deny(missing_docs)]

mod connector;
mod core;
mod delivery;
mod delivery_check;
mod distributed;
mod events;
pub mod files;
mod folders;
pub mod init;
pub mod limits;
mod live;
mod population;
mod profile_rates;
pub mod profiles;
mod reconcile;
mod recording;
mod run;
mod selfcheck;
pub mod session_tasks;
mod sessions;
pub mod state_checks;
mod target;
pub mod users_file;

pub use connector::{Connector, NetConnector};
pub use core::{
    BYTES_READ, BYTES_WRITTEN, Both, Observer, Phase, RunClock, RunRecorder, STOP_GRACE,
    SelfSample, UNMEASURED_OPERATIONS,
};
pub use delivery::{DeliveryTracker, LOST_LIST_CAP, Lost, LostReport, Noticed, bare_message_id};
pub use distributed::{
    MAX_START_AHEAD, MAX_START_BEHIND, StartAtError, StartNotice, parse_start_at, wait_for_start,
};
pub use events::{Counter, Event, EventSink, NOT_ATTEMPTED, Outcome, PANIC};
pub use folders::ServerFolders;
pub use live::{LiveLine, LiveSink, reconciling_text};
pub use peakhour_smtp::AuthPolicy;
pub use peakhour_workload::Shard;
pub use population::{Population, PopulationError, RESERVED_TEST_DOMAINS, is_test_domain};
pub use profile_rates::profile_rates;
pub use reconcile::{MAILBOX_SEARCH_LIMIT, RECONCILE_LIMIT, ReconcileProgress, SEARCH_TASKS};
pub use recording::qos_thresholds;
pub use run::{
    MAX_PHASE, MAX_TIMEOUT, MailProtocol, RunError, RunOutcome, RunResult, RunSettings, preflight,
    run, run_with,
};
pub use selfcheck::{CpuMeter, LAG_PROBE_PERIOD, process_cpu_time};
pub use sessions::LATE_AFTER;
pub use sessions::caldav::CalDavEndpoint;
pub use sessions::caldav::init::{CalendarInitError, CalendarInitReport, init_calendars};
pub use sessions::groupware::GroupwareCheckError;
pub use sessions::imap::client::draw::{StartDraw, draw_like_recording, thunderbird_start_draw};
pub use sessions::imap::trace::{ClientTrace, TraceError, TracedAction, trace_client};
pub use target::{
    Account, Credentials, Endpoint, EndpointError, ServerOptions, Target, TlsMode,
    security_shortcuts,
};
