//! The target as the command line names it, before anything is read or
//! resolved: `peakhour-app` resolves it (the lab's status, the URLs, the
//! password, the users file) and turns it back into a child's flags.

use std::path::PathBuf;

use peakhour_engine::ServerOptions;

/// Where the load goes and who logs in, as the command line gave it.
#[derive(Debug, Clone, Default)]
pub struct TargetSpec {
    /// `Some(dir)` for the lab in `dir` (`--target lab`), `None` for the
    /// explicit endpoints below.
    pub lab_dir: Option<PathBuf>,
    /// `--imap`, `--smtp`, `--lmtp`, `--pop3`: URLs (explicit targets).
    pub imap: Option<String>,
    /// See `imap`.
    pub smtp: Option<String>,
    /// See `imap`.
    pub lmtp: Option<String>,
    /// See `imap`.
    pub pop3: Option<String>,
    /// `--caldav`: for any target; the lab's own when it runs one.
    pub caldav: Option<String>,
    /// `--jmap`: the JMAP session URL (explicit targets); the lab's own when
    /// it serves JMAP (a Cyrus lab).
    pub jmap: Option<String>,
    /// `--users-file`: the run's whole test population.
    pub users_file: Option<PathBuf>,
    /// `--password-env`: the variable holding the shared password.
    pub password_env: String,
    /// `--ca-file`: extra trusted CA certificates (the lab's by default).
    pub ca_file: Option<PathBuf>,
    /// `--insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// How the server is driven (`--smtp-auth`, `--folder-prefix`).
    pub options: ServerOptions,
}
