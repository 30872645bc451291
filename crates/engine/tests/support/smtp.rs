//! The fake SMTP server: EHLO, AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP,
//! QUIT, one command at a time. An accepted message goes into the fake
//! system's mail queue.

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};

use super::FakeMail;

/// Serves one connection until QUIT or until the client goes away.
pub(crate) async fn serve(mail: FakeMail, stream: DuplexStream) {
    let _ = session(mail, stream).await;
}

async fn session(mail: FakeMail, stream: DuplexStream) -> std::io::Result<()> {
    let (read, mut out) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    out.write_all(b"220 fake ESMTP\r\n").await?;
    let mut recipients = Vec::new();
    while let Some(line) = lines.next_line().await? {
        let upper = line.to_ascii_uppercase();
        let reply = if upper.starts_with("EHLO") || upper.starts_with("LHLO") {
            "250-fake\r\n250 AUTH PLAIN\r\n"
        } else if upper.starts_with("AUTH PLAIN") {
            "235 2.7.0 ok\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            recipients.clear();
            "250 ok\r\n"
        } else if let Some(address) = upper.strip_prefix("RCPT TO:") {
            let refused = {
                let mut store = mail.store();
                store.rcpts += 1;
                store.refuse_every_other_rcpt && store.rcpts % 2 == 1
            };
            if refused {
                "550 5.1.1 no such user\r\n"
            } else {
                let address = address.trim().trim_start_matches('<').trim_end_matches('>');
                recipients.push(address.to_ascii_lowercase());
                "250 ok\r\n"
            }
        } else if upper == "DATA" {
            out.write_all(b"354 go ahead\r\n").await?;
            let mut message = Vec::new();
            while let Some(line) = lines.next_line().await? {
                if line == "." {
                    break;
                }
                let line = line.strip_prefix('.').unwrap_or(&line);
                message.extend_from_slice(line.as_bytes());
                message.extend_from_slice(b"\r\n");
            }
            mail.accept(std::mem::take(&mut recipients), &message);
            "250 queued\r\n"
        } else if upper == "RSET" || upper == "NOOP" {
            "250 ok\r\n"
        } else if upper == "QUIT" {
            out.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            "500 unknown\r\n"
        };
        out.write_all(reply.as_bytes()).await?;
        out.flush().await?;
    }
    Ok(())
}
