//! `peakhour lab ...`: the lab's commands and their arguments.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::help::LAB_UP_EXAMPLES;

/// `peakhour lab ...`
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Start the lab (harmless if it is already up) and print its endpoints.
    #[command(after_help = LAB_UP_EXAMPLES)]
    Up(LabUpArgs),
    /// Stop every process the lab started, and check that none is left.
    Down(LabDownArgs),
    /// Report every lab process and whether each endpoint answers.
    ///
    /// Exit code 0 when healthy, 1 otherwise. `--json` prints the endpoints,
    /// users and password for scripts.
    Status(LabStatusArgs),
    /// Send a message through the lab and read it back: SMTP in, IMAP and POP3 out.
    ///
    /// Uses peakhour's own protocol clients, and prints every command's time.
    Check(LabCheckArgs),
}

impl LabCommand {
    /// The lab directory the command names.
    pub fn lab_dir(&self) -> &LabDirArg {
        match self {
            LabCommand::Up(args) => &args.dir,
            LabCommand::Down(args) => &args.dir,
            LabCommand::Status(args) => &args.dir,
            LabCommand::Check(args) => &args.dir,
        }
    }
}

/// `--lab-dir`, which every lab command takes, as `init`, `run`, `sweep` and
/// `monitor` do.
#[derive(Debug, Args)]
pub struct LabDirArg {
    /// The lab's private directory (configuration, logs, queue, mail store).
    #[arg(
        long = "lab-dir",
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    lab_dir: PathBuf,
    /// The old spelling of --lab-dir, kept working for scripts that type it: hidden
    /// from help, and noted on stderr (`deprecation_note`). When given, it wins
    /// (over $PEAKHOUR_LAB_DIR, which fills --lab-dir). It conflicts with nothing:
    /// clap counts $PEAKHOUR_LAB_DIR as --lab-dir given, and would refuse the pair.
    #[arg(long = "dir", value_name = "DIR", hide = true)]
    deprecated_dir: Option<PathBuf>,
}

impl LabDirArg {
    /// The lab's directory, from whichever spelling was given.
    pub fn dir(&self) -> &Path {
        self.deprecated_dir.as_deref().unwrap_or(&self.lab_dir)
    }

    /// What to print on stderr when the deprecated `--dir` was used.
    pub fn deprecation_note(&self) -> Option<&'static str> {
        self.deprecated_dir.is_some().then_some(
            "note: `lab --dir` is deprecated and will be removed; use --lab-dir, as init and run do",
        )
    }
}

/// `peakhour lab up`
#[derive(Debug, Args)]
pub struct LabUpArgs {
    /// The lab's directory.
    #[command(flatten)]
    pub dir: LabDirArg,
    /// Number of users: user1 ... userN in bench.test, sharing one generated password.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub users: u32,
    /// Dovecot's mail storage: sdbox (one file per message, Dovecot's fastest) or maildir.
    #[arg(long, value_name = "FORMAT", default_value = "sdbox", value_parser = ["sdbox", "maildir"])]
    pub storage: String,
    /// Add N to every standard port (25, 465, 143, 993, 110, 24; 80, 445 for --with): 10000 gives 10025, 10143 ...
    #[arg(long, value_name = "N", default_value_t = 10000)]
    pub port_base: u16,
    /// SMTP port (Postfix; STARTTLS and AUTH offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub smtp_port: Option<u16>,
    /// SMTP with implicit TLS ("submissions") port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub submissions_port: Option<u16>,
    /// IMAP port (Dovecot; STARTTLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub imap_port: Option<u16>,
    /// IMAP with implicit TLS port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub imaps_port: Option<u16>,
    /// POP3 port (Dovecot; STLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub pop3_port: Option<u16>,
    /// LMTP port (Dovecot; Postfix delivers here). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub lmtp_port: Option<u16>,
    /// Connections one Dovecot imap process serves (Dovecot's default is 1: a process
    /// per connected user). Raise it (e.g. 100) for thousands of users.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub imap_client_limit: u32,
    /// Prefix of Dovecot's personal namespace, ending with the separator: `INBOX.`
    /// imitates Courier- and Cyrus-like servers, where `Sent` is `INBOX.Sent` and a
    /// top-level `Sent` is refused. Empty (the default) puts folders at the top.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub namespace_prefix: String,
    /// Dovecot's hierarchy separator (one character; `.` with `--namespace-prefix INBOX.`).
    #[arg(long, value_name = "CHAR", default_value_t = '/')]
    pub namespace_separator: char,
    /// Cap every lab server process at this many CPU cores (e.g. 0.5), with a cgroup.
    #[arg(long, value_name = "CORES", value_parser = peakhour_lab::Limits::parse_cpus)]
    pub cpus: Option<f64>,
    /// Cap the lab servers' memory, page cache included (e.g. 256M, 1G), with a cgroup.
    #[arg(long, value_name = "SIZE", value_parser = peakhour_lab::Limits::parse_memory)]
    pub memory: Option<u64>,
    /// SMTP port without AUTH or STARTTLS, for clients on loopback. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub smtp_noauth_port: Option<u16>,
    /// Also run these servers: caldav (Radicale) and smb (Samba), as a comma list or
    /// repeated (`--with caldav,smb`). Both use the lab's users and password.
    #[arg(long = "with", value_name = "SERVER", value_delimiter = ',', value_parser = peakhour_lab::OptionalServer::parse)]
    pub with: Vec<peakhour_lab::OptionalServer>,
    /// CalDAV port (Radicale, plain HTTP), with `--with caldav`. Overrides --port-base (+80).
    #[arg(long, value_name = "PORT")]
    pub caldav_port: Option<u16>,
    /// SMB port (Samba), with `--with smb`. Overrides --port-base (+445).
    #[arg(long, value_name = "PORT")]
    pub smb_port: Option<u16>,
    /// The mail store behind Postfix: dovecot, or cyrus (Cyrus IMAP 3.6: IMAP, POP3, LMTP,
    /// and JMAP on --port-base + 81).
    #[arg(long, value_name = "SERVER", default_value = "dovecot", value_parser = peakhour_lab::MailServer::parse)]
    pub mail_server: peakhour_lab::MailServer,
    /// JMAP port (Cyrus's httpd, plain HTTP), with `--mail-server cyrus`. Overrides --port-base (+81).
    #[arg(long, value_name = "PORT")]
    pub jmap_port: Option<u16>,
    /// Print the resulting status as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `peakhour lab down`
#[derive(Debug, Args)]
pub struct LabDownArgs {
    /// The lab's directory.
    #[command(flatten)]
    pub dir: LabDirArg,
    /// Also delete what the lab made in its directory: mail store, queue, certificates
    /// and password (the entries its lab-manifest.json lists). Anything else in the
    /// directory is kept, and so is the directory unless the lab created it.
    #[arg(long)]
    pub purge: bool,
}

/// `peakhour lab status`
#[derive(Debug, Args)]
pub struct LabStatusArgs {
    /// The lab's directory.
    #[command(flatten)]
    pub dir: LabDirArg,
    /// Print JSON: {"healthy", "domain", "users", "password", "endpoints": {...}, ...}.
    #[arg(long)]
    pub json: bool,
}

/// `peakhour lab check`
#[derive(Debug, Args)]
pub struct LabCheckArgs {
    /// The lab's directory.
    #[command(flatten)]
    pub dir: LabDirArg,
    /// The user (by number) the test message is sent to; user 1, the lab's first, by
    /// default, so that a lab of any size has it.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub user: u32,
    /// Use STARTTLS (verified against the lab's CA) on every connection.
    #[arg(long)]
    pub starttls: bool,
}
