//! # peakhour-lab
//!
//! The lab layer of peakhour: a real mail system (and, on request, a CalDAV
//! and an SMB server) on loopback, started and stopped from a private
//! directory, for the demo and for tests.
//!
//! * **Postfix** accepts SMTP (STARTTLS, AUTH through Dovecot) and SMTP over
//!   implicit TLS, and hands every message for the lab domain to Dovecot by LMTP.
//! * **Dovecot** serves IMAP (and IMAPS), POP3 and LMTP, with users
//!   `user1` ... `userN` in `bench.test` sharing one password generated per lab.
//! * On request ([`OptionalServer`], `lab up --with caldav,smb`), **Radicale**
//!   serves CalDAV and **Samba** one SMB share, to the same users.
//!
//! All run from configuration in the lab directory (see [`Layout`]),
//! each master in a session of its own, so that [`Lab::down`] can find and stop
//! every process the lab started, by PID, even after a crash. Nothing is read
//! from `/etc` (Postfix's, Dovecot's, Radicale's or Samba's), and nothing
//! listens beyond 127.0.0.1.
//!
//! Because it runs as root, the lab is careful with what it touches: it uses
//! only a new, empty or lab-made directory that only root can change, never
//! follows a symbolic link when it writes, removes on purge only what its
//! manifest lists, and signals only processes it recognises as its own by
//! start time, command line and executable.
//!
//! A lab can imitate other servers' conventions ([`Namespace`]: Courier-style
//! `INBOX.` folders; an SMTP port without AUTH) and can be *shaped* with
//! [`Limits`]: a cgroup (v1 or v2) caps the CPU and memory of every server
//! process, and [`LimitsStatus`] names the files that account for them.
//!
//! [`check_mail_path`] sends one message through a running lab with
//! peakhour's own SMTP, IMAP and POP3 clients and times every command
//! (`peakhour lab check`); it is the one part of the lab that speaks the
//! protocols, and the reason the lab depends on the protocol crates.
//!
//! A lab describes itself to the server monitor ([`LabStatus::monitor_groups`],
//! [`LabStatus::mail_probes`], [`LabStatus::cgroup_files`]): which processes
//! are its servers, where its mail queue is, which cgroup caps it.
//!
//! [`clone_mailbox`] fills the lab's mailboxes fast: one user's home, filled
//! over IMAP, copied on disk for every user that holds no mail (`peakhour init`).
//!
//! The packages come from Debian (`scripts/setup.sh` installs them); a missing
//! one is reported by [`Lab::up`] with the command that installs it.
#![deny(missing_docs)]

mod cgroup;
mod check;
mod clone;
mod config;
mod cyrus;
mod dir;
mod error;
mod grow;
mod layout;
mod lifecycle;
mod prerequisites;
mod probe;
mod process;
mod radicale;
mod render;
mod samba;
mod server;
mod shape;
mod state;
mod text;
mod tls;
mod watch;

pub use cgroup::{CgroupStatus, CgroupVersion};
pub use check::{CheckError, CheckLine, check_mail_path};
pub use clone::{
    CLONE_MARKER, CloneKey, CloneReport, clear_half_clone, clone_mailbox, is_cloned, message_files,
};
pub use config::{
    DEFAULT_DOMAIN, LabConfig, Limits, MAIL_UID, MailServer, Namespace, OptionalServer, Ports,
    Storage, parse_size,
};
pub use dir::PurgeReport;
pub use error::{LabError, SETUP_COMMAND};
pub use grow::DovecotLimits;
pub use layout::Layout;
pub use lifecycle::{DownReport, Lab, LabGuard, UpReport};
pub use probe::PortProbe;
pub use process::{ProcessId, ProcessInfo};
pub use shape::{server_capacity, shape_label};
pub use state::{ComponentStatus, Endpoints, LabStatus, LimitsStatus};
pub use watch::{SAMBA_GROUP, Watching, client_wire_bytes, local_config, mail_probes_in};

/// The JSON schema [`LabStatus`] follows (`peakhour lab status --json`);
/// the tests check real output against it.
pub const STATUS_SCHEMA: &str = include_str!("../../../schemas/lab-status.schema.json");
