//! What a lab is: its directory, domain, users, storage and ports.

use std::collections::BTreeSet;
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
    /// Postfix SMTP that offers neither AUTH nor STARTTLS and takes mail only
    /// from loopback (`mynetworks`), like a relay port on a trusted network.
    /// 0 in the state of a lab started before this port existed.
    #[serde(default)]
    pub smtp_noauth: u16,
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
    /// Radicale's CalDAV (plain HTTP), used by a lab started `--with caldav`.
    /// 0 in the state of a lab started before Radicale was part of the lab.
    #[serde(default)]
    pub caldav: u16,
    /// Samba's SMB port, used by a lab started `--with smb`. 0 in the state of
    /// a lab started before Samba was part of the lab.
    #[serde(default)]
    pub smb: u16,
    /// Cyrus's JMAP (its `httpd`, plain HTTP), used by a lab started
    /// `--mail-server cyrus`. 0 in the state of a lab started before Cyrus
    /// was part of the lab.
    #[serde(default)]
    pub jmap: u16,
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
            // Not a standard port: the one after SMTP's, easy to remember.
            smtp_noauth: shift(26)?,
            submissions: shift(465)?,
            imap: shift(143)?,
            imaps: shift(993)?,
            pop3: shift(110)?,
            lmtp: shift(24)?,
            // HTTP's port: Radicale speaks plain HTTP on loopback.
            caldav: shift(80)?,
            smb: shift(445)?,
            // The port after CalDAV's: both are HTTP, and a lab may run both.
            jmap: shift(81)?,
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

    /// Every port with its service name, in a stable order (a port of 0, not
    /// offered, is left out). The optional servers' ports are listed whether
    /// or not a lab runs them; [`LabConfig::services`] has the ones it uses.
    pub fn named(&self) -> Vec<(&'static str, u16)> {
        [
            ("smtp", self.smtp),
            ("smtp_noauth", self.smtp_noauth),
            ("submissions", self.submissions),
            ("imap", self.imap),
            ("imaps", self.imaps),
            ("pop3", self.pop3),
            ("lmtp", self.lmtp),
            ("caldav", self.caldav),
            ("smb", self.smb),
            ("jmap", self.jmap),
        ]
        .into_iter()
        .filter(|(_, port)| *port != 0)
        .collect()
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
            smtp_noauth: 10026,
            submissions: 10465,
            imap: 10143,
            imaps: 10993,
            pop3: 10110,
            lmtp: 10024,
            caldav: 10080,
            smb: 10445,
            jmap: 10081,
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
    /// Dovecot's personal namespace: its prefix and hierarchy separator.
    #[serde(default)]
    pub namespace: Namespace,
    /// CPU and memory caps on every server process (Linux cgroups).
    #[serde(default)]
    pub limits: Limits,
    /// The optional servers this lab runs beside Postfix and Dovecot
    /// (`lab up --with caldav,smb`).
    #[serde(default)]
    pub with: BTreeSet<OptionalServer>,
    /// The server that stores the mail and serves IMAP and POP3 (`lab up
    /// --mail-server`): Dovecot, or Cyrus, which serves JMAP too.
    #[serde(default)]
    pub mail_server: MailServer,
    /// The IMAP capabilities Dovecot advertises instead of its own
    /// (Dovecot's `imap_capability`), to play a server that lacks some, such
    /// as MOVE: tests of a client's fallbacks. `None` keeps Dovecot's list.
    /// Dovecot still accepts the commands it no longer advertises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imap_capability: Option<String>,
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
            namespace: Namespace::default(),
            limits: Limits::default(),
            with: BTreeSet::new(),
            mail_server: MailServer::default(),
            imap_capability: None,
        }
    }

    /// True if the lab runs `server`.
    pub fn runs(&self, server: OptionalServer) -> bool {
        self.with.contains(&server)
    }

    /// True if the lab starts Radicale: `--with caldav` on a Dovecot lab. A
    /// Cyrus lab's CalDAV is Cyrus's own `httpd` (with scheduling, RFC 6638),
    /// on the JMAP port.
    pub fn runs_radicale(&self) -> bool {
        self.runs(OptionalServer::Caldav) && self.mail_server == MailServer::Dovecot
    }

    /// The ports this lab listens on, with their service names: every mail
    /// port, and the optional servers' ports only if it runs them.
    pub fn services(&self) -> Vec<(&'static str, u16)> {
        self.ports
            .named()
            .into_iter()
            .filter(|(service, _)| match *service {
                "caldav" => self.runs_radicale(),
                "smb" => self.runs(OptionalServer::Smb),
                "jmap" => self.mail_server == MailServer::Cyrus,
                _ => true,
            })
            .collect()
    }

    /// Checks what the types cannot: the namespace and the limits, and what
    /// Cyrus can play of them.
    pub fn validate(&self) -> Result<(), String> {
        self.namespace.validate()?;
        if self.mail_server == MailServer::Cyrus {
            crate::cyrus::namespace(&self.namespace)?;
            if self.ports.smtp_noauth == 0 {
                return Err(
                    "a Cyrus lab needs the SMTP port without AUTH (--smtp-noauth-port): \
                            Cyrus's JMAP submission hands mail to Postfix there"
                        .into(),
                );
            }
        }
        self.limits.validate()
    }

    /// The login name of user `n` (1-based), e.g. `user42@bench.test`.
    pub fn user_address(&self, n: u32) -> String {
        format!("user{n}@{}", self.domain)
    }
}

/// The lab's mail store: the server behind Postfix that keeps the mailboxes
/// and serves IMAP, POP3 and LMTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailServer {
    /// Dovecot 2.3 (Debian's `dovecot-*`).
    #[default]
    Dovecot,
    /// Cyrus IMAP 3.6 (Debian's `cyrus-common` and `cyrus-caldav`, with the
    /// `imapd` and `pop3d` unpacked privately): IMAP, POP3, LMTP and JMAP.
    Cyrus,
}

impl MailServer {
    /// The name `--mail-server` takes and `lab status` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            MailServer::Dovecot => "dovecot",
            MailServer::Cyrus => "cyrus",
        }
    }

    /// Parses a name as `--mail-server` takes it.
    pub fn parse(text: &str) -> Result<MailServer, String> {
        match text.trim() {
            "dovecot" => Ok(MailServer::Dovecot),
            "cyrus" => Ok(MailServer::Cyrus),
            other => Err(format!(
                "unknown mail server {other:?}: --mail-server takes dovecot or cyrus"
            )),
        }
    }
}

impl fmt::Display for MailServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server the lab starts only when asked (`lab up --with NAME`), because
/// the mail benchmarks do not need it and it costs start time and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionalServer {
    /// Radicale (Debian's `radicale` 3.1): CalDAV over plain HTTP.
    Caldav,
    /// Samba's `smbd` (Debian's `samba` 4.17): one SMB share.
    Smb,
}

impl OptionalServer {
    /// Every optional server, in the order they are started.
    pub const ALL: [OptionalServer; 2] = [OptionalServer::Caldav, OptionalServer::Smb];

    /// The name `--with` takes and `lab status --json` lists (`caldav`, `smb`).
    pub fn as_str(self) -> &'static str {
        match self {
            OptionalServer::Caldav => "caldav",
            OptionalServer::Smb => "smb",
        }
    }

    /// The server program's name, as `lab status` lists it (`radicale`, `samba`).
    pub fn server_name(self) -> &'static str {
        match self {
            OptionalServer::Caldav => "radicale",
            OptionalServer::Smb => "samba",
        }
    }

    /// Parses a name as `--with` takes it (for the command line's value parser).
    pub fn parse(text: &str) -> Result<OptionalServer, String> {
        text.parse()
    }
}

impl fmt::Display for OptionalServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OptionalServer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "caldav" => Ok(OptionalServer::Caldav),
            "smb" => Ok(OptionalServer::Smb),
            other => Err(format!(
                "unknown server {other:?}: --with takes caldav (Radicale) or smb (Samba)"
            )),
        }
    }
}

/// Dovecot's personal (`inbox = yes`) namespace as IMAP clients see it.
///
/// The default, no prefix and `/`, is Dovecot's usual layout: `Sent` is a
/// top-level folder. `INBOX.` with `.` is how Courier, Cyrus and many hosted
/// servers look: every folder lives under `INBOX.`, so `CREATE Sent` is refused
/// and `CREATE INBOX.Sent` works. The lab can play either, so clients can be
/// tested against both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// Prefix of every folder but INBOX, ending with the separator, or empty.
    pub prefix: String,
    /// The hierarchy separator.
    pub separator: char,
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace {
            prefix: String::new(),
            separator: '/',
        }
    }
}

impl Namespace {
    /// Characters a separator may not be: IMAP's list wildcards and quoted
    /// specials, and what Dovecot's configuration syntax would misread.
    const FORBIDDEN_SEPARATORS: &'static str = "\"\\*%{}#=";

    /// Fails with a sentence saying what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let separator = self.separator;
        if !separator.is_ascii_punctuation() || Self::FORBIDDEN_SEPARATORS.contains(separator) {
            return Err(format!(
                "namespace separator {separator:?} is not usable: give one ASCII punctuation \
                 character other than {} (usually / or .)",
                Self::FORBIDDEN_SEPARATORS
            ));
        }
        let prefix = &self.prefix;
        if prefix.is_empty() {
            return Ok(());
        }
        if prefix.len() > 64
            || !prefix
                .chars()
                .all(|c| c.is_ascii_graphic() && !Self::FORBIDDEN_SEPARATORS.contains(c))
        {
            return Err(format!(
                "namespace prefix {prefix:?} is not usable: at most 64 printable ASCII characters, \
                 none of {}",
                Self::FORBIDDEN_SEPARATORS
            ));
        }
        if !prefix.ends_with(separator) || prefix.starts_with(separator) {
            return Err(format!(
                "namespace prefix {prefix:?} must end with the separator {separator:?} (and not \
                 start with it), as Dovecot requires: e.g. INBOX{separator}"
            ));
        }
        Ok(())
    }
}

/// CPU and memory caps for every process of a lab's servers, enforced with a
/// Linux cgroup of the lab's own. None of either means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Limits {
    /// CPU time per wall time, in thousandths of a core (500 is half a core).
    /// Kept as an integer so that a configuration compares exactly.
    pub millicpus: Option<u32>,
    /// Memory, page cache included, in bytes.
    pub memory_bytes: Option<u64>,
}

impl Limits {
    /// The smallest CPU cap: the kernel's minimum CFS quota is 1 ms per 100 ms period.
    pub const MIN_MILLICPUS: u32 = 10;
    /// The largest CPU cap taken (1,024 cores).
    pub const MAX_MILLICPUS: u32 = 1_024_000;
    /// Below this, Dovecot's and Postfix's processes do not start reliably.
    pub const MIN_MEMORY_BYTES: u64 = 32 << 20;
    /// The largest memory cap taken (1 PiB).
    pub const MAX_MEMORY_BYTES: u64 = 1 << 50;

    /// A cap of `cpus` cores (0.5 is half a core).
    pub fn with_cpus(self, cpus: f64) -> Result<Limits, String> {
        let millis = cpus * 1000.0;
        let range = f64::from(Self::MIN_MILLICPUS)..=f64::from(Self::MAX_MILLICPUS);
        if !millis.is_finite() || !range.contains(&millis) {
            return Err(format!(
                "a CPU cap of {cpus} is out of range: from 0.01 to {} cores",
                Self::MAX_MILLICPUS / 1000
            ));
        }
        Ok(Limits {
            // In range, so the cast cannot truncate.
            millicpus: Some(millis.round() as u32),
            ..self
        })
    }

    /// A cap of `bytes` of memory.
    pub fn with_memory(self, bytes: u64) -> Result<Limits, String> {
        if !(Self::MIN_MEMORY_BYTES..=Self::MAX_MEMORY_BYTES).contains(&bytes) {
            return Err(format!(
                "memory limit {bytes} bytes is out of range: from 32M to 1P"
            ));
        }
        Ok(Limits {
            memory_bytes: Some(bytes),
            ..self
        })
    }

    /// Parses and checks a CPU cap as `lab up --cpus` takes it (cores, e.g. `0.5`).
    pub fn parse_cpus(text: &str) -> Result<f64, String> {
        let cpus: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a number of cores (e.g. 0.5)"))?;
        Limits::default().with_cpus(cpus)?;
        Ok(cpus)
    }

    /// Parses and checks a memory cap as `lab up --memory` takes it (e.g. `256M`).
    pub fn parse_memory(text: &str) -> Result<u64, String> {
        let bytes = parse_size(text)?;
        Limits::default().with_memory(bytes)?;
        Ok(bytes)
    }

    /// The CPU cap in cores.
    pub fn cpus(&self) -> Option<f64> {
        self.millicpus.map(|m| f64::from(m) / 1000.0)
    }

    /// True if nothing is capped (no cgroup is made).
    pub fn is_unlimited(&self) -> bool {
        self.millicpus.is_none() && self.memory_bytes.is_none()
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(millis) = self.millicpus {
            Limits::default().with_cpus(f64::from(millis) / 1000.0)?;
        }
        if let Some(bytes) = self.memory_bytes {
            Limits::default().with_memory(bytes)?;
        }
        Ok(())
    }
}

/// Parses a size as `lab up --memory` takes it: bytes, or a number with a
/// binary suffix `K`, `M`, `G`, `T` (also `KiB`, `MB` ...; all are powers of 1024,
/// as cgroups and `free` count them), e.g. `256M`, `1.5G`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim();
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "size {text:?}: unknown unit {unit:?} (use K, M, G or T, e.g. 256M)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("size {text:?} is not a number with an optional unit (e.g. 256M)"))?;
    // Powers of two up to 2^40 are exact in an f64.
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || !(1.0..=1e18).contains(&bytes) {
        return Err(format!("size {text:?} is out of range"));
    }
    Ok(bytes.round() as u64)
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
    fn namespaces_are_checked_as_dovecot_would() {
        let courier = Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        };
        assert!(courier.validate().is_ok());
        assert!(Namespace::default().validate().is_ok());
        let no_trailing = Namespace {
            prefix: "INBOX".into(),
            separator: '.',
        };
        assert!(
            no_trailing
                .validate()
                .unwrap_err()
                .contains("must end with")
        );
        let wildcard = Namespace {
            prefix: String::new(),
            separator: '*',
        };
        assert!(wildcard.validate().unwrap_err().contains("not usable"));
        let spaced = Namespace {
            prefix: "My Box.".into(),
            separator: '.',
        };
        assert!(spaced.validate().is_err());
    }

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2T").unwrap(), 2 << 40);
        assert!(
            parse_size("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("M").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn limits_are_bounded() {
        let half = Limits::default().with_cpus(0.5).unwrap();
        assert_eq!(half.millicpus, Some(500));
        assert_eq!(half.cpus(), Some(0.5));
        assert!(Limits::default().with_cpus(0.001).is_err());
        assert!(Limits::default().with_cpus(f64::NAN).is_err());
        assert!(Limits::default().with_memory(1 << 20).is_err());
        assert_eq!(Limits::parse_cpus("0.5"), Ok(0.5));
        assert!(Limits::parse_cpus("lots").is_err());
        assert!(
            Limits::parse_cpus("5000")
                .unwrap_err()
                .contains("out of range")
        );
        assert_eq!(Limits::parse_memory("1G"), Ok(1 << 30));
        assert!(Limits::parse_memory("1M").unwrap_err().contains("from 32M"));
        let both = half.with_memory(256 << 20).unwrap();
        assert_eq!(both.memory_bytes, Some(256 << 20));
        assert!(!both.is_unlimited());
        assert!(Limits::default().is_unlimited());
    }

    #[test]
    fn optional_servers_have_ports_only_when_run() {
        let ports = Ports::from_base(20000).unwrap();
        assert_eq!((ports.caldav, ports.smb), (20080, 20445));
        let mut config = LabConfig::new("/x");
        assert!(
            !config
                .services()
                .iter()
                .any(|(s, _)| *s == "caldav" || *s == "smb")
        );
        config.with.insert("smb".parse().unwrap());
        let services = config.services();
        assert!(services.contains(&("smb", 10445)));
        assert!(!services.iter().any(|(s, _)| *s == "caldav"));
        assert!(
            "ldap"
                .parse::<OptionalServer>()
                .unwrap_err()
                .contains("caldav")
        );
        assert_eq!(OptionalServer::Caldav.server_name(), "radicale");
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
