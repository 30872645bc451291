//! Ports: is one free before `up`, and does a server answer on it after.

use std::io::{ErrorKind, Read};
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

/// Connects to `127.0.0.1:port` and reads the server's greeting line.
///
/// `tls` services (implicit TLS) are only connected to: their greeting comes
/// after a handshake this probe does not make.
pub(crate) fn probe(service: &str, port: u16, tls: bool, timeout: Duration) -> PortProbe {
    let address = format!("127.0.0.1:{port}");
    let result = greeting(&address, tls, timeout);
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

fn greeting(address: &str, tls: bool, timeout: Duration) -> Result<String, String> {
    let addr: SocketAddr = address.parse().map_err(|e| format!("{e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    if tls {
        return Ok("accepts connections (TLS)".into());
    }
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
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
    // Every lab service greets positively: SMTP/LMTP 220, IMAP "* OK", POP3 "+OK".
    if line.starts_with("220") || line.starts_with("* OK") || line.starts_with("+OK") {
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
        let found = probe("imap", port, false, Duration::from_secs(2));
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
        let found = probe("smtp", port, false, Duration::from_millis(300));
        assert!(!found.answers);
    }
}
