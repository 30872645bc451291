//! Mail submission over SMTP: the message a user composes (recipients
//! checked against the population before anything is sent), one SMTP
//! session per send, and the delivery books the accepted recipients go into.
//! The copy kept in Sent is the mail session's (`crate::sessions::imap`).

use peakhour_smtp::{Flavor, SmtpError};
use peakhour_workload::MessageSpec;
use tokio::time::Instant;

use crate::connector::Connector;
use crate::events::{Counter, Outcome};
use crate::sessions::{Action, Actor, Failure, UserSession};
use crate::target::{TlsMode, smtp_connect_deadline, smtp_deadline};

/// The SMTP submission of a user: it holds no connection between sends.
#[derive(Debug, Default)]
pub(crate) struct Submission;

/// What a send did: how it ended, and the message, for the copy in Sent.
pub(crate) struct Sent {
    pub(crate) outcome: Outcome,
    pub(crate) message: Vec<u8>,
}

impl<'a, C: Connector> UserSession<Actor<'a, C>> for Submission {
    type Action = Action;
    type Done = Result<Sent, Failure>;

    async fn act(&mut self, actor: &Actor<'a, C>, action: &Action) -> Self::Done {
        actor.send(action.nth).await
    }
}

impl<C: Connector> Actor<'_, C> {
    /// The `nth` message this user sends: its recipients (distribution lists
    /// expanded by the client, as Outlook expands a personal list: the
    /// envelope names every member, and every member is a member of the
    /// population, checked before anything is sent), and its text.
    pub(crate) fn compose(&self, nth: u64) -> Result<Outgoing, Failure> {
        let shared = self.shared;
        let plan = &shared.plan;
        let choice = plan.send_choice(self.index, nth);
        let recipients = plan.delivered_to(&choice);
        let envelope = self.envelope(&recipients)?;
        let mut to: Vec<String> = choice
            .direct
            .iter()
            .filter_map(|&u| shared.population.address(u).ok())
            .collect();
        if let Some(list) = choice.list {
            to.push(plan.list_address(list));
        }
        let date = rfc5322(chrono::Utc::now());
        let message = shared.generator.generate(&MessageSpec {
            run_id: &shared.run_id,
            id: &choice.id,
            from: self.address,
            to: &to,
            date: &date,
            kind: &plan.mix()[choice.mix],
        });
        let message_id = header(&message, "Message-ID").unwrap_or_default();
        Ok(Outgoing {
            recipients,
            envelope,
            message,
            message_id,
        })
    }

    /// The server accepted `message_id` for `accepted`: into the delivery
    /// books and the counters.
    pub(crate) fn submitted(&self, message_id: &str, accepted: &[u32]) {
        let shared = self.shared;
        shared
            .delivery
            .submitted(message_id, accepted, Instant::now());
        shared.events.count(Counter::MessagesSubmitted, 1);
        shared
            .events
            .count(Counter::RecipientsSubmitted, accepted.len() as u64);
    }

    async fn send(&self, nth: u64) -> Result<Sent, Failure> {
        let shared = self.shared;
        let Outgoing {
            recipients,
            envelope,
            message,
            message_id,
        } = self.compose(nth)?;

        let target = &shared.target;
        let endpoint = &target.from_source(&target.smtp, self.index);
        let connected = smtp_connect_deadline(
            shared.connect_timeout,
            shared.connector.connect_smtp(
                endpoint,
                Flavor::Smtp,
                &target.tls,
                shared.connect_timeout,
            ),
        )
        .await?;
        let mut smtp = self.command("smtp.CONNECT", connected);
        let done = smtp.ehlo(&shared.client_name).await?;
        self.command("smtp.EHLO", done);
        if endpoint.tls == TlsMode::StartTls {
            let done = smtp_deadline(
                shared.connect_timeout,
                "STARTTLS",
                shared
                    .connector
                    .starttls_smtp(&mut smtp, endpoint, &target.tls),
            )
            .await?;
            self.command("smtp.STARTTLS", done);
            let done = smtp.ehlo(&shared.client_name).await?;
            self.command("smtp.EHLO", done);
        }
        let (login, password) = target.login(self.index, self.address);
        let encrypted = endpoint.tls != TlsMode::None;
        let policy = target.options.smtp_auth;
        if let Some(done) = smtp
            .authenticate_as(policy, encrypted, login, password)
            .await?
        {
            self.command("smtp.AUTH", done);
        }
        let sent = smtp
            .send_mail(self.address, &envelope, &message)
            .await
            .map_err(|error| transaction_failure(error, self.address, &envelope))?;
        self.command("smtp.TRANSACTION", sent.clone().map(|_| ()));
        let outcome = sent.value;
        let accepted: Vec<u32> = recipients
            .iter()
            .zip(&outcome.recipients)
            .filter(|(_, r)| r.delivered())
            .map(|(&u, _)| u)
            .collect();
        let refused = recipients.len() - accepted.len();
        if let Some(first) = outcome.recipients.iter().find(|r| !r.delivered()) {
            self.example("send", &refusal(first));
        }
        if !accepted.is_empty() {
            self.submitted(&message_id, &accepted);
            // state checks: the header and size each delivered copy must show
            shared
                .delivery
                .submitted_content(&message_id, &message, &accepted);
        }
        if refused > 0 {
            shared
                .events
                .count(Counter::RecipientsRefused, refused as u64);
        }
        if let Ok(quit) = smtp.quit().await {
            self.command("smtp.QUIT", quit);
        }

        let outcome = if refused > 0 {
            Outcome::Error("smtp:recipient-refused".into())
        } else {
            Outcome::Ok
        };
        Ok(Sent { outcome, message })
    }

    /// The addresses of `recipients`, each checked against the population
    /// before any SMTP transaction starts. One outside it is a bug: the run
    /// is halted rather than send to anyone else.
    fn envelope(&self, recipients: &[u32]) -> Result<Vec<String>, Failure> {
        let population = &self.shared.population;
        recipients
            .iter()
            .map(|&u| population.address(u))
            .collect::<Result<Vec<String>, _>>()
            .and_then(|envelope| population.admit(&envelope).map(|()| envelope))
            .map_err(|error| {
                self.shared.halt.raise(error);
                Failure::bare("outside-population", false)
            })
    }
}

/// A failed mail transaction, with the address it was about: the sender
/// when MAIL was refused, the recipients otherwise.
fn transaction_failure(error: SmtpError, sender: &str, envelope: &[String]) -> Failure {
    let mail_refused = matches!(
        error,
        SmtpError::UnexpectedReply {
            command: "MAIL",
            ..
        }
    );
    let failure = Failure::from(error);
    match envelope {
        _ if mail_refused => failure.about("sender", sender),
        [only] => failure.about("recipient", only),
        [first, rest @ ..] => {
            failure.about("recipients", &format!("{first} and {} more", rest.len()))
        }
        [] => failure,
    }
}

/// A recipient the server did not take the message for, as the user would
/// read it: refused at RCPT, or after the message (LMTP's reply per recipient).
fn refusal(recipient: &peakhour_smtp::RecipientOutcome) -> Failure {
    let detail = match &recipient.delivery {
        _ if !recipient.accepted() => format!("RCPT refused: {}", recipient.rcpt.value),
        Some(reply) => format!("DATA refused: {}", reply.value),
        None => "no message sent after RCPT".to_owned(),
    };
    Failure {
        kind: "smtp:recipient-refused".into(),
        session_lost: false,
        detail: Some(detail),
    }
    .about("recipient", &recipient.address)
}

/// A message composed for sending (see `Actor::compose`).
pub(crate) struct Outgoing {
    /// The users it is for (lists expanded).
    pub(crate) recipients: Vec<u32>,
    /// Their addresses, for the envelope.
    pub(crate) envelope: Vec<String>,
    /// The message as sent.
    pub(crate) message: Vec<u8>,
    /// Its Message-ID, which delivery tracking follows.
    pub(crate) message_id: String,
}

/// An RFC 5322 date in UTC, as a client writes into a message's `Date:`
/// header (`Sat, 21 Nov 2026 09:00:00 +0000`).
pub(crate) fn rfc5322(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// The value of the first header `name` in a message.
pub(crate) fn header(message: &[u8], name: &str) -> Option<String> {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(message.len());
    let head = std::str::from_utf8(&message[..end]).ok()?;
    head.split("\r\n").find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}
