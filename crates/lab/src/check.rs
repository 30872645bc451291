//! One message through a lab with peakhour's own clients: SMTP in, IMAP and
//! POP3 out, with the time of every command (`peakhour lab check`).
//!
//! It is the quickest way to see that a lab (or a change to the protocol
//! clients) works end to end, and the first thing the demo runs. The check
//! leaves the mailbox as it found it, so that a later `init` finds what it
//! expects.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use peakhour_imap::{
    BodySection, FetchItem, ImapConnection, ImapError, Refusal, SearchKey, StoreMode,
};
use peakhour_net::{Secret, Security, Timed, TlsError, TlsSettings};
use peakhour_pop3::{Pop3Connection, Pop3Error};
use peakhour_smtp::{Flavor, SmtpConnection, SmtpError};

use crate::state::LabStatus;

/// Every command's deadline.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long the message may take from submission to the recipient's INBOX.
const DELIVERY_LIMIT: Duration = Duration::from_secs(15);
const HOST: &str = "127.0.0.1";

/// What the check reports as it goes, for a person watching.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckLine {
    /// A server is next: `SMTP 127.0.0.1:10025 (user1@bench.test -> user2@bench.test)`.
    Server(String),
    /// One command (or a few that make one step) and its time.
    Step {
        /// What was done: `EHLO`, `UID FETCH BODY.PEEK[]` ...
        what: String,
        /// Its wall time; for the delivery, the time since submission.
        elapsed: Duration,
    },
}

/// Why the check failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The lab is not healthy, so the check would only find that out slowly.
    #[error("the lab in {0} is not healthy; see `peakhour lab status --lab-dir {0}`")]
    NotHealthy(String),
    /// The user is not one of the lab's.
    #[error("the lab has users 1 to {users}; --user {user} is not one of them")]
    NoSuchUser {
        /// The user asked for.
        user: u32,
        /// The lab's number of users.
        users: u32,
    },
    /// An endpoint in the lab's state without a port.
    #[error("bad endpoint {0}")]
    Endpoint(String),
    /// The lab's CA could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// An SMTP command failed.
    #[error(transparent)]
    Smtp(#[from] SmtpError),
    /// An IMAP command failed.
    #[error(transparent)]
    Imap(#[from] ImapError),
    /// A POP3 command failed.
    #[error(transparent)]
    Pop3(#[from] Pop3Error),
    /// The message did not come through as sent.
    #[error("{0}")]
    Mail(String),
}

/// Sends one message from `user1` to `user{user}` through the lab's SMTP
/// port (with STARTTLS if `starttls`), finds it over IMAP and POP3, checks
/// that both return the same bytes as were sent, then deletes it. `report`
/// sees each step as it ends. Returns the size of the delivered message.
pub async fn check_mail_path(
    status: &LabStatus,
    user: u32,
    starttls: bool,
    report: &mut dyn FnMut(CheckLine),
) -> Result<usize, CheckError> {
    if !status.healthy {
        return Err(CheckError::NotHealthy(status.dir.clone()));
    }
    if !(1..=status.users).contains(&user) {
        return Err(CheckError::NoSuchUser {
            user,
            users: status.users,
        });
    }
    let mut check = Check {
        status,
        to: status.user(user),
        tls: starttls,
        token: format!(
            "lab-check-{:x}",
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ),
        report,
    };
    let message = check.message();
    let submitted_at = check.submit(&message).await?;
    check.read_back(&message, submitted_at).await
}

/// The state of one check.
struct Check<'a> {
    status: &'a LabStatus,
    to: String,
    tls: bool,
    token: String,
    report: &'a mut dyn FnMut(CheckLine),
}

impl Check<'_> {
    fn step<T>(&mut self, what: &str, timed: Timed<T>) -> T {
        (self.report)(CheckLine::Step {
            what: what.to_owned(),
            elapsed: timed.elapsed,
        });
        timed.value
    }

    fn server(&mut self, line: String) {
        (self.report)(CheckLine::Server(line));
    }

    fn password(&self) -> Secret<String> {
        Secret::new(self.status.password.clone())
    }

    fn tls_config(&self) -> Result<Option<std::sync::Arc<rustls::ClientConfig>>, CheckError> {
        if !self.tls {
            return Ok(None);
        }
        let settings = TlsSettings {
            verify: true,
            extra_ca_file: Some(PathBuf::from(&self.status.ca_file)),
            use_system_roots: false,
        };
        Ok(Some(settings.client_config()?))
    }

    /// The message, with a line that needs dot-stuffing.
    fn message(&self) -> Vec<u8> {
        format!(
            "From: {from}\r\nTo: {to}\r\nSubject: peakhour lab check {token}\r\n\
             Message-ID: <{token}@{domain}>\r\nMIME-Version: 1.0\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n\
             This message was sent by `peakhour lab check`.\r\n.A line that needs dot-stuffing.\r\n",
            from = self.status.user(1),
            to = self.to,
            token = self.token,
            domain = self.status.domain
        )
        .into_bytes()
    }

    /// Submits the message over SMTP; returns when Postfix accepted it.
    async fn submit(&mut self, message: &[u8]) -> Result<Instant, CheckError> {
        let (from, endpoint) = (self.status.user(1), &self.status.endpoints.smtp);
        self.server(format!("SMTP {endpoint} ({from} -> {})", self.to));
        let port = port(endpoint)?;
        let connected =
            SmtpConnection::connect(HOST, port, Flavor::Smtp, Security::Plain, None, TIMEOUT);
        let mut smtp = self.step("connect + greeting", connected.await?);
        let ehlo = smtp.ehlo("check.bench.test").await?;
        self.step("EHLO", ehlo);
        if let Some(tls) = self.tls_config()? {
            let upgraded = smtp.starttls(HOST, tls).await?;
            self.step("STARTTLS + handshake", upgraded);
            let ehlo = smtp.ehlo("check.bench.test").await?;
            self.step("EHLO", ehlo);
        }
        let auth = smtp.authenticate(&from, &self.password()).await?;
        self.step("AUTH", auth);
        let submitted_at = Instant::now();
        let sent = smtp
            .send_mail(&from, std::slice::from_ref(&self.to), message)
            .await?;
        let outcome = self.step("MAIL + RCPT + DATA", sent);
        if !outcome.all_delivered() {
            return Err(CheckError::Mail(format!(
                "Postfix did not accept the message: {outcome:?}"
            )));
        }
        let quit = smtp.quit().await?;
        self.step("QUIT", quit);
        Ok(submitted_at)
    }

    /// Waits for the message over IMAP, reads it there and over POP3,
    /// compares, and deletes it.
    async fn read_back(
        mut self,
        message: &[u8],
        submitted_at: Instant,
    ) -> Result<usize, CheckError> {
        self.server(format!("IMAP {} ({})", self.status.endpoints.imap, self.to));
        let port = port(&self.status.endpoints.imap)?;
        let connected = ImapConnection::connect(HOST, port, Security::Plain, None, TIMEOUT);
        let mut imap = self.step("connect + greeting", connected.await?);
        if let Some(tls) = self.tls_config()? {
            let upgraded = imap.starttls(HOST, tls).await?;
            self.step("STARTTLS + handshake", upgraded);
        }
        let login = imap.login(&self.to, &self.password()).await?;
        self.step("LOGIN", login);
        let search = SearchKey::Header("Message-ID".into(), self.token.clone());
        let uid = loop {
            let selected = match imap.select("INBOX").await {
                Ok(_) => true,
                Err(error) if inbox_creation_raced(&error) => false,
                Err(error) => return Err(error.into()),
            };
            if selected && let Some(uid) = imap.search(&search, true).await?.value.last() {
                break uid.to_string();
            }
            if submitted_at.elapsed() > DELIVERY_LIMIT {
                return Err(CheckError::Mail(format!(
                    "the message did not reach {}'s INBOX within 15 s; see the lab's postfix.log",
                    self.to
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let delivered = Timed {
            value: (),
            elapsed: submitted_at.elapsed(),
        };
        self.step("delivered: visible in INBOX after submission", delivered);
        let full = [FetchItem::Body {
            section: BodySection::Full,
            peek: true,
        }];
        let fetched = imap.fetch(&uid, &full, true).await?;
        let fetched = self.step("UID FETCH BODY.PEEK[]", fetched);
        let over_imap = fetched
            .first()
            .and_then(|m| m.section(&BodySection::Full))
            .ok_or_else(|| CheckError::Mail("the server returned no BODY[]".into()))?
            .to_vec();
        let over_pop3 = self.read_over_pop3().await?;
        if over_imap != over_pop3 {
            return Err(CheckError::Mail(
                "IMAP and POP3 returned different bytes".into(),
            ));
        }
        if !over_imap.ends_with(&message[message.len() - 60..]) {
            return Err(CheckError::Mail(
                "the delivered body differs from the one submitted".into(),
            ));
        }
        let stored = imap
            .store(&uid, StoreMode::Add, &["\\Deleted"], true, true)
            .await?;
        self.step("UID STORE +FLAGS (\\Deleted)", stored.map(|_| ()));
        let expunged = imap.uid_expunge(&uid).await?;
        self.step("UID EXPUNGE", expunged.map(|_| ()));
        let logout = imap.logout().await?;
        self.step("LOGOUT", logout);
        Ok(over_imap.len())
    }

    /// The message as POP3 returns it, looked for from the newest down.
    async fn read_over_pop3(&mut self) -> Result<Vec<u8>, CheckError> {
        self.server(format!("POP3 {} ({})", self.status.endpoints.pop3, self.to));
        let port = port(&self.status.endpoints.pop3)?;
        let connected = Pop3Connection::connect(HOST, port, Security::Plain, None, TIMEOUT);
        let mut pop3 = self.step("connect + greeting", connected.await?);
        if let Some(tls) = self.tls_config()? {
            let upgraded = pop3.stls(HOST, tls).await?;
            self.step("STLS + handshake", upgraded);
        }
        let login = pop3.login(&self.to, &self.password()).await?;
        self.step("USER + PASS", login);
        let stat = pop3.stat().await?;
        let count = self.step("STAT", stat).count;
        let mut found = None;
        for n in (1..=count).rev() {
            let retrieved = pop3.retr(n).await?;
            let message = self.step(&format!("RETR {n}"), retrieved);
            if message
                .windows(self.token.len())
                .any(|w| w == self.token.as_bytes())
            {
                found = Some(message);
                break;
            }
        }
        let quit = pop3.quit().await?;
        self.step("QUIT", quit);
        found.ok_or_else(|| CheckError::Mail("the message was not found over POP3".into()))
    }
}

/// The port of an endpoint in the lab's state (`127.0.0.1:10143`).
pub(crate) fn port(endpoint: &str) -> Result<u16, CheckError> {
    endpoint
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| CheckError::Endpoint(endpoint.to_owned()))
}

/// Whether a refused SELECT of the Inbox is Dovecot's race with the first
/// delivery: an Inbox never used is created by the first SELECT, and when the
/// delivery of the check's message creates it at the same moment, the SELECT
/// is refused with `NO Mailbox already exists`. The next SELECT finds it.
fn inbox_creation_raced(error: &ImapError) -> bool {
    matches!(
        error,
        ImapError::Rejected { command: "SELECT", refusal: Refusal::No, text }
            if text.contains("already exists")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(command: &'static str, text: &str) -> ImapError {
        ImapError::Rejected {
            command,
            refusal: Refusal::No,
            text: text.to_owned(),
        }
    }

    #[test]
    fn only_the_inbox_creation_race_is_tried_again() {
        // As Dovecot 2.3 answered in CI, 26 November 2026.
        let raced = refused(
            "SELECT",
            "Mailbox already exists (0.011 + 0.000 + 0.010 secs).",
        );
        assert!(inbox_creation_raced(&raced));
        assert!(!inbox_creation_raced(&refused(
            "SELECT",
            "Mailbox doesn't exist: INBOX"
        )));
        assert!(!inbox_creation_raced(&refused(
            "CREATE",
            "Mailbox already exists"
        )));
        let bad = ImapError::Rejected {
            command: "SELECT",
            refusal: Refusal::Bad,
            text: "Mailbox already exists".to_owned(),
        };
        assert!(!inbox_creation_raced(&bad));
    }
}
