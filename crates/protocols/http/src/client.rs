//! The sans-I/O client: requests in, bytes to write out; server bytes in,
//! responses out.

use crate::auth::BasicAuth;
use crate::decoder::{BodyEvent, Decoded, Expectation, Limits, ProtocolError, ResponseDecoder};
use crate::request::{Request, RequestError};
use crate::response::{Response, ResponseHead};
use crate::{Progress, excerpt};

/// An HTTP/1.1 client connection without I/O: one request at a time.
///
/// The caller writes [`HttpClient::pending_output`] to the server, passes
/// what it reads to [`HttpClient::enqueue_input`] (and calls
/// [`HttpClient::input_closed`] at end of stream), and asks
/// [`HttpClient::next_response`] until it is [`Progress::Event`]. A body to
/// be read as it arrives (an event stream) is sent with
/// [`HttpClient::send_streaming`] and read with [`HttpClient::next_event`].
///
/// The result never depends on how the input is split. Hostile input (a
/// malformed head, sizes over the [`Limits`], a truncated body) is a
/// [`ProtocolError`], never a panic, and nothing larger than the limits is
/// buffered.
#[derive(Debug)]
pub struct HttpClient {
    host: String,
    authorization: Option<BasicAuth>,
    decoder: ResponseDecoder,
    output: Vec<u8>,
    /// The head of the response being collected by `next_response`.
    head: Option<ResponseHead>,
    body: Vec<u8>,
}

impl HttpClient {
    /// A client that sends `Host: host` (`name:port` unless the port is the
    /// scheme's default) and, if given, Basic credentials on every request.
    pub fn new(host: impl Into<String>, auth: Option<BasicAuth>, limits: Limits) -> HttpClient {
        HttpClient {
            host: host.into(),
            authorization: auth,
            decoder: ResponseDecoder::new(limits),
            output: Vec::new(),
            head: None,
            body: Vec::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        self.decoder.limits()
    }

    /// The credentials' user, if the client sends any.
    pub fn user(&self) -> Option<&str> {
        self.authorization.as_ref().map(BasicAuth::user)
    }

    /// Queues `request`; its response is collected whole by
    /// [`HttpClient::next_response`], within [`Limits::max_body`].
    pub fn send(&mut self, request: &Request) -> Result<(), RequestError> {
        self.queue(request, true)
    }

    /// Queues `request`; its body is handed out piece by piece by
    /// [`HttpClient::next_event`] and is not capped (the reader bounds what
    /// it keeps).
    pub fn send_streaming(&mut self, request: &Request) -> Result<(), RequestError> {
        self.queue(request, false)
    }

    fn queue(&mut self, request: &Request, collect: bool) -> Result<(), RequestError> {
        if self.decoder.is_busy() {
            return Err(RequestError::Busy);
        }
        if !self.decoder.unread().is_empty() {
            return Err(RequestError::Unsolicited {
                excerpt: excerpt(self.decoder.unread()),
            });
        }
        request.validate()?;
        let credentials = self
            .authorization
            .as_ref()
            .map(|a| a.header_value().expose().as_str());
        request.encode_into(&self.host, credentials, &mut self.output);
        self.decoder.expect(Expectation {
            head_request: request.method() == crate::Method::Head,
            collect,
        });
        self.head = None;
        self.body.clear();
        Ok(())
    }

    /// Bytes waiting to be written.
    pub fn pending_output(&self) -> &[u8] {
        &self.output
    }

    /// Marks the first `n` bytes of [`HttpClient::pending_output`] written.
    pub fn consume_output(&mut self, n: usize) {
        self.output.drain(..n.min(self.output.len()));
    }

    /// Bytes the server sent.
    pub fn enqueue_input(&mut self, bytes: &[u8]) {
        self.decoder.enqueue_input(bytes);
    }

    /// The server closed its side: a body framed by the close ends here, and
    /// any other incomplete response is an error.
    pub fn input_closed(&mut self) {
        self.decoder.input_closed();
    }

    /// True while a request's response is awaited or being read.
    pub fn is_busy(&self) -> bool {
        self.decoder.is_busy()
    }

    /// True once any byte of the awaited response has arrived. A request that
    /// failed before that on a reused connection may be sent again on a new one.
    pub fn received_any(&self) -> bool {
        self.decoder.received_any()
    }

    /// Forgets the connection's state (pending output, partial response,
    /// error), for a fresh connection to the same server.
    pub fn reset(&mut self) {
        self.decoder.reset();
        self.output.clear();
        self.head = None;
        self.body = Vec::new();
    }

    /// The next complete response, its body decoded and collected.
    pub fn next_response(&mut self) -> Result<Progress<Response>, ProtocolError> {
        let max_body = self.decoder.limits().max_body;
        loop {
            let mut sink = std::mem::take(&mut self.body);
            let step = self.decoder.next_event(&mut sink);
            self.body = sink;
            match step? {
                Progress::NeedMoreInput => return Ok(Progress::NeedMoreInput),
                Progress::Event(Decoded::Head(head)) => self.head = Some(head),
                Progress::Event(Decoded::Data) => {
                    // Already enforced for collected bodies; this covers a
                    // streaming request read with this method.
                    if self.body.len() > max_body {
                        return Err(ProtocolError::BodyTooLarge { limit: max_body });
                    }
                }
                Progress::Event(Decoded::End) => {
                    let Some(head) = self.head.take() else {
                        continue;
                    };
                    let body = std::mem::take(&mut self.body);
                    return Ok(Progress::Event(Response { head, body }));
                }
            }
        }
    }

    /// The next piece of a streamed response: its head, body bytes as they
    /// arrive, then the end.
    pub fn next_event(&mut self) -> Result<Progress<BodyEvent>, ProtocolError> {
        let mut sink = Vec::new();
        Ok(match self.decoder.next_event(&mut sink)? {
            Progress::NeedMoreInput => Progress::NeedMoreInput,
            Progress::Event(Decoded::Head(head)) => Progress::Event(BodyEvent::Head(head)),
            Progress::Event(Decoded::Data) => Progress::Event(BodyEvent::Data(sink)),
            Progress::Event(Decoded::End) => Progress::Event(BodyEvent::End),
        })
    }
}
