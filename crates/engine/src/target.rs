//! What a run or an init is pointed at: endpoints and credentials.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use peakhour_analysis::Redactor;
use peakhour_imap::{ImapConnection, ImapError};
use peakhour_net::{Secret, Security};
use peakhour_smtp::{AuthPolicy, Flavor, SmtpConnection, SmtpError};

use crate::users_file::{UsersFileError, parse_users_file};

/// How a connection to an endpoint is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain text all the way.
    None,
    /// Plain, then STARTTLS (STLS for POP3) before authenticating.
    StartTls,
    /// TLS from the first byte.
    Implicit,
}

/// A server address with its TLS mode, parsed from a URL such as
/// `imap://127.0.0.1:10143`, `imaps://mail.example:993`,
/// `smtp://127.0.0.1:10025`, `submissions://host:465` or `lmtp://host:24`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// TLS mode.
    pub tls: TlsMode,
    /// The local address to connect from; `None` leaves it to the kernel.
    /// Set per user from [`ServerOptions::source_addresses`]
    /// ([`Target::from_source`]).
    pub source: Option<std::net::IpAddr>,
}

/// Why an endpoint URL was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{url:?}: {reason}")]
pub struct EndpointError {
    url: String,
    reason: String,
}

impl Endpoint {
    /// Parses `scheme://host[:port]`. `+starttls` after the scheme
    /// (`imap+starttls://`) asks for STARTTLS. Only the schemes of the protocol
    /// in `allowed` are accepted (e.g. `["imap", "imaps"]`).
    pub fn parse(url: &str, allowed: &[&str]) -> Result<Endpoint, EndpointError> {
        let error = |reason: String| EndpointError {
            url: url.to_owned(),
            reason,
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| error(format!("expected a URL like {}://host:port", allowed[0])))?;
        let (base, starttls) = match scheme.strip_suffix("+starttls") {
            Some(base) => (base, true),
            None => (scheme, false),
        };
        if !allowed.contains(&base) {
            return Err(error(format!(
                "scheme must be one of {}",
                allowed.join(", ")
            )));
        }
        let (default_port, implicit) = match base {
            "imap" => (143, false),
            "imaps" => (993, true),
            "smtp" => (25, false),
            "submission" => (587, false),
            "submissions" | "smtps" => (465, true),
            "lmtp" => (24, false),
            "pop3" => (110, false),
            "pop3s" => (995, true),
            "http" => (80, false),
            "https" => (443, true),
            other => return Err(error(format!("unknown scheme {other}"))),
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| error(format!("bad port {port:?}")))?,
            ),
            _ => (rest, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(error("no host".into()));
        }
        let tls = match (implicit, starttls) {
            (true, true) => {
                return Err(error(
                    "+starttls makes no sense with an implicit-TLS scheme".into(),
                ));
            }
            (true, false) => TlsMode::Implicit,
            (false, true) => TlsMode::StartTls,
            (false, false) => TlsMode::None,
        };
        Ok(Endpoint {
            host: host.to_owned(),
            port,
            tls,
            source: None,
        })
    }

    /// Whether the host is this machine's loopback (`127.0.0.0/8`, `::1`,
    /// `localhost`): plain text to it never leaves the machine.
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// How the transport is opened (STARTTLS starts plain).
    pub fn security(&self) -> Security {
        match self.tls {
            TlsMode::Implicit => Security::ImplicitTls,
            TlsMode::None | TlsMode::StartTls => Security::Plain,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.tls {
            TlsMode::None => "",
            TlsMode::StartTls => " (STARTTLS)",
            TlsMode::Implicit => " (TLS)",
        };
        write!(f, "{}:{}{mode}", self.host, self.port)
    }
}

/// How each simulated user logs in.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// Every user shares one password; logins are the addresses the
    /// profile's name pattern gives.
    Shared(Secret<String>),
    /// One account per user, in user order (from `--users-file`): these
    /// users are the run's whole population.
    PerUser(Vec<Account>),
}

/// One user of a users file.
#[derive(Debug, Clone)]
pub struct Account {
    /// What the user logs in with.
    pub login: String,
    /// Its password.
    pub password: Secret<String>,
    /// Its mail address: where the other users send its mail.
    pub address: String,
}

/// How the engine adapts to a server that is not the lab.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Whether and how users authenticate to the SMTP server (`--smtp-auth`).
    pub smtp_auth: AuthPolicy,
    /// The prefix of the user's own folders, instead of the one the server
    /// announces with NAMESPACE (`--folder-prefix`).
    pub folder_prefix: Option<String>,
    /// The local addresses the users connect from, user `i` from the
    /// `i % len`-th (round-robin); empty: the kernel chooses. Set when one
    /// address has too few ephemeral ports for the run's connections
    /// ([`crate::limits`]).
    pub source_addresses: Vec<std::net::IpAddr>,
}

impl Account {
    /// The users of a users file (see [`crate::users_file`]): the run's whole
    /// test population, mail going only to their addresses. The address is
    /// the third column, or the login when the login is an address.
    pub fn parse_users(bytes: impl AsRef<[u8]>) -> Result<Vec<Account>, UsersFileError> {
        let lines = parse_users_file(bytes.as_ref())?;
        lines
            .into_iter()
            .map(|user| {
                let address = match user.address {
                    Some(address) => address,
                    None if user.login.contains('@') => user.login.clone(),
                    None => {
                        return Err(UsersFileError::Line {
                            line: user.line,
                            why: format!(
                                "the login {:?} is not a mail address: add the user's address \
                                 as a third column (login,password,address), so that the run \
                                 knows where its mail goes",
                                user.login
                            ),
                        });
                    }
                };
                Ok(Account {
                    login: user.login,
                    password: user.password,
                    address,
                })
            })
            .collect()
    }
}

/// What weakens a target's security, one sentence each, for stderr, the
/// run's `config.toml`, `summary.json` and the report (issue 11): server
/// certificates not verified, and passwords in plain text to a host that
/// is not loopback.
pub fn security_shortcuts(
    imap: &Endpoint,
    smtp: &Endpoint,
    tls_verification_skipped: bool,
) -> Vec<String> {
    let mut shortcuts = Vec::new();
    if tls_verification_skipped {
        shortcuts.push(
            "TLS certificates were not verified (--insecure-skip-tls-verify): anyone on the \
             path could have posed as the server and read the users' passwords"
                .to_owned(),
        );
    }
    for (protocol, endpoint) in [("IMAP LOGIN", imap), ("SMTP AUTH", smtp)] {
        if endpoint.tls == TlsMode::None && !endpoint.is_loopback() {
            shortcuts.push(format!(
                "{protocol} sends passwords in plain text to {}:{}, which is not loopback \
                 (no TLS: use an imaps/submissions URL or +starttls)",
                endpoint.host, endpoint.port
            ));
        }
    }
    shortcuts
}

/// Everything the engine needs to reach the servers.
#[derive(Debug, Clone)]
pub struct Target {
    /// Where users submit mail.
    pub smtp: Endpoint,
    /// Where users read mail.
    pub imap: Endpoint,
    /// Where `init` delivers directly, if the target offers it (the lab does).
    pub lmtp: Option<Endpoint>,
    /// The JMAP server (`http://` or `https://`; the session is at
    /// `/.well-known/jmap`), for runs over JMAP (`--protocol jmap`).
    pub jmap: Option<Endpoint>,
    /// The CalDAV server, if the target has one: the calendar actions use
    /// it, and `update_calendar` falls back to an IMAP folder without it.
    pub caldav: Option<crate::sessions::caldav::CalDavEndpoint>,
    /// The POP3 server, if the target has one: where `download_mail` reads.
    pub pop3: Option<Endpoint>,
    /// TLS settings for every connection that uses TLS.
    pub tls: Arc<rustls::ClientConfig>,
    /// Logins and passwords.
    pub credentials: Credentials,
    /// SMTP AUTH and folder names.
    pub options: ServerOptions,
}

impl Target {
    /// Connects to the IMAP endpoint, with STARTTLS when its URL asks for it.
    /// Connecting, the TLS handshake, the greeting and STARTTLS together
    /// must take less than `timeout`; every later command gets
    /// `command_timeout`.
    pub async fn connect_imap(
        &self,
        timeout: Duration,
        command_timeout: Duration,
    ) -> Result<ImapConnection, ImapError> {
        let endpoint = &self.imap;
        let connect = async {
            let mut imap = ImapConnection::connect(
                &endpoint.host,
                endpoint.port,
                endpoint.security(),
                Some(self.tls.clone()),
                timeout,
            )
            .await?
            .value;
            imap.set_command_timeout(Some(command_timeout));
            if endpoint.tls == TlsMode::StartTls {
                imap.starttls(&endpoint.host, self.tls.clone()).await?;
            }
            Ok(imap)
        };
        imap_connect_deadline(timeout, connect).await
    }

    /// Connects to an SMTP or LMTP endpoint and says EHLO (LHLO), again after
    /// STARTTLS when its URL asks for it, all within `timeout` (each later
    /// command gets `timeout` too: the SMTP driver's per-command deadline).
    pub async fn connect_smtp(
        &self,
        endpoint: &Endpoint,
        flavor: Flavor,
        client_name: &str,
        timeout: Duration,
    ) -> Result<SmtpConnection, SmtpError> {
        let connect = async {
            let mut smtp = SmtpConnection::connect(
                &endpoint.host,
                endpoint.port,
                flavor,
                endpoint.security(),
                Some(self.tls.clone()),
                timeout,
            )
            .await?
            .value;
            smtp.ehlo(client_name).await?;
            if endpoint.tls == TlsMode::StartTls {
                smtp.starttls(&endpoint.host, self.tls.clone()).await?;
                smtp.ehlo(client_name).await?;
            }
            Ok(smtp)
        };
        smtp_connect_deadline(timeout, connect).await
    }

    /// The one redaction step for what servers say (issue 26): every
    /// password of the run, so that a server quoting a refused LOGIN or
    /// AUTH leaves none of them in a stored or printed text.
    pub fn redactor(&self) -> Redactor {
        match &self.credentials {
            Credentials::Shared(password) => Redactor::new([password.expose().as_str()]),
            Credentials::PerUser(list) => {
                Redactor::new(list.iter().map(|a| a.password.expose().as_str()))
            }
        }
    }

    /// `endpoint` as user `user` (0-based) connects to it: from its source
    /// address, round-robin over [`ServerOptions::source_addresses`]. Without
    /// source addresses (the usual run) it is `endpoint` itself, not a copy:
    /// every send of every user comes through here.
    pub fn from_source<'a>(&self, endpoint: &'a Endpoint, user: u32) -> Cow<'a, Endpoint> {
        let sources = &self.options.source_addresses;
        if sources.is_empty() {
            return Cow::Borrowed(endpoint);
        }
        Cow::Owned(Endpoint {
            source: Some(sources[user as usize % sources.len()]),
            ..endpoint.clone()
        })
    }

    /// Login and password of user `user` (0-based), given its address from
    /// the population.
    pub fn login<'a>(&'a self, user: u32, address: &'a str) -> (&'a str, &'a Secret<String>) {
        match &self.credentials {
            Credentials::Shared(password) => (address, password),
            Credentials::PerUser(list) => {
                let account = &list[user as usize % list.len().max(1)];
                (&account.login, &account.password)
            }
        }
    }
}

/// `future`, or [`ImapError::Timeout`] once `limit` has passed: for waits
/// the IMAP driver does not bound itself (its greeting, a TLS handshake, a
/// sequence of commands).
pub(crate) async fn imap_deadline<T>(
    limit: Duration,
    during: &'static str,
    future: impl Future<Output = Result<T, ImapError>>,
) -> Result<T, ImapError> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or(Err(ImapError::Timeout {
            during,
            after: limit,
        }))
}

/// What a connect backstop names when it fires: the drivers bound and name
/// each step themselves (the TCP connect, the TLS handshake, the greeting,
/// each command), so this fires only for a connector that does not.
pub(crate) const CONNECTING: &str = "connecting (TCP connect, TLS handshake, greeting, STARTTLS)";

/// How much later than the connect timeout the backstop fires, so that the
/// driver's own deadline, which names the step, is met first.
const BACKSTOP_GRACE: Duration = Duration::from_secs(1);

/// [`imap_deadline`] as a backstop around connecting, which the driver
/// bounds step by step within `limit`.
pub(crate) async fn imap_connect_deadline<T>(
    limit: Duration,
    future: impl Future<Output = Result<T, ImapError>>,
) -> Result<T, ImapError> {
    tokio::time::timeout(limit + BACKSTOP_GRACE, future)
        .await
        .unwrap_or(Err(ImapError::Timeout {
            during: CONNECTING,
            after: limit,
        }))
}

/// [`smtp_deadline`] as a backstop around connecting, which the driver
/// bounds step by step within `limit`.
pub(crate) async fn smtp_connect_deadline<T>(
    limit: Duration,
    future: impl Future<Output = Result<T, SmtpError>>,
) -> Result<T, SmtpError> {
    tokio::time::timeout(limit + BACKSTOP_GRACE, future)
        .await
        .unwrap_or(Err(SmtpError::Timeout {
            during: CONNECTING,
            after: limit,
        }))
}

/// `future`, or [`SmtpError::Timeout`] once `limit` has passed.
pub(crate) async fn smtp_deadline<T>(
    limit: Duration,
    during: &'static str,
    future: impl Future<Output = Result<T, SmtpError>>,
) -> Result<T, SmtpError> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or(Err(SmtpError::Timeout {
            during,
            after: limit,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_file_line_gives_login_password_and_address() {
        let accounts = Account::parse_users("alice,s3cret,alice@corp.example\n").unwrap();
        assert_eq!(accounts[0].login, "alice");
        assert_eq!(accounts[0].password.expose(), "s3cret");
        assert_eq!(accounts[0].address, "alice@corp.example");
        let accounts = Account::parse_users("bob@x.test,\"pa,ss\"\n").unwrap();
        assert_eq!(accounts[0].address, "bob@x.test");
        assert_eq!(accounts[0].password.expose(), "pa,ss");
        let error = Account::parse_users("# users\n\nalice,pw,alice@x.test\ncarol,pw\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("4: "), "{error}");
        assert!(error.contains("third column"), "{error}");
        assert!(Account::parse_users("dave\n").is_err());
        assert!(Account::parse_users("# none\n").is_err());
    }

    #[test]
    fn parses_schemes_ports_and_tls_modes() {
        let imap = ["imap", "imaps"];
        assert_eq!(
            Endpoint::parse("imap://127.0.0.1:10143", &imap).unwrap(),
            Endpoint {
                host: "127.0.0.1".into(),
                port: 10143,
                tls: TlsMode::None,
                source: None,
            }
        );
        assert_eq!(
            Endpoint::parse("imaps://mail.test", &imap).unwrap().port,
            993
        );
        assert_eq!(
            Endpoint::parse("imap+starttls://[::1]:143", &imap).unwrap(),
            Endpoint {
                host: "::1".into(),
                port: 143,
                tls: TlsMode::StartTls,
                source: None,
            }
        );
        let smtp = ["smtp", "submission", "submissions"];
        assert_eq!(
            Endpoint::parse("submissions://h", &smtp).unwrap().tls,
            TlsMode::Implicit
        );
    }

    #[test]
    fn refuses_wrong_scheme_and_bad_port() {
        let imap = ["imap", "imaps"];
        let err = Endpoint::parse("smtp://h:25", &imap).unwrap_err();
        assert!(
            err.to_string()
                .contains("scheme must be one of imap, imaps"),
            "{err}"
        );
        assert!(Endpoint::parse("imap://h:99999", &imap).is_err());
        assert!(Endpoint::parse("127.0.0.1:143", &imap).is_err());
        assert!(Endpoint::parse("imaps+starttls://h", &imap).is_err());
    }
}
