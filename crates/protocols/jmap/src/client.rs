//! The JMAP client over one kept-alive HTTP connection, and the push stream
//! over a second one.

use peakhour_http::{ConnectionOptions, Dial, Endpoint, HttpConnection, ResponseStream};
use peakhour_net::{Stopwatch, Timed};
use serde_json::Value;

use crate::calls;
use crate::envelope::{
    Email, GetResponse, Identity, JmapRequest, JmapResponse, Mailbox, QueryResponse, SetResponse,
    Upload,
};
use crate::eventsource::{EventStreamParser, PushEvent, StreamLimits, push_event};
use crate::exchange::{self, JmapError, SessionStep, WELL_KNOWN};
use crate::session::{MAIL, Session};

/// How many redirects session discovery follows.
const MAX_REDIRECTS: usize = 3;

/// One user's JMAP client.
///
/// [`JmapClient::discover`] fetches the session first; each later call is
/// one POST to the API URL and returns a [`Timed`] result (the metric name is
/// `jmap.` and the method, `jmap.Email/query`). A method's `error` response
/// is a [`JmapError::Method`]; the connection stays usable after it.
#[derive(Debug)]
pub struct JmapClient<D: Dial = Endpoint> {
    http: HttpConnection<D>,
    session: Option<Session>,
    account: String,
    /// Each request and its response, as JSON, while recording is on
    /// ([`JmapClient::record_exchanges`]); at most [`EXCHANGES_KEPT`].
    exchanges: Option<Vec<(Value, Value)>>,
}

/// Exchanges kept between two [`JmapClient::take_exchanges`]: the reader
/// takes them after every action, so a bound is only a guard; past it the
/// newest are dropped (a model fed fewer exchanges checks less, never
/// wrongly).
pub const EXCHANGES_KEPT: usize = 1_000;

impl<D: Dial> JmapClient<D> {
    /// A client over `http` (which carries the user's credentials).
    pub fn new(http: HttpConnection<D>) -> Self {
        Self {
            http,
            session: None,
            account: String::new(),
            exchanges: None,
        }
    }

    /// Starts (or stops) keeping every API request and its response as
    /// JSON, for a model of what the server told the session (state checks).
    pub fn record_exchanges(&mut self, on: bool) {
        self.exchanges = on.then(Vec::new);
    }

    /// The requests and responses kept since the last call, in the order
    /// they were made (`{"using", "methodCalls"}`, `{"methodResponses",
    /// "sessionState"}`); none unless recording.
    pub fn take_exchanges(&mut self) -> Vec<(Value, Value)> {
        self.exchanges
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The HTTP connection, for its counters.
    pub fn http(&self) -> &HttpConnection<D> {
        &self.http
    }

    /// The session, once discovered.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The mail account calls go to.
    pub fn account(&self) -> &str {
        &self.account
    }

    fn session_or_err(&self) -> Result<&Session, JmapError> {
        self.session
            .as_ref()
            .ok_or_else(|| JmapError::Session("not discovered yet".into()))
    }

    /// GET `/.well-known/jmap`, following up to 3 redirects on this server,
    /// and picks the primary mail account.
    pub async fn discover(&mut self) -> Result<Timed<()>, JmapError> {
        let watch = Stopwatch::start();
        let mut path = WELL_KNOWN.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let response = self
                .http
                .request(&exchange::session_request(&path))
                .await?
                .value;
            match exchange::session(&response)? {
                SessionStep::Redirect(next) => path = next,
                SessionStep::Session(session) => {
                    let account = session
                        .primary_account(MAIL)
                        .ok_or_else(|| JmapError::Session("no mail account".into()))?;
                    self.account = account.to_owned();
                    self.session = Some(*session);
                    return Ok(watch.finish(()));
                }
            }
        }
        Err(JmapError::Redirects(MAX_REDIRECTS))
    }

    /// Sends method calls and returns the envelope; see
    /// [`exchange::method_result`] for reading one call's result.
    pub async fn call(&mut self, request: &JmapRequest) -> Result<Timed<JmapResponse>, JmapError> {
        let api = self.session_or_err()?.api_path().to_owned();
        let timed = self
            .http
            .request(&exchange::api_request(&api, request))
            .await?;
        let value = exchange::api_response(&timed.value)?;
        if let Some(kept) = self.exchanges.as_mut()
            && kept.len() < EXCHANGES_KEPT
        {
            kept.push((request.to_value(), value.to_value()));
        }
        Ok(Timed {
            value,
            elapsed: timed.elapsed,
        })
    }

    async fn call_one<T: serde::de::DeserializeOwned>(
        &mut self,
        request: JmapRequest,
        method: &'static str,
    ) -> Result<Timed<T>, JmapError> {
        let timed = self.call(&request).await?;
        let value = exchange::method_result(&timed.value, method, "0")?;
        Ok(Timed {
            value,
            elapsed: timed.elapsed,
        })
    }

    /// `Mailbox/get` for every mailbox.
    pub async fn mailboxes(&mut self) -> Result<Timed<GetResponse<Mailbox>>, JmapError> {
        let request = calls::mailbox_get(&self.account);
        self.call_one(request, "Mailbox/get").await
    }

    /// `Email/query`: the newest `limit` messages in `mailbox`.
    pub async fn query(
        &mut self,
        mailbox: &str,
        limit: u32,
    ) -> Result<Timed<QueryResponse>, JmapError> {
        let request = calls::email_query(&self.account, mailbox, limit);
        self.call_one(request, "Email/query").await
    }

    /// `Email/get` of `ids` with `properties`; `with_bodies` fetches the text
    /// body values too (a read).
    pub async fn get(
        &mut self,
        ids: Vec<String>,
        properties: Vec<&'static str>,
        with_bodies: bool,
    ) -> Result<Timed<GetResponse<Email>>, JmapError> {
        let request = calls::email_get(&self.account, ids, properties, with_bodies);
        self.call_one(request, "Email/get").await
    }

    /// `Email/set` of one keyword (`$seen`, `$flagged` ...) on a message.
    pub async fn set_keyword(
        &mut self,
        id: &str,
        keyword: &str,
        on: bool,
    ) -> Result<Timed<SetResponse>, JmapError> {
        let request = calls::set_keyword(&self.account, id, keyword, on);
        self.call_one(request, "Email/set").await
    }

    /// `Email/set` moving a message between mailboxes.
    pub async fn move_email(
        &mut self,
        id: &str,
        from: &str,
        to: &str,
    ) -> Result<Timed<SetResponse>, JmapError> {
        let request = calls::move_email(&self.account, id, from, to);
        self.call_one(request, "Email/set").await
    }

    /// `Email/set` destroying messages.
    pub async fn destroy(&mut self, ids: Vec<String>) -> Result<Timed<SetResponse>, JmapError> {
        let request = calls::destroy(&self.account, ids);
        self.call_one(request, "Email/set").await
    }

    /// `Identity/get`: who the user may send as.
    pub async fn identities(&mut self) -> Result<Timed<GetResponse<Identity>>, JmapError> {
        let request = calls::identity_get(&self.account);
        self.call_one(request, "Identity/get").await
    }

    /// Uploads a blob (RFC 8620 §6.1).
    pub async fn upload(
        &mut self,
        media_type: &str,
        bytes: Vec<u8>,
    ) -> Result<Timed<Upload>, JmapError> {
        let path = self.session_or_err()?.upload_path(&self.account);
        let timed = self
            .http
            .request(&exchange::upload_request(&path, media_type, bytes))
            .await?;
        let value = exchange::upload(&timed.value)?;
        Ok(Timed {
            value,
            elapsed: timed.elapsed,
        })
    }

    /// Sends an uploaded message: `Email/import` into `mailbox` (Sent, marked
    /// seen), then `EmailSubmission/set` of the imported message as
    /// `identity`, in one request. Returns both results.
    pub async fn import_and_submit(
        &mut self,
        blob_id: &str,
        mailbox: &str,
        identity: &str,
    ) -> Result<Timed<(SetResponse, SetResponse)>, JmapError> {
        self.import_and_submit_to(blob_id, mailbox, identity, None)
            .await
    }

    /// `Email/import` of an uploaded message into `mailbox` with `keywords`.
    pub async fn import(
        &mut self,
        blob_id: &str,
        mailbox: &str,
        keywords: &[&str],
    ) -> Result<Timed<SetResponse>, JmapError> {
        let request = calls::import(&self.account, blob_id, mailbox, keywords);
        self.call_one(request, "Email/import").await
    }

    /// As [`JmapClient::import_and_submit`], with an explicit SMTP envelope.
    pub async fn import_and_submit_to(
        &mut self,
        blob_id: &str,
        mailbox: &str,
        identity: &str,
        envelope: Option<crate::envelope::SubmissionEnvelope>,
    ) -> Result<Timed<(SetResponse, SetResponse)>, JmapError> {
        let request =
            calls::import_and_submit_to(&self.account, blob_id, mailbox, identity, envelope);
        let timed = self.call(&request).await?;
        let imported = exchange::method_result(&timed.value, "Email/import", "0")?;
        let submitted = exchange::method_result(&timed.value, "EmailSubmission/set", "1")?;
        Ok(Timed {
            value: (imported, submitted),
            elapsed: timed.elapsed,
        })
    }
}

impl<D: Dial + Clone> JmapClient<D> {
    /// Opens the push stream (RFC 8620 §7.3) on a second connection, for
    /// changes of `types` (`*` for all), with a ping every `ping_seconds`.
    pub async fn event_stream(
        &self,
        options: ConnectionOptions,
        types: &str,
        ping_seconds: u32,
    ) -> Result<Timed<PushStream<D>>, JmapError> {
        let path = self
            .session_or_err()?
            .event_source_path(types, ping_seconds);
        let connection = HttpConnection::new(self.http_dialer().clone(), options);
        let timed = connection
            .stream(&exchange::event_source_request(&path))
            .await?;
        let stream = timed.value;
        if stream.head().status != 200 {
            return Err(JmapError::Status {
                request: "eventsource",
                status: stream.head().status,
                problem: None,
                excerpt: String::new(),
            });
        }
        Ok(Timed {
            value: PushStream {
                stream,
                parser: EventStreamParser::new(StreamLimits::default()),
            },
            elapsed: timed.elapsed,
        })
    }

    fn http_dialer(&self) -> &D {
        self.http.dialer()
    }
}

/// An open push stream.
#[derive(Debug)]
pub struct PushStream<D: Dial = Endpoint> {
    stream: ResponseStream<D>,
    parser: EventStreamParser,
}

impl<D: Dial> PushStream<D> {
    /// The next push event, or `None` when the server ends the stream.
    /// Cancel-safe: run it under a timeout or in a `select!`.
    pub async fn next(&mut self) -> Result<Option<PushEvent>, JmapError> {
        loop {
            if let Some(event) = self.parser.next_event()? {
                return push_event(&event).map(Some).map_err(|e| JmapError::Json {
                    what: format!("{} event", event.event),
                    reason: e.to_string(),
                });
            }
            match self.stream.next_chunk().await? {
                Some(bytes) => self.parser.enqueue_input(&bytes),
                None => return Ok(None),
            }
        }
    }
}
