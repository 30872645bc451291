//! What the lab remembers between commands (`state.json`), and what
//! `lab status` reports.

use std::path::Path;

use serde::{Deserialize, Serialize};

use std::collections::BTreeSet;

use crate::cgroup::{CgroupStatus, LabCgroup};
use crate::probe::PortProbe;
use crate::process::{ProcessId, ProcessInfo};
use crate::server::Server;
use crate::{LabConfig, LabError, MailServer, Namespace, OptionalServer, Storage};

/// The lab's memory, kept in `state.json` (mode 0600: it holds the password).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LabState {
    pub(crate) config: LabConfig,
    /// Generated once per lab directory and kept across restarts, so that
    /// initialized mailboxes stay usable.
    pub(crate) password: String,
    pub(crate) dovecot: Option<ProcessId>,
    pub(crate) postfix: Option<ProcessId>,
    /// Cyrus's master, for a lab `--mail-server cyrus` (instead of Dovecot).
    #[serde(default)]
    pub(crate) cyrus: Option<ProcessId>,
    /// Radicale's process, for a lab `--with caldav`.
    #[serde(default)]
    pub(crate) radicale: Option<ProcessId>,
    /// smbd's master, for a lab `--with smb`.
    #[serde(default)]
    pub(crate) samba: Option<ProcessId>,
    /// The cgroup the servers run in, for a shaped lab. Kept because it
    /// depends on the cgroup `up` ran in, which `down` may not share.
    #[serde(default)]
    pub(crate) cgroup: Option<LabCgroup>,
}

impl LabState {
    pub(crate) fn load(path: &Path) -> Result<Option<LabState>, LabError> {
        let text = match crate::dir::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LabError::io(path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| LabError::BadState {
                path: path.to_owned(),
                reason: e.to_string(),
            })
    }

    pub(crate) fn save(&self, path: &Path) -> Result<(), LabError> {
        let json = serde_json::to_string_pretty(self).map_err(|e| LabError::BadState {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        // A fresh sibling renamed over the old file: a crash never leaves half
        // a state file, and a planted link is replaced rather than followed.
        crate::dir::replace_file(path, json.as_bytes(), 0o600)
    }

    /// Every master the state records, in the order `down` stops them.
    pub(crate) fn masters(&self) -> impl Iterator<Item = (Server, ProcessId)> + '_ {
        Server::STOP_ORDER
            .into_iter()
            .filter_map(|server| self.master(server).map(|id| (server, id)))
    }

    /// The master the state records for `server`.
    pub(crate) fn master(&self, server: Server) -> Option<ProcessId> {
        match server {
            Server::Dovecot => self.dovecot,
            Server::Cyrus => self.cyrus,
            Server::Postfix => self.postfix,
            Server::Radicale => self.radicale,
            Server::Samba => self.samba,
        }
    }

    /// Records (or, with None, forgets) the master of `server`.
    pub(crate) fn set_master(&mut self, server: Server, id: Option<ProcessId>) {
        let slot = match server {
            Server::Dovecot => &mut self.dovecot,
            Server::Cyrus => &mut self.cyrus,
            Server::Postfix => &mut self.postfix,
            Server::Radicale => &mut self.radicale,
            Server::Samba => &mut self.samba,
        };
        *slot = id;
    }

    /// Forgets every master (after `down`, or an `up` that failed).
    pub(crate) fn forget_masters(&mut self) {
        for server in Server::STOP_ORDER {
            self.set_master(server, None);
        }
    }
}

/// Where a Cyrus lab's CalDAV starts, on its httpd (the JMAP port).
pub(crate) const CYRUS_CALDAV_PATH: &str = "/dav/calendars/";

/// The lab's endpoints: the mail servers' as `127.0.0.1:PORT`, the optional
/// servers' as URLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoints {
    /// SMTP (STARTTLS, AUTH) into Postfix.
    pub smtp: String,
    /// SMTP into Postfix that offers neither AUTH nor STARTTLS and takes mail
    /// from loopback only, as a relay on a trusted network does. Absent for a
    /// lab started before this port existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_noauth: Option<String>,
    /// SMTP with implicit TLS into Postfix.
    pub submissions: String,
    /// IMAP (STARTTLS) on Dovecot.
    pub imap: String,
    /// IMAP with implicit TLS on Dovecot.
    pub imaps: String,
    /// POP3 (STLS) on Dovecot.
    pub pop3: String,
    /// LMTP on Dovecot.
    pub lmtp: String,
    /// The CalDAV root for a lab `--with caldav`: Radicale's,
    /// `http://127.0.0.1:PORT/` (each user's principal and calendar home is
    /// `/userN/`), or on a Cyrus lab Cyrus's, `http://127.0.0.1:JMAP-PORT/dav/calendars/`
    /// (users sign in as `userN@domain`; Cyrus schedules, RFC 6638).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caldav: Option<String>,
    /// Samba's share, `smb://127.0.0.1:PORT/peakhour`, for a lab `--with smb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smb: Option<String>,
    /// Cyrus's JMAP, `http://127.0.0.1:PORT/` (the session is at
    /// `/.well-known/jmap`), for a lab `--mail-server cyrus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jmap: Option<String>,
}

impl Endpoints {
    pub(crate) fn of(config: &LabConfig) -> Self {
        let at = |port: u16| format!("127.0.0.1:{port}");
        let p = config.ports;
        Endpoints {
            smtp: at(p.smtp),
            smtp_noauth: (p.smtp_noauth != 0).then(|| at(p.smtp_noauth)),
            submissions: at(p.submissions),
            imap: at(p.imap),
            imaps: at(p.imaps),
            pop3: at(p.pop3),
            lmtp: at(p.lmtp),
            caldav: match config.mail_server {
                MailServer::Dovecot => config
                    .runs(OptionalServer::Caldav)
                    .then(|| format!("http://127.0.0.1:{}/", p.caldav)),
                // Cyrus's httpd serves CalDAV beside JMAP.
                MailServer::Cyrus => config
                    .runs(OptionalServer::Caldav)
                    .then(|| format!("http://127.0.0.1:{}{CYRUS_CALDAV_PATH}", p.jmap)),
            },
            smb: config
                .runs(OptionalServer::Smb)
                .then(|| format!("smb://127.0.0.1:{}/{}", p.smb, crate::samba::SHARE)),
            jmap: (config.mail_server == MailServer::Cyrus)
                .then(|| format!("http://127.0.0.1:{}/", p.jmap)),
        }
    }
}

/// One server of the lab: its master process and everything in its session.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentStatus {
    /// `dovecot` or `cyrus`, `postfix`, `radicale` or `samba`.
    pub name: String,
    /// The master's PID, if the lab started one.
    pub master_pid: Option<i32>,
    /// True while the master runs.
    pub running: bool,
    /// Every live process of the server (master and children).
    pub processes: Vec<ProcessInfo>,
}

/// What `lab status` reports; `--json` prints exactly this.
#[derive(Debug, Clone, Serialize)]
pub struct LabStatus {
    /// Every server runs and every endpoint answers.
    pub healthy: bool,
    /// The lab directory.
    pub dir: String,
    /// The mail domain.
    pub domain: String,
    /// Number of users (`user1` ... `userN`).
    pub users: u32,
    /// The users' shared password.
    pub password: String,
    /// The mail store behind Postfix: `dovecot` or `cyrus`.
    pub mail_server: MailServer,
    /// Dovecot's storage format (a Cyrus lab keeps Cyrus's own).
    pub storage: Storage,
    /// Dovecot's personal namespace (prefix and hierarchy separator).
    pub namespace: Namespace,
    /// CPU and memory caps, and the cgroup that enforces them.
    pub limits: LimitsStatus,
    /// The optional servers the lab runs (`caldav`, `smb`).
    pub with: BTreeSet<OptionalServer>,
    /// Where to connect.
    pub endpoints: Endpoints,
    /// The CA certificate to trust for the lab's TLS.
    pub ca_file: String,
    /// Each server and its processes.
    pub servers: Vec<ComponentStatus>,
    /// Each endpoint and whether it answered.
    pub ports: Vec<PortProbe>,
}

/// A lab's caps as `lab status` reports them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitsStatus {
    /// CPU cap in cores (0.5 is half a core), or none.
    pub cpus: Option<f64>,
    /// Memory cap in bytes, or none.
    pub memory_bytes: Option<u64>,
    /// The cgroup the servers run in, with the files that account for their
    /// CPU time and memory; none for a lab without caps.
    pub cgroup: Option<CgroupStatus>,
}

impl LabStatus {
    /// A username of the lab (`user{n}@domain`).
    pub fn user(&self, n: u32) -> String {
        format!("user{n}@{}", self.domain)
    }

    /// The master process of `server` (`dovecot` or `postfix`), if the lab started one.
    pub fn master_pid(&self, server: &str) -> Option<u32> {
        self.servers
            .iter()
            .find(|s| s.name == server)
            .and_then(|s| s.master_pid)
            .and_then(|pid| u32::try_from(pid).ok())
    }

    /// Why this lab cannot carry a load of `users` users, if it cannot: it
    /// is not healthy, or it has fewer users. `dir` is the lab directory as
    /// the caller named it, for the command that puts it right.
    pub fn unfit_for(&self, users: u32, dir: &std::path::Path) -> Option<String> {
        let dir = dir.display();
        if !self.healthy {
            return Some(format!(
                "the lab in {} is not healthy; see `peakhour lab status --lab-dir {dir}`",
                self.dir
            ));
        }
        (self.users < users).then(|| {
            format!(
                "the lab has {} users and the largest step needs {users}; restart it with \
                 `peakhour lab down --lab-dir {dir} && peakhour lab up --lab-dir {dir} --users {users}`",
                self.users
            )
        })
    }

    /// Why the lab is not healthy, one item per server that does not run
    /// and per endpoint that does not answer (with what the probe got);
    /// empty for a healthy lab.
    pub fn problems(&self) -> Vec<String> {
        let servers = self
            .servers
            .iter()
            .filter(|s| !s.running)
            .map(|s| format!("{} is not running", s.name));
        let ports = self
            .ports
            .iter()
            .filter(|p| !p.answers)
            .map(|p| format!("{} {} does not answer ({})", p.service, p.address, p.detail));
        servers.chain(ports).collect()
    }

    /// Dovecot's client ports: IMAP, IMAPS and POP3 (not LMTP, which Postfix uses).
    pub fn dovecot_client_ports(&self) -> Vec<u16> {
        let e = &self.endpoints;
        [&e.imap, &e.imaps, &e.pop3]
            .into_iter()
            .filter_map(|endpoint| crate::check::port(endpoint).ok())
            .collect()
    }
}
