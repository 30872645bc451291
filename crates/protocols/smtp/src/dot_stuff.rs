//! Turning a message into the bytes that follow DATA (RFC 5321 §4.5.2).

/// A message ready to go after the server's 354.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StuffedMessage {
    /// The body with CRLF line ends, dot-stuffed, ending in `CRLF.CRLF`.
    pub(crate) wire: Vec<u8>,
    /// The message size as SIZE= counts it (RFC 1870): CRLF line ends, before
    /// dot-stuffing, without the final `.CRLF`.
    pub(crate) size: usize,
}

/// Dot-stuffs `message` and appends the end-of-data marker.
///
/// * A line starting with `.` gets a second `.`.
/// * A bare LF, and a bare CR, become CRLF. Accepting either as a line end
///   would let a message smuggle a second one past a server that reads them
///   differently (the 2023 "SMTP smuggling" attacks), and RFC 5321 allows
///   neither.
/// * A message not ending in a line end gets a CRLF before `.CRLF`.
pub fn dot_stuff(message: &[u8]) -> Vec<u8> {
    stuff(message).wire
}

pub(crate) fn stuff(message: &[u8]) -> StuffedMessage {
    // Dots are rare and line ends are mostly CRLF already; a little slack
    // avoids a reallocation for typical mail.
    let mut wire = Vec::with_capacity(message.len() + message.len() / 64 + 5);
    let mut added_dots = 0;
    let mut at_line_start = true;
    let mut bytes = message.iter().copied().peekable();
    while let Some(byte) = bytes.next() {
        if at_line_start && byte == b'.' {
            wire.push(b'.');
            added_dots += 1;
        }
        match byte {
            b'\r' => {
                bytes.next_if_eq(&b'\n');
                wire.extend_from_slice(b"\r\n");
                at_line_start = true;
            }
            b'\n' => {
                wire.extend_from_slice(b"\r\n");
                at_line_start = true;
            }
            other => {
                wire.push(other);
                at_line_start = false;
            }
        }
    }
    if !at_line_start {
        wire.extend_from_slice(b"\r\n");
    }
    let size = wire.len() - added_dots;
    wire.extend_from_slice(b".\r\n");
    StuffedMessage { wire, size }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b".\r\n"),
            (b"Hi\r\n", b"Hi\r\n.\r\n"),
            (b"Hi", b"Hi\r\n.\r\n"),
            (b".", b"..\r\n.\r\n"),
            (b".\r\n", b"..\r\n.\r\n"),
            (b"a\r\n.\r\nb\r\n", b"a\r\n..\r\nb\r\n.\r\n"),
            (b"..x\r\n", b"...x\r\n.\r\n"),
            (b"a.b\r\n", b"a.b\r\n.\r\n"),
            (b"a\n.b\n", b"a\r\n..b\r\n.\r\n"),
            (b"a\n", b"a\r\n.\r\n"),
            (b"\n", b"\r\n.\r\n"),
            (b"a\rb", b"a\r\nb\r\n.\r\n"),
            (b"a\r\r\n.", b"a\r\n\r\n..\r\n.\r\n"),
            (b"x\n.\r\n", b"x\r\n..\r\n.\r\n"),
            (b"\r\n\r\n", b"\r\n\r\n.\r\n"),
            (b"caf\xc3\xa9\r\n", b"caf\xc3\xa9\r\n.\r\n"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                dot_stuff(input).escape_ascii().to_string(),
                expected.escape_ascii().to_string(),
                "input {:?}",
                input.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn size_counts_crlf_lines_without_stuffing() {
        assert_eq!(stuff(b"a\n.b\n").size, b"a\r\n.b\r\n".len());
        assert_eq!(stuff(b"").size, 0);
        assert_eq!(stuff(b"x").size, 3);
    }
}
