//! The exporter: a listening socket and a thread of its own that answers
//! scrapes with the live metrics.
//!
//! The thread runs its own single-threaded tokio runtime, so that a scrape
//! never waits for the run's busy runtime and the run never waits for a
//! slow scraper: the two share only the metrics' lock, which the run holds
//! for a few map lookups per event and a scrape for one copy.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};

use crate::encode::encode;
use crate::http::{self, MAX_HEAD, Request};
use crate::live::LiveMetrics;
use crate::observer::MetricsObserver;

/// The longest `--metrics-linger`.
pub const MAX_LINGER: Duration = Duration::from_secs(600);

/// Connections answered at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 16;

/// The time a connection has to send its request and take the response.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen for metrics on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The serving thread or its runtime could not be set up.
    #[error("cannot start the metrics server: {0}")]
    Start(#[source] std::io::Error),
    /// The linger is longer than [`MAX_LINGER`].
    #[error("--metrics-linger {0:?} is longer than {MAX_LINGER:?}")]
    Linger(Duration),
}

/// Serves a run's live metrics at `http://ADDRESS/metrics` while it lives.
///
/// An exporter started with no address serves nothing, and its observer
/// does nothing: the binary wires one in either way.
#[derive(Debug)]
pub struct Exporter {
    metrics: Arc<Mutex<LiveMetrics>>,
    server: Option<Server>,
    linger: Duration,
}

#[derive(Debug)]
struct Server {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    /// Binds `address`, if given, and serves from a thread of its own.
    /// After the run, [`finish`](Self::finish) keeps serving the final
    /// figures for `linger`, so that a scraper's last scrape sees them.
    pub fn start(address: Option<SocketAddr>, linger: Duration) -> Result<Self, MetricsError> {
        if linger > MAX_LINGER {
            return Err(MetricsError::Linger(linger));
        }
        let metrics = Arc::new(Mutex::new(LiveMetrics::default()));
        let server = address
            .map(|address| Server::start(address, metrics.clone()))
            .transpose()?;
        Ok(Exporter {
            metrics,
            server,
            linger,
        })
    }

    /// The address served, with the port the system chose for port 0.
    pub fn address(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(|s| s.address)
    }

    /// The observer to plug into the run.
    pub fn observer(&self) -> MetricsObserver {
        if self.server.is_some() {
            MetricsObserver::new(self.metrics.clone())
        } else {
            MetricsObserver::default()
        }
    }

    /// A copy of the metrics as they stand.
    pub fn snapshot(&self) -> LiveMetrics {
        self.metrics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The run is over: marks the phase `finished`, keeps serving for the
    /// linger, then stops. Dropping the exporter instead stops at once.
    pub fn finish(self) {
        self.metrics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished();
        if self.server.is_some() {
            std::thread::sleep(self.linger);
        }
    }
}

impl Server {
    fn start(address: SocketAddr, metrics: Arc<Mutex<LiveMetrics>>) -> Result<Self, MetricsError> {
        let bind = |source| MetricsError::Bind { address, source };
        let listener = std::net::TcpListener::bind(address).map_err(bind)?;
        listener
            .set_nonblocking(true)
            .map_err(MetricsError::Start)?;
        let address = listener.local_addr().map_err(MetricsError::Start)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MetricsError::Start)?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("peakhour-metrics".into())
            .spawn(move || runtime.block_on(serve(listener, metrics, stopped)))
            .map_err(MetricsError::Start)?;
        Ok(Server {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // The runtime is dropped with the thread, and every connection
            // still open with it.
            let _ = thread.join();
        }
    }
}

/// Accepts connections until told to stop, each answered on a task of its
/// own, at most [`MAX_CONNECTIONS`] at once.
async fn serve(
    listener: std::net::TcpListener,
    metrics: Arc<Mutex<LiveMetrics>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else {
                    // Out of descriptors, most likely: wait instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    continue;
                };
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CONNECTION_DEADLINE, answer(stream, &metrics)).await;
                    drop(permit);
                });
            }
        }
    }
}

/// Reads one request head and writes its response.
async fn answer(mut stream: TcpStream, metrics: &Mutex<LiveMetrics>) -> std::io::Result<()> {
    let mut received = Vec::with_capacity(1024);
    let mut buf = [0_u8; 1024];
    let reply = loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        received.extend_from_slice(&buf[..n]);
        // A head is never read past MAX_HEAD: parse_head calls one that
        // has not ended by then too long.
        received.truncate(MAX_HEAD);
        match http::parse_head(&received) {
            Ok(None) => continue,
            Ok(Some(request)) => break reply_to(&request, metrics),
            Err(error) => break http::bad_request(&error),
        }
    };
    stream.write_all(&reply).await?;
    stream.shutdown().await
}

fn reply_to(request: &Request, metrics: &Mutex<LiveMetrics>) -> Vec<u8> {
    match *request {
        Request::Metrics { format, head_only } => {
            // A copy under the lock, encoded after it: the run waits for the
            // copy only.
            let snapshot = metrics
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let cpu = peakhour_engine::process_cpu_time().map(|d| d.as_secs_f64());
            let body = encode(&snapshot, cpu, format);
            http::response(
                "200 OK",
                &[("Content-Type", format.content_type())],
                &body,
                head_only,
            )
        }
        Request::NotFound => http::response(
            "404 Not Found",
            &[("Content-Type", "text/plain; charset=utf-8")],
            "peakhour serves its metrics at /metrics\n",
            false,
        ),
        Request::MethodNotAllowed => http::response(
            "405 Method Not Allowed",
            &[
                ("Allow", "GET, HEAD"),
                ("Content-Type", "text/plain; charset=utf-8"),
            ],
            "only GET and HEAD\n",
            false,
        ),
    }
}
