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
    // One line per turn, from a line start: its bytes up to the next CR or LF
    // go over in one copy, and only its first byte and its end are looked at
    // (a copy byte by byte was most of this function's cost on every send).
    let mut rest = message;
    loop {
        let line_end = line_end(rest);
        let (line, after) = rest.split_at(line_end);
        if line.first() == Some(&b'.') {
            wire.push(b'.');
            added_dots += 1;
        }
        wire.extend_from_slice(line);
        rest = match after {
            // The end: a last line without a line end gets one.
            [] => {
                if !line.is_empty() {
                    wire.extend_from_slice(b"\r\n");
                }
                break;
            }
            [b'\r', b'\n', tail @ ..] | [_, tail @ ..] => tail,
        };
        wire.extend_from_slice(b"\r\n");
    }
    let size = wire.len() - added_dots;
    wire.extend_from_slice(b".\r\n");
    StuffedMessage { wire, size }
}

/// Where the first CR or LF in `bytes` is (`bytes.len()` if none). Sixteen
/// bytes at a time without an early exit, which the compiler turns into a few
/// vector compares, then byte by byte in the block that has one: a plain
/// `position` looks at one byte per step.
fn line_end(bytes: &[u8]) -> usize {
    const BLOCK: usize = 16;
    let mut start = 0;
    for block in bytes.chunks_exact(BLOCK) {
        let found = block
            .iter()
            .fold(false, |found, &b| found | (b == b'\r') | (b == b'\n'));
        if found {
            break;
        }
        start += BLOCK;
    }
    bytes[start..]
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .map_or(bytes.len(), |i| start + i)
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

    /// The rules above, one byte at a time: how `stuff` worked before it
    /// copied whole lines. Kept to check the faster one against.
    fn byte_by_byte(message: &[u8]) -> (Vec<u8>, usize) {
        let mut wire = Vec::new();
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
        (wire, size)
    }

    #[test]
    fn every_short_message_is_stuffed_as_byte_by_byte() {
        // Every message of up to 7 bytes over the bytes that matter, then the
        // same with a 16-byte block of text in front and behind, so that line
        // ends fall inside, at the edge of and after the blocks `line_end` skips.
        const ALPHABET: &[u8] = b".\r\na";
        let filler = b"0123456789abcdef";
        let mut checked = 0;
        for length in 0..=7u32 {
            for code in 0..ALPHABET.len().pow(length) {
                let mut message = Vec::new();
                let mut rest = code;
                for _ in 0..length {
                    message.push(ALPHABET[rest % ALPHABET.len()]);
                    rest /= ALPHABET.len();
                }
                for input in [
                    message.clone(),
                    [&filler[..], &message].concat(),
                    [&message[..], &filler[..], &filler[..5], &message].concat(),
                ] {
                    let stuffed = stuff(&input);
                    let (wire, size) = byte_by_byte(&input);
                    assert_eq!(
                        (stuffed.wire.escape_ascii().to_string(), stuffed.size),
                        (wire.escape_ascii().to_string(), size),
                        "input {:?}",
                        input.escape_ascii().to_string()
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 3 * (0..=7).map(|n| 4usize.pow(n)).sum::<usize>());
    }

    #[test]
    fn size_counts_crlf_lines_without_stuffing() {
        assert_eq!(stuff(b"a\n.b\n").size, b"a\r\n.b\r\n".len());
        assert_eq!(stuff(b"").size, 0);
        assert_eq!(stuff(b"x").size, 3);
    }
}
