//! Ports: is one free before `up`, and does a server answer on it after.

use std::io::{ErrorKind, Read, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use serde::Serialize;

/// What a probe of one endpoint found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortProbe {
    /// Service name (`imap`, `smtp`, ...).
    pub service: String,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// True if the server sent its greeting.
    pub answers: bool,
    /// The greeting's first line, or why there was none.
    pub detail: String,
}

/// True if nothing listens on `127.0.0.1:port`.
///
/// Binding is the only honest test: a connect can fail for other reasons.
pub(crate) fn port_is_free(port: u16) -> bool {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => true,
        Err(e) => e.kind() != ErrorKind::AddrInUse && e.kind() != ErrorKind::PermissionDenied,
    }
}

/// What a service says first, and so how it is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaks {
    /// A greeting line (SMTP, LMTP, IMAP, POP3).
    Greeting,
    /// Nothing before the client does; the probe only connects. Implicit TLS
    /// (the greeting comes after a handshake this probe does not make) and
    /// SMB (binary, client first).
    ConnectOnly(&'static str),
    /// HTTP: the probe asks `OPTIONS /` and reads the status line.
    Http,
}

/// How each lab service is probed.
pub(crate) fn speaks(service: &str) -> Speaks {
    match service {
        "imaps" | "submissions" => Speaks::ConnectOnly("accepts connections (TLS)"),
        "smb" => Speaks::ConnectOnly("accepts connections (SMB)"),
        "caldav" | "jmap" => Speaks::Http,
        _ => Speaks::Greeting,
    }
}

/// Connects to `127.0.0.1:port` and reads what the server says first: its
/// greeting line, or its answer to an HTTP request.
pub(crate) fn probe(service: &str, port: u16, speaks: Speaks, timeout: Duration) -> PortProbe {
    let address = format!("127.0.0.1:{port}");
    let result = first_line(&address, speaks, timeout);
    let (answers, detail) = match result {
        Ok(line) => (true, line),
        Err(reason) => (false, reason),
    };
    PortProbe {
        service: service.to_owned(),
        address,
        answers,
        detail,
    }
}

fn first_line(address: &str, speaks: Speaks, timeout: Duration) -> Result<String, String> {
    let addr: SocketAddr = address.parse().map_err(|e| format!("{e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    if let Speaks::ConnectOnly(detail) = speaks {
        return Ok(detail.into());
    }
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    if speaks == Speaks::Http {
        // HTTP/1.0, so the server closes after answering; no credentials, and
        // OPTIONS changes nothing.
        stream
            .set_write_timeout(Some(timeout))
            .and_then(|()| stream.write_all(b"OPTIONS / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"))
            .map_err(|e| format!("cannot send a request: {e}"))?;
    }
    let mut buf = [0u8; 512];
    let mut len = 0;
    while !buf[..len].contains(&b'\n') && len < buf.len() {
        match stream.read(&mut buf[len..]) {
            Ok(0) => return Err("closed without a greeting".into()),
            Ok(n) => len += n,
            Err(e) => return Err(format!("no greeting: {e}")),
        }
    }
    let line = String::from_utf8_lossy(&buf[..len]);
    let line = line
        .lines()
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_owned();
    // Every lab service greets positively: SMTP/LMTP 220, IMAP "* OK", POP3
    // "+OK"; an HTTP server answers with any status line (it is up).
    let positive = match speaks {
        Speaks::Http => line.starts_with("HTTP/1."),
        _ => line.starts_with("220") || line.starts_with("* OK") || line.starts_with("+OK"),
    };
    if positive {
        Ok(line)
    } else {
        Err(format!("unexpected greeting: {line}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_bound_port_is_not_free_and_answers_with_its_greeting() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(!port_is_free(port));
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            conn.write_all(b"* OK [CAPABILITY IMAP4rev1] ready\r\n")
                .unwrap();
        });
        let found = probe("imap", port, Speaks::Greeting, Duration::from_secs(2));
        server.join().unwrap();
        assert!(found.answers, "{found:?}");
        assert_eq!(found.detail, "* OK [CAPABILITY IMAP4rev1] ready");
    }

    #[test]
    fn a_closed_port_does_not_answer() {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let found = probe("smtp", port, Speaks::Greeting, Duration::from_millis(300));
        assert!(!found.answers);
    }

    #[test]
    fn an_http_server_is_asked_and_answers_with_its_status_line() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = [0u8; 64];
            let n = conn.read(&mut request).unwrap();
            conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        let found = probe("caldav", port, speaks("caldav"), Duration::from_secs(2));
        let request = server.join().unwrap();
        assert!(request.starts_with("OPTIONS / HTTP/1.0\r\n"), "{request}");
        assert!(found.answers, "{found:?}");
        assert_eq!(found.detail, "HTTP/1.0 200 OK");
        assert_eq!(
            speaks("smb"),
            Speaks::ConnectOnly("accepts connections (SMB)")
        );
    }
}
