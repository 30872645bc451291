//! The workload layer of peakhour: what simulated users do, decided before anything runs.
//!
//! It is pure and deterministic. It owns no socket, no clock and no runtime; everything it
//! returns follows from a profile and a seed, the same on every run and platform.
//!
//! - A [`Profile`] is the declarative workload in TOML (`docs/profiles.md`): the simulated
//!   day, the population and its distribution lists, actions per day, recipients, the
//!   message mix, the starting mailbox and the QoS thresholds. Two are built in
//!   ([`builtins`]): `mmb-medium` (seed 002, the MAPI Messaging Benchmark Medium user)
//!   and `groupwise-20x3` (seed 000).
//! - A [`Plan`] is one profile plus the command-line [`Overrides`], resolved once: rates
//!   per real second after day compression, the mix as cumulative weights, list
//!   membership, the folder layout, QoS.
//! - A [`DayShape`] says when the users work (the busiest hour, the morning logon), and a
//!   [`Window`] picks the part of the day a run measures: the even day, the peak hour or
//!   the morning's logon storm.
//! - A [`Schedule`] is one user's stream of due actions: independent Poisson processes
//!   merged in time order, seeded per (run seed, user), so user 7 does the same thing
//!   whether 10 or 1000 users run. [`Plan::send_choice`] decides each message's
//!   recipients and mix entry.
//! - A [`MessageGenerator`] turns (seed, id, mix entry) into realistic MIME bytes.
//! - [`files`] is the file-server side: NetBench's disk mix (seed 004) as a file profile
//!   with seeded per-client scripts, and the dbench/NBENCH load-file parser.
//!
//! - A [`ClientMix`] says which mail client ([`Personality`]) each user imitates: a
//!   profile's `[clients]` weights or `run --client NAME` (issue 28).
//!
//! - [`address`] is the one check every test address passes before it reaches an envelope.
//!
//! - [`derive`](mod@derive) writes the planner's derived profiles: one action alone, or the Inbox
//!   topped up.
//!
//! The engine consumes all of this; this crate knows nothing about it.

#![deny(missing_docs)]

pub mod address;
mod builtin;
mod clients;
mod day_shape;
pub mod derive;
mod error;
pub mod files;
mod groupware;
mod message;
mod plan;
mod profile;
mod rng;
mod schedule;
mod shard;
mod units;
mod words;

pub use builtin::{Builtin, builtin, builtins};
pub use clients::{ClientMix, MixError, Personality, UnknownClient};
pub use day_shape::{DayShape, MorningSpec, ShapeParams, Window};
pub use error::{PlanError, ProfileError};
pub use groupware::{CalendarParams, EventSlot, InvitationParams, MAX_INITIAL_EVENTS};
pub use message::{MessageGenerator, MessageSpec, message_id_run_part};
pub use plan::{
    ActionParams, ActionRate, Attachment, DEFAULT_SEED, Folder, InitialMessage, MessageType,
    Overrides, Plan, SendChoice,
};
pub use profile::bounds;
pub use profile::{
    ActionKind, Actions, AttachmentKind, AttachmentSpec, CalendarSpec, ChangeEvent, CheckInbox,
    CreateEvent, Delete, DownloadMail, Fixed, FolderSpec, Lists, Mailbox, MixEntry, Mode, Move,
    PollCalendar, Profile, Qos, Read, Recipients, ScriptStep, Send, Spread, UpdateCalendar, Users,
};
pub use schedule::{Schedule, ScheduledAction};
pub use shard::{Shard, ShardError};
pub use units::{ByteSize, HumanDuration, Readable};
