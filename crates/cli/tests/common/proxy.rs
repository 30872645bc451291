//! A line proxy in front of a lab server, for faults a real server will not
//! produce (issue 26): it passes the conversation through, and a hook may
//! answer a client's line itself (a refusal quoting the command, an endless
//! literal) or rewrite it. Once tripped, it counts every connection it
//! accepts instead, to show that a command opened none.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the proxy does with one line the client sent.
pub(crate) enum Hook {
    /// Passes it to the server.
    Forward,
    /// Sends this line (without its line break) to the server instead.
    Rewrite(String),
    /// Answers the client with these bytes; the server never sees the line.
    Answer(String),
    /// Answers the client with these bytes, then with endless `x`s until it
    /// hangs up (at most 16 GiB).
    Endless(String),
}

/// How the proxy treats a client's line (CR LF trimmed).
pub(crate) type HookFn = Arc<dyn Fn(&str) -> Hook + Send + Sync>;

/// What the proxy passes on for one line the server sent (CR LF kept) on
/// its `n`-th connection (from 0, in the order accepted): the same bytes,
/// or a corrupted answer (issue 27's state checks).
pub(crate) type AnswerFn = Arc<dyn Fn(usize, &[u8]) -> Vec<u8> + Send + Sync>;

/// A proxy on a free loopback port.
pub(crate) struct Proxy {
    /// Its port.
    pub port: u16,
    tripped: Arc<AtomicBool>,
    tripped_connections: Arc<AtomicUsize>,
}

impl Proxy {
    /// Proxies connections to `upstream` (`host:port`) through `hook`.
    pub(crate) fn start(upstream: String, hook: HookFn) -> Proxy {
        Proxy::start_rewriting(upstream, hook, None)
    }

    /// [`Proxy::start`], with every line the server sends passed through
    /// `answers` (when given) on its way to the client.
    pub(crate) fn start_rewriting(
        upstream: String,
        hook: HookFn,
        answers: Option<AnswerFn>,
    ) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let tripped = Arc::new(AtomicBool::new(false));
        let tripped_connections = Arc::new(AtomicUsize::new(0));
        let (trip, count) = (tripped.clone(), tripped_connections.clone());
        // Threads end with the test process; each connection ends when
        // either side hangs up.
        std::thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { continue };
                if trip.load(Ordering::SeqCst) {
                    count.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                let (upstream, hook) = (upstream.clone(), hook.clone());
                let answers = answers.clone();
                std::thread::spawn(move || relay(client, &upstream, &hook, answers, n));
            }
        });
        Proxy {
            port,
            tripped,
            tripped_connections,
        }
    }

    /// From now on, accepts connections only to count them.
    pub(crate) fn trip(&self) {
        self.tripped.store(true, Ordering::SeqCst);
    }

    /// Connections accepted since [`Proxy::trip`].
    pub(crate) fn connections_since_tripped(&self) -> usize {
        self.tripped_connections.load(Ordering::SeqCst)
    }
}

fn relay(
    client: TcpStream,
    upstream: &str,
    hook: &HookFn,
    answers: Option<AnswerFn>,
    connection: usize,
) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let (mut to_client, mut from_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        match answers {
            None => {
                let _ = std::io::copy(&mut from_server, &mut to_client);
            }
            Some(answers) => {
                let mut reader = BufReader::new(from_server);
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                    if to_client.write_all(&answers(connection, &line)).is_err() {
                        break;
                    }
                    line.clear();
                }
            }
        }
        let _ = to_client.shutdown(std::net::Shutdown::Both);
    });
    let mut to_server = server;
    let mut answer = client.try_clone().unwrap();
    let mut reader = BufReader::new(client);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let sent = match hook(text.trim_end_matches(['\r', '\n'])) {
            Hook::Forward => to_server.write_all(&line),
            Hook::Rewrite(new) => to_server.write_all(format!("{new}\r\n").as_bytes()),
            Hook::Answer(reply) => answer.write_all(reply.as_bytes()),
            Hook::Endless(head) => {
                let _ = answer.write_all(head.as_bytes());
                let fill = [b'x'; 65536];
                for _ in 0..(16u64 << 30) / fill.len() as u64 {
                    if answer.write_all(&fill).is_err() {
                        break;
                    }
                }
                break;
            }
        };
        if sent.is_err() {
            break;
        }
    }
    let _ = to_server.shutdown(std::net::Shutdown::Both);
}
