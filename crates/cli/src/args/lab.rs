//! `peakhour lab ...`: the lab's commands and their arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::help::LAB_UP_EXAMPLES;

#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
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

#[derive(Debug, Args)]
pub(crate) struct LabDirArg {
    /// The lab's private directory (configuration, logs, queue, mail store).
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".peakhour/lab",
        env = "PEAKHOUR_LAB_DIR"
    )]
    pub(crate) dir: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct LabUpArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Number of users: user1 ... userN in bench.test, sharing one generated password.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) users: u32,
    /// Dovecot's mail storage: sdbox (one file per message, Dovecot's fastest) or maildir.
    #[arg(long, value_name = "FORMAT", default_value = "sdbox", value_parser = ["sdbox", "maildir"])]
    pub(crate) storage: String,
    /// Add N to every standard port (25, 465, 143, 993, 110, 24; 80, 445 for --with): 10000 gives 10025, 10143 ...
    #[arg(long, value_name = "N", default_value_t = 10000)]
    pub(crate) port_base: u16,
    /// SMTP port (Postfix; STARTTLS and AUTH offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) smtp_port: Option<u16>,
    /// SMTP with implicit TLS ("submissions") port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) submissions_port: Option<u16>,
    /// IMAP port (Dovecot; STARTTLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) imap_port: Option<u16>,
    /// IMAP with implicit TLS port. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) imaps_port: Option<u16>,
    /// POP3 port (Dovecot; STLS offered). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) pop3_port: Option<u16>,
    /// LMTP port (Dovecot; Postfix delivers here). Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) lmtp_port: Option<u16>,
    /// Connections one Dovecot imap process serves (Dovecot's default is 1: a process
    /// per connected user). Raise it (e.g. 100) for thousands of users.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) imap_client_limit: u32,
    /// Prefix of Dovecot's personal namespace, ending with the separator: `INBOX.`
    /// imitates Courier- and Cyrus-like servers, where `Sent` is `INBOX.Sent` and a
    /// top-level `Sent` is refused. Empty (the default) puts folders at the top.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub(crate) namespace_prefix: String,
    /// Dovecot's hierarchy separator (one character; `.` with `--namespace-prefix INBOX.`).
    #[arg(long, value_name = "CHAR", default_value_t = '/')]
    pub(crate) namespace_separator: char,
    /// Cap every lab server process at this many CPU cores (e.g. 0.5), with a cgroup.
    #[arg(long, value_name = "CORES", value_parser = peakhour_lab::Limits::parse_cpus)]
    pub(crate) cpus: Option<f64>,
    /// Cap the lab servers' memory, page cache included (e.g. 256M, 1G), with a cgroup.
    #[arg(long, value_name = "SIZE", value_parser = peakhour_lab::Limits::parse_memory)]
    pub(crate) memory: Option<u64>,
    /// SMTP port without AUTH or STARTTLS, for clients on loopback. Overrides --port-base.
    #[arg(long, value_name = "PORT")]
    pub(crate) smtp_noauth_port: Option<u16>,
    /// Also run these servers: caldav (Radicale) and smb (Samba), as a comma list or
    /// repeated (`--with caldav,smb`). Both use the lab's users and password.
    #[arg(long = "with", value_name = "SERVER", value_delimiter = ',', value_parser = peakhour_lab::OptionalServer::parse)]
    pub(crate) with: Vec<peakhour_lab::OptionalServer>,
    /// CalDAV port (Radicale, plain HTTP), with `--with caldav`. Overrides --port-base (+80).
    #[arg(long, value_name = "PORT")]
    pub(crate) caldav_port: Option<u16>,
    /// SMB port (Samba), with `--with smb`. Overrides --port-base (+445).
    #[arg(long, value_name = "PORT")]
    pub(crate) smb_port: Option<u16>,
    /// The mail store behind Postfix: dovecot, or cyrus (Cyrus IMAP 3.6: IMAP, POP3, LMTP,
    /// and JMAP on --port-base + 81).
    #[arg(long, value_name = "SERVER", default_value = "dovecot", value_parser = peakhour_lab::MailServer::parse)]
    pub(crate) mail_server: peakhour_lab::MailServer,
    /// JMAP port (Cyrus's httpd, plain HTTP), with `--mail-server cyrus`. Overrides --port-base (+81).
    #[arg(long, value_name = "PORT")]
    pub(crate) jmap_port: Option<u16>,
    /// Print the resulting status as JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabDownArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Also delete what the lab made in its directory: mail store, queue, certificates
    /// and password (the entries its lab-manifest.json lists). Anything else in the
    /// directory is kept, and so is the directory unless the lab created it.
    #[arg(long)]
    pub(crate) purge: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabStatusArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// Print JSON: {"healthy", "domain", "users", "password", "endpoints": {...}, ...}.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LabCheckArgs {
    #[command(flatten)]
    pub(crate) dir: LabDirArg,
    /// The user (by number) the test message is sent to.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub(crate) user: u32,
    /// Use STARTTLS (verified against the lab's CA) on every connection.
    #[arg(long)]
    pub(crate) starttls: bool,
}
