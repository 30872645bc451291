//! The tokio driver: keep-alive and reconnects against small loopback servers,
//! deadlines on a paused clock over in-memory streams.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_http::{
    ConnectionOptions, Dial, Endpoint, HttpConnection, HttpError, Method, Request, Security,
};
use peakhour_net::TransportError;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

/// Reads one request head (the requests here have no body).
async fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8(head).expect("UTF-8 request"))
}

/// A server that answers each connection's requests with `replies` in turn,
/// then closes that connection. Returns its port and the request lines seen.
async fn server(replies: Vec<Vec<&'static str>>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for per_connection in replies {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            for reply in per_connection {
                let Some(request) = read_request(&mut stream).await else {
                    break;
                };
                let first = request.lines().next().unwrap_or("").to_owned();
                log.lock().expect("lock").push(first);
                stream.write_all(reply.as_bytes()).await.expect("write");
            }
        }
    });
    (port, seen)
}

fn endpoint(port: u16) -> Endpoint {
    Endpoint {
        host: "127.0.0.1".into(),
        port,
        security: Security::Plain,
        tls: None,
        connect_timeout: Duration::from_secs(5),
        source: None,
    }
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const OK_CLOSE: &str = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";

#[tokio::test]
async fn requests_share_one_connection_until_the_server_says_close() {
    let (port, seen) = server(vec![vec![OK, OK, OK_CLOSE], vec![OK]]).await;
    let mut http = HttpConnection::new(endpoint(port), ConnectionOptions::default());
    for path in ["/1", "/2", "/3", "/4"] {
        let response = http
            .request(&Request::new(Method::Get, path))
            .await
            .unwrap();
        assert_eq!(response.value.body, b"ok");
    }
    assert_eq!(
        http.connects(),
        2,
        "three on the first connection, one on the second"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "GET /1 HTTP/1.1",
            "GET /2 HTTP/1.1",
            "GET /3 HTTP/1.1",
            "GET /4 HTTP/1.1"
        ]
    );
}

#[tokio::test]
async fn an_idempotent_request_is_sent_again_when_the_kept_alive_connection_was_closed() {
    // The first connection answers once and closes without saying so, as a
    // server's idle timeout does; the second request finds it dead.
    let (port, seen) = server(vec![vec![OK], vec![OK]]).await;
    let mut http = HttpConnection::new(endpoint(port), ConnectionOptions::default());
    http.request(&Request::new(Method::Get, "/a"))
        .await
        .unwrap();
    // Let the server close its side before the next request goes out.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let again = http
        .request(&Request::new(Method::Put, "/b"))
        .await
        .unwrap();
    assert_eq!(again.value.status(), 200);
    assert_eq!(http.connects(), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        ["GET /a HTTP/1.1", "PUT /b HTTP/1.1"]
    );
}

#[tokio::test]
async fn a_post_is_not_sent_again_on_a_dead_connection() {
    let (port, _seen) = server(vec![vec![OK], vec![OK]]).await;
    let mut http = HttpConnection::new(endpoint(port), ConnectionOptions::default());
    http.request(&Request::new(Method::Get, "/a"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let error = http
        .request(&Request::new(Method::Post, "/jmap/"))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), "closed" | "io"),
        "{error} ({})",
        error.kind()
    );
    // The next request gets a new connection.
    http.request(&Request::new(Method::Get, "/c"))
        .await
        .unwrap();
    assert_eq!(http.connects(), 2);
}

/// Hands out in-memory streams; the test keeps the server ends.
#[derive(Debug)]
struct MemoryDialer(Mutex<VecDeque<DuplexStream>>);

impl Dial for MemoryDialer {
    type Stream = DuplexStream;

    async fn dial(&self) -> Result<DuplexStream, TransportError> {
        self.0
            .lock()
            .expect("lock")
            .pop_front()
            .ok_or_else(|| TransportError::Io(std::io::ErrorKind::ConnectionRefused.into()))
    }

    fn host_header(&self) -> String {
        "memory.test".into()
    }
}

fn memory_connection(
    connections: usize,
    timeout: Duration,
) -> (HttpConnection<MemoryDialer>, Vec<DuplexStream>) {
    let mut clients = VecDeque::new();
    let mut servers = Vec::new();
    for _ in 0..connections {
        let (client, server) = tokio::io::duplex(64 * 1024);
        clients.push_back(client);
        servers.push(server);
    }
    let options = ConnectionOptions {
        request_timeout: timeout,
        ..ConnectionOptions::default()
    };
    (
        HttpConnection::new(MemoryDialer(Mutex::new(clients)), options),
        servers,
    )
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_and_the_next_request_reconnects() {
    let (mut http, mut servers) = memory_connection(2, Duration::from_secs(10));
    let started = tokio::time::Instant::now();
    let error = http
        .request(&Request::new(Method::Get, "/slow"))
        .await
        .unwrap_err();
    assert!(matches!(error, HttpError::Timeout { after } if after == Duration::from_secs(10)));
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert!(!http.is_connected());
    servers[1].write_all(OK.as_bytes()).await.unwrap();
    let response = http
        .request(&Request::new(Method::Get, "/fast"))
        .await
        .unwrap();
    assert_eq!(response.value.body, b"ok");
    assert_eq!(http.connects(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_request_leaves_no_half_read_response_behind() {
    let (mut http, mut servers) = memory_connection(2, Duration::from_secs(30));
    // Half a response, then the caller gives up (its own timeout).
    servers[0]
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        .await
        .unwrap();
    let request = Request::new(Method::Get, "/a");
    let cut = tokio::time::timeout(Duration::from_secs(1), http.request(&request)).await;
    assert!(cut.is_err());
    servers[1].write_all(OK.as_bytes()).await.unwrap();
    let response = http
        .request(&Request::new(Method::Get, "/b"))
        .await
        .unwrap();
    assert_eq!(
        response.value.body, b"ok",
        "the rest of /a is not taken for /b"
    );
    assert_eq!(http.connects(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_streamed_body_arrives_piece_by_piece() {
    let (http, mut servers) = memory_connection(1, Duration::from_secs(5));
    let mut server = servers.remove(0);
    server
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let mut stream = http
        .stream(&Request::new(Method::Get, "/events"))
        .await
        .unwrap()
        .value;
    assert_eq!(stream.head().status, 200);
    server.write_all(b"6\r\ndata:1\r\n").await.unwrap();
    assert_eq!(stream.next_chunk().await.unwrap(), Some(b"data:1".to_vec()));
    // Nothing more for a while: the caller's own timeout fires and loses nothing.
    let idle = tokio::time::timeout(Duration::from_secs(60), stream.next_chunk()).await;
    assert!(idle.is_err());
    server.write_all(b"2\r\nxy\r\n0\r\n\r\n").await.unwrap();
    assert_eq!(stream.next_chunk().await.unwrap(), Some(b"xy".to_vec()));
    assert_eq!(stream.next_chunk().await.unwrap(), None);
}
