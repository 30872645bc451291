//! # peakhour-lab
//!
//! The lab layer of peakhour: a real mail system on loopback, started and
//! stopped from a private directory, for the demo and for tests.
//!
//! * **Postfix** accepts SMTP (STARTTLS, AUTH through Dovecot) and SMTP over
//!   implicit TLS, and hands every message for the lab domain to Dovecot by LMTP.
//! * **Dovecot** serves IMAP (and IMAPS), POP3 and LMTP, with users
//!   `user1` ... `userN` in `bench.test` sharing one password generated per lab.
//!
//! Both run as root from configuration in the lab directory (see [`Layout`]),
//! each master in a session of its own, so that [`Lab::down`] can find and stop
//! every process the lab started, by PID, even after a crash. Nothing is read
//! from `/etc/postfix` or `/etc/dovecot`, and nothing listens beyond 127.0.0.1.
//!
//! The packages come from Debian (`scripts/setup.sh` installs them); a missing
//! one is reported by [`Lab::up`] with the command that installs it.
#![deny(missing_docs)]

mod config;
mod error;
mod layout;
mod lifecycle;
mod prerequisites;
mod probe;
mod process;
mod render;
mod state;
mod tls;

pub use config::{DEFAULT_DOMAIN, LabConfig, MAIL_UID, Ports, Storage};
pub use error::{LabError, SETUP_COMMAND};
pub use layout::Layout;
pub use lifecycle::{DownReport, Lab, LabGuard, UpReport};
pub use probe::PortProbe;
pub use process::{ProcessId, ProcessInfo};
pub use state::{ComponentStatus, Endpoints, LabStatus};
