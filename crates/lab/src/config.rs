//! What a lab is: its directory, domain, users, storage and ports.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The domain every lab user lives in. Only `.test` addresses (RFC 2606) are
/// ever used, so nothing the lab accepts could be routed anywhere real.
pub const DEFAULT_DOMAIN: &str = "bench.test";

/// The uid and gid that own the mail store. Dovecot needs no passwd entry for it.
pub const MAIL_UID: u32 = 5000;

/// How Dovecot stores messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// Dovecot's single-dbox: one file per message plus indexes. Dovecot's own
    /// recommendation for performance.
    #[default]
    Sdbox,
    /// Maildir: one file per message, flags in the file name.
    Maildir,
}

impl Storage {
    /// The name used in `mail_location` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Sdbox => "sdbox",
            Storage::Maildir => "maildir",
        }
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Storage {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sdbox" => Ok(Storage::Sdbox),
            "maildir" => Ok(Storage::Maildir),
            other => Err(format!(
                "unknown storage {other:?}: expected sdbox or maildir"
            )),
        }
    }
}

/// The loopback ports the lab listens on.
///
/// The defaults are the standard ports plus 10000, so `10143` is IMAP and
/// `10025` is SMTP: easy to remember, and free of the real services' ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    /// Postfix SMTP with STARTTLS and AUTH.
    pub smtp: u16,
    /// Postfix SMTP with implicit TLS (RFC 8314 "submissions").
    pub submissions: u16,
    /// Dovecot IMAP with STARTTLS.
    pub imap: u16,
    /// Dovecot IMAP with implicit TLS.
    pub imaps: u16,
    /// Dovecot POP3 with STLS.
    pub pop3: u16,
    /// Dovecot LMTP, which Postfix delivers to and `peakhour init` writes to.
    pub lmtp: u16,
}

impl Ports {
    /// The standard port numbers shifted by `base` (10000 gives the defaults).
    pub fn from_base(base: u16) -> Result<Self, String> {
        let shift = |standard: u16| {
            base.checked_add(standard)
                .ok_or_else(|| format!("port base {base} is too high: {base} + {standard} > 65535"))
        };
        Ok(Ports {
            smtp: shift(25)?,
            submissions: shift(465)?,
            imap: shift(143)?,
            imaps: shift(993)?,
            pop3: shift(110)?,
            lmtp: shift(24)?,
        })
    }

    /// Ports that are free right now, for labs started side by side (tests,
    /// benchmarks). Each call in a process returns a different base, so
    /// parallel callers do not race for the same ports.
    pub fn free() -> Option<Self> {
        use std::sync::atomic::{AtomicU16, Ordering};
        // Bases from 20000 to 31700 keep every port (base + 993 at most) below
        // Linux's ephemeral range (32768 and up), from which the kernel picks
        // the local ports of outgoing connections: a port found free there can
        // be taken by any client socket a moment later.
        const FIRST: u16 = 20_000;
        const SLOTS: u16 = 118;
        // Spread processes apart by PID; within one, hand out bases in turn.
        static NEXT: AtomicU16 = AtomicU16::new(0);
        let start = (std::process::id() % u32::from(SLOTS)) as u16;
        for _ in 0..SLOTS {
            let step = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
            let base = FIRST + (start + step) % SLOTS * 100;
            let ports = Ports::from_base(base).ok()?;
            if ports
                .named()
                .iter()
                .all(|(_, port)| crate::probe::port_is_free(*port))
            {
                return Some(ports);
            }
        }
        None
    }

    /// Every port with its service name, in a stable order.
    pub fn named(&self) -> [(&'static str, u16); 6] {
        [
            ("smtp", self.smtp),
            ("submissions", self.submissions),
            ("imap", self.imap),
            ("imaps", self.imaps),
            ("pop3", self.pop3),
            ("lmtp", self.lmtp),
        ]
    }

    /// The first port number that appears twice, if any.
    pub fn duplicate(&self) -> Option<u16> {
        let named = self.named();
        named
            .iter()
            .enumerate()
            .find(|(i, (_, port))| named[..*i].iter().any(|(_, other)| other == port))
            .map(|(_, (_, port))| *port)
    }
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            smtp: 10025,
            submissions: 10465,
            imap: 10143,
            imaps: 10993,
            pop3: 10110,
            lmtp: 10024,
        }
    }
}

/// Everything that decides how a lab is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabConfig {
    /// The lab's private directory: configuration, logs, queue and mail store.
    pub dir: PathBuf,
    /// The mail domain.
    pub domain: String,
    /// Number of users, named `user1` ... `userN`.
    pub users: u32,
    /// Dovecot's mail storage format.
    pub storage: Storage,
    /// Loopback ports.
    pub ports: Ports,
    /// Connections one Dovecot `imap` process serves. 1 (the default, Dovecot's
    /// own) gives every connected user a process of its own, a few MB each;
    /// thousands of idle users need more per process or the server runs out
    /// of memory before peakhour does.
    #[serde(default = "one")]
    pub imap_client_limit: u32,
}

fn one() -> u32 {
    1
}

impl LabConfig {
    /// A lab in `dir` with the defaults: 100 users in `bench.test`, sdbox, default ports.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LabConfig {
            dir: dir.into(),
            domain: DEFAULT_DOMAIN.to_owned(),
            users: 100,
            storage: Storage::default(),
            ports: Ports::default(),
            imap_client_limit: 1,
        }
    }

    /// The login name of user `n` (1-based), e.g. `user42@bench.test`.
    pub fn user_address(&self, n: u32) -> String {
        format!("user{n}@{}", self.domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_base_shifts_standard_ports() {
        let ports = Ports::from_base(20000).unwrap();
        assert_eq!((ports.smtp, ports.imap, ports.lmtp), (20025, 20143, 20024));
        assert_eq!(Ports::from_base(10000).unwrap(), Ports::default());
        assert!(Ports::from_base(65000).is_err());
    }

    #[test]
    fn duplicate_ports_are_found() {
        let mut ports = Ports::default();
        assert_eq!(ports.duplicate(), None);
        ports.pop3 = ports.imap;
        assert_eq!(ports.duplicate(), Some(10143));
    }

    #[test]
    fn storage_parses_and_rejects() {
        assert_eq!("maildir".parse::<Storage>().unwrap(), Storage::Maildir);
        assert!(
            "mbox"
                .parse::<Storage>()
                .unwrap_err()
                .contains("sdbox or maildir")
        );
    }
}
