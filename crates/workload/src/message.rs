//! Deterministic, realistic RFC 5322 / MIME messages from (seed, message id, mix entry).
//!
//! - Text bodies are sentences of business words, wrapped at 72 columns, in paragraphs.
//! - Attachments have the mix's raw size exactly: a Notepad file as 7bit `text/plain`;
//!   spreadsheets (`application/vnd.ms-excel`) and Word documents (`application/msword`) as
//!   base64 content that starts with the OLE2 compound-file signature (they are filler, not
//!   openable documents); bitmaps as a valid 24-bit `image/bmp`.
//! - LoadSim's embedded spreadsheet object (`Upsxlobj.msg`) becomes an *inline* part with a
//!   `Content-ID` inside the `multipart/mixed`, which is how a mail client carries an
//!   object embedded in the body.
//! - Every message carries `X-Peakhour-Run` and `X-Peakhour-Id` so delivered copies can be
//!   reconciled with submissions, and a Message-ID built from both.
//! - Lines end in CRLF and are at most 78 octets (far below RFC 5322's 998).
//!
//! The Date header is passed in by the caller: this crate has no clock.

use std::io::Write as _;

use crate::plan::MessageType;
use crate::profile::AttachmentKind;
use crate::rng::{Rng, domain};
use crate::words::{FILL, WORDS};

/// What one message is made of. Everything but `date` decides the bytes.
#[derive(Debug, Clone, Copy)]
pub struct MessageSpec<'a> {
    /// The run id (`X-Peakhour-Run`).
    pub run_id: &'a str,
    /// The peakhour message id (`X-Peakhour-Id`), unique within the run; also seeds the
    /// content.
    pub id: &'a str,
    /// The sender's address.
    pub from: &'a str,
    /// The addresses in `To:` (users and lists).
    pub to: &'a [String],
    /// An RFC 5322 date, e.g. `Tue, 04 Mar 2025 09:15:00 +0000`.
    pub date: &'a str,
    /// The mix entry: body size and attachment.
    pub kind: &'a MessageType,
}

/// Generates messages for one run seed.
#[derive(Debug, Clone, Copy)]
pub struct MessageGenerator {
    seed: u64,
}

impl MessageGenerator {
    /// A generator whose output depends only on `seed` and each message's spec.
    pub fn new(seed: u64) -> Self {
        MessageGenerator { seed }
    }

    /// The message as bytes.
    pub fn generate(&self, spec: &MessageSpec<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(spec.kind.nominal_size() as usize * 4 / 3 + 1024);
        self.write(spec, &mut out);
        out
    }

    /// Appends the message to `out` (reuse one buffer to avoid allocations).
    pub fn write(&self, spec: &MessageSpec<'_>, out: &mut Vec<u8>) {
        let mut rng = Rng::derive(self.seed, domain::MESSAGE, fnv1a(spec.id.as_bytes()), 0);
        let host = spec
            .from
            .rsplit_once('@')
            .map_or("peakhour.test", |(_, d)| d);
        let boundary = format!("=_ph_{:016x}", rng.next_u64());

        push(out, "Date: ");
        push(out, spec.date);
        push(out, "\r\nFrom: ");
        push(out, spec.from);
        push(out, "\r\n");
        address_header(out, "To", spec.to);
        push(out, "Subject: ");
        subject(&mut rng, out);
        push(out, "\r\nMessage-ID: <");
        atom(out, spec.id);
        out.push(b'.');
        atom(out, spec.run_id);
        out.push(b'@');
        push(out, host);
        push(out, ">\r\nMIME-Version: 1.0\r\nX-Peakhour-Run: ");
        push(out, spec.run_id);
        push(out, "\r\nX-Peakhour-Id: ");
        push(out, spec.id);
        push(out, "\r\nX-Mailer: peakhour\r\n");

        let sender = spec.from.split('@').next().unwrap_or(spec.from);
        match spec.kind.attachment {
            None => {
                push(out, TEXT_HEADERS);
                push(out, "\r\n");
                body_text(&mut rng, out, spec.kind.body as usize, sender);
            }
            Some(att) => {
                let _ = write!(
                    out,
                    "Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n\
                     This is a multi-part message in MIME format.\r\n\r\n--{boundary}\r\n"
                );
                push(out, TEXT_HEADERS);
                push(out, "\r\n");
                body_text(&mut rng, out, spec.kind.body as usize, sender);
                let _ = write!(out, "\r\n--{boundary}\r\n");
                let stem = attachment_stem(&mut rng, att.kind);
                let file = format!("{stem}.{}", att.kind.extension());
                let size = att.size as usize;
                match att.kind {
                    AttachmentKind::Text => {
                        let _ = write!(
                            out,
                            "Content-Type: text/plain; charset=us-ascii; name=\"{file}\"\r\n\
                             Content-Transfer-Encoding: 7bit\r\n\
                             Content-Disposition: attachment; filename=\"{file}\"\r\n\r\n"
                        );
                        // The CRLF before the closing delimiter belongs to the delimiter
                        // (RFC 2046 5.1.1), so write two more bytes to keep `size` of content.
                        text_exact(&mut rng, out, size + 2);
                    }
                    kind => {
                        let _ = write!(
                            out,
                            "Content-Type: {}; name=\"{file}\"\r\nContent-Transfer-Encoding: base64\r\n",
                            kind.content_type()
                        );
                        if kind == AttachmentKind::EmbeddedSpreadsheet {
                            let _ = write!(
                                out,
                                "Content-Disposition: inline; filename=\"{file}\"\r\nContent-ID: <obj."
                            );
                            atom(out, spec.id);
                            let _ = write!(out, "@{host}>\r\n\r\n");
                        } else {
                            let _ = write!(
                                out,
                                "Content-Disposition: attachment; filename=\"{file}\"\r\n\r\n"
                            );
                        }
                        let raw = binary_content(&mut rng, kind, size);
                        base64_lines(&raw, out);
                    }
                }
                let _ = write!(out, "--{boundary}--\r\n");
            }
        }
    }
}

const TEXT_HEADERS: &str =
    "Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n";

fn push(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

/// The run's part of every Message-ID it sends (`s{user}.{nth}.{this}@host`):
/// the run id with the characters a dot-atom does not allow replaced, so
/// that a delivered copy can be told to be this run's, not another's.
pub fn message_id_run_part(run_id: &str) -> String {
    let mut out = Vec::with_capacity(run_id.len());
    atom(&mut out, run_id);
    String::from_utf8_lossy(&out).into_owned()
}

/// Characters allowed in a Message-ID's dot-atom; anything else becomes `-`.
fn atom(out: &mut Vec<u8>, s: &str) {
    out.extend(s.bytes().map(|b| {
        if b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b) {
            b
        } else {
            b'-'
        }
    }));
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `To: a, b,` folded before 78 columns.
fn address_header(out: &mut Vec<u8>, name: &str, addrs: &[String]) {
    push(out, name);
    push(out, ":");
    let mut col = name.len() + 1;
    for (i, a) in addrs.iter().enumerate() {
        let sep = usize::from(i + 1 < addrs.len());
        if i > 0 && col + 1 + a.len() + sep > 76 {
            push(out, "\r\n");
            col = 0;
        }
        out.push(b' ');
        push(out, a);
        col += 1 + a.len();
        if sep == 1 {
            out.push(b',');
            col += 1;
        }
    }
    push(out, "\r\n");
}

fn word<'w>(rng: &mut Rng) -> &'w str {
    WORDS[rng.below(WORDS.len() as u64) as usize]
}

fn subject(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.below(4) == 0 {
        push(out, "Re: ");
    }
    let n = 3 + rng.below(5);
    for i in 0..n {
        let w = word(rng);
        if i == 0 {
            capitalized(out, w);
        } else {
            out.push(b' ');
            push(out, w);
        }
    }
}

fn capitalized(out: &mut Vec<u8>, w: &str) {
    let mut b = w.bytes();
    if let Some(first) = b.next() {
        out.push(first.to_ascii_uppercase());
        out.extend(b);
    }
}

/// A mail body of about `size` bytes: greeting, paragraphs, sign-off, ending in CRLF.
fn body_text(rng: &mut Rng, out: &mut Vec<u8>, size: usize, sender: &str) {
    let start = out.len();
    push(out, "Hello,\r\n\r\n");
    let sign_off = 2 + 9 + sender.len() + 2; // "\r\n" "Regards,\r\n" sender "\r\n"
    let used = out.len() - start;
    text_exact(rng, out, size.saturating_sub(used + sign_off).max(3));
    push(out, "\r\nRegards,\r\n");
    push(out, sender);
    push(out, "\r\n");
}

/// Sentences in paragraphs, wrapped at 72 columns, exactly `size` bytes (at least 3),
/// ending in ".\r\n".
fn text_exact(rng: &mut Rng, out: &mut Vec<u8>, size: usize) {
    let end = out.len() + size.max(3);
    let mut col = 0usize;
    let mut capitalize = true;
    let mut words_left = 6 + rng.below(10); // in this sentence
    let mut sentences_left = 3 + rng.below(4); // in this paragraph
    loop {
        if words_left == 0 {
            // Close the sentence only if another one still fits after it.
            if end - out.len() < 3 + 2 + 12 {
                break;
            }
            out.push(if rng.below(10) == 0 { b'?' } else { b'.' });
            col += 1;
            sentences_left -= 1;
            if sentences_left == 0 {
                push(out, "\r\n\r\n");
                col = 0;
                sentences_left = 3 + rng.below(4);
            }
            words_left = 6 + rng.below(10);
            capitalize = true;
            continue;
        }
        let w = word(rng);
        let sep = if col == 0 {
            0
        } else if col + 1 + w.len() > 72 {
            2
        } else {
            1
        };
        // Always keep room for the closing ".\r\n".
        if out.len() + sep + w.len() + 3 > end {
            break;
        }
        match sep {
            1 => {
                out.push(b' ');
                col += 1;
            }
            2 => {
                push(out, "\r\n");
                col = 0;
            }
            _ => {}
        }
        if capitalize {
            capitalized(out, w);
            capitalize = false;
        } else {
            push(out, w);
        }
        col += w.len();
        words_left -= 1;
    }
    // Fill to the exact size with short words, then close the sentence.
    loop {
        let need = end - out.len() - 3;
        if need < 2 {
            break;
        }
        if col + need > 72 && need >= 3 {
            push(out, "\r\n");
            col = 0;
            let take = (need - 2).min(FILL.len());
            push(out, FILL[take - 1]);
            col += take;
            continue;
        }
        let take = (need - 1).min(FILL.len());
        out.push(b' ');
        push(out, FILL[take - 1]);
        col += 1 + take;
    }
    if end - out.len() == 4 {
        out.push(b'!');
    }
    push(out, ".\r\n");
}

fn attachment_stem(rng: &mut Rng, kind: AttachmentKind) -> String {
    let w = word(rng);
    let n = rng.below(100);
    match kind {
        AttachmentKind::Text => format!("notes-{w}-{n}"),
        AttachmentKind::Spreadsheet => format!("{w}-figures-{n}"),
        AttachmentKind::EmbeddedSpreadsheet => format!("Book{n}"),
        AttachmentKind::Document => format!("{w}-draft-{n}"),
        AttachmentKind::Bitmap => format!("image{n}"),
    }
}

/// Raw attachment bytes of exactly `size`.
fn binary_content(rng: &mut Rng, kind: AttachmentKind, size: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(size);
    match kind {
        AttachmentKind::Bitmap => bitmap(rng, size, &mut buf),
        _ => compound_file(rng, size, &mut buf),
    }
    buf.truncate(size);
    buf.resize(size, 0);
    buf
}

/// OLE2 compound-file look-alike: the real 512-byte header signature and layout fields,
/// then 512-byte sectors of text records, numbers and zero padding, as in .xls/.doc files.
fn compound_file(rng: &mut Rng, size: usize, buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
    buf.extend_from_slice(&[0; 16]); // CLSID
    buf.extend_from_slice(&[0x3E, 0x00, 0x03, 0x00, 0xFE, 0xFF, 0x09, 0x00, 0x06, 0x00]);
    buf.resize(76, 0);
    buf.resize(512, 0xFF); // DIFAT: unused entries are FREESECT
    let mut sector = [0u8; 512];
    while buf.len() < size {
        let mut pos = 0;
        match rng.below(4) {
            0 => {
                // Numbers: little-endian doubles as in a worksheet's cells.
                rng.fill(&mut sector[..256]);
                sector[256..].fill(0);
            }
            1 => sector.fill(0),
            _ => {
                // Strings, as in a shared-string table or a document's text stream.
                while pos < 500 {
                    let w = word(rng).as_bytes();
                    let n = w.len().min(511 - pos);
                    sector[pos..pos + n].copy_from_slice(&w[..n]);
                    pos += n;
                    sector[pos] = b' ';
                    pos += 1;
                }
                sector[pos..].fill(0);
            }
        }
        buf.extend_from_slice(&sector);
    }
}

/// A valid 24-bit BMP of exactly `size` bytes (>= 54 + one row): a gradient with noise,
/// padded after the pixel array when the rows do not fill the size.
fn bitmap(rng: &mut Rng, size: usize, buf: &mut Vec<u8>) {
    const WIDTH: usize = 128;
    let row = WIDTH * 3; // already a multiple of 4
    let height = (size.saturating_sub(54) / row).max(1);
    let pixels = row * height;
    let file_size = size.max(54 + pixels) as u32;
    buf.extend_from_slice(b"BM");
    buf.extend_from_slice(&file_size.to_le_bytes());
    buf.extend_from_slice(&[0, 0, 0, 0]);
    buf.extend_from_slice(&54u32.to_le_bytes());
    buf.extend_from_slice(&40u32.to_le_bytes());
    buf.extend_from_slice(&(WIDTH as i32).to_le_bytes());
    buf.extend_from_slice(&(height as i32).to_le_bytes());
    buf.extend_from_slice(&1u16.to_le_bytes());
    buf.extend_from_slice(&24u16.to_le_bytes());
    buf.extend_from_slice(&0u32.to_le_bytes()); // BI_RGB
    buf.extend_from_slice(&(pixels as u32).to_le_bytes());
    buf.extend_from_slice(&2835u32.to_le_bytes()); // 72 dpi
    buf.extend_from_slice(&2835u32.to_le_bytes());
    buf.extend_from_slice(&[0; 8]);
    let (r0, g0, b0) = (
        rng.below(256) as usize,
        rng.below(256) as usize,
        rng.below(256) as usize,
    );
    let mut noise = [0u8; WIDTH];
    for y in 0..height {
        rng.fill(&mut noise);
        for (x, n) in noise.iter().enumerate() {
            let n = usize::from(*n & 0x0f);
            buf.push(((b0 + x + n) & 0xff) as u8);
            buf.push(((g0 + y * 2 + n) & 0xff) as u8);
            buf.push(((r0 + x / 2 + y + n) & 0xff) as u8);
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 in 76-character lines, each ending in CRLF.
fn base64_lines(raw: &[u8], out: &mut Vec<u8>) {
    out.reserve(raw.len() / 57 * 78 + 80);
    for line in raw.chunks(57) {
        let mut chunks = line.chunks_exact(3);
        for c in &mut chunks {
            let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
            out.extend_from_slice(&[
                B64[(n >> 18) as usize & 63],
                B64[(n >> 12) as usize & 63],
                B64[(n >> 6) as usize & 63],
                B64[n as usize & 63],
            ]);
        }
        match *chunks.remainder() {
            [a] => {
                let n = u32::from(a) << 16;
                out.extend_from_slice(&[
                    B64[(n >> 18) as usize & 63],
                    B64[(n >> 12) as usize & 63],
                    b'=',
                    b'=',
                ]);
            }
            [a, b] => {
                let n = (u32::from(a) << 16) | (u32::from(b) << 8);
                out.extend_from_slice(&[
                    B64[(n >> 18) as usize & 63],
                    B64[(n >> 12) as usize & 63],
                    B64[(n >> 6) as usize & 63],
                    b'=',
                ]);
            }
            _ => {}
        }
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg==\r\n"),
            ("fo", "Zm8=\r\n"),
            ("foo", "Zm9v\r\n"),
            ("foob", "Zm9vYg==\r\n"),
            ("fooba", "Zm9vYmE=\r\n"),
            ("foobar", "Zm9vYmFy\r\n"),
        ] {
            let mut out = Vec::new();
            base64_lines(raw.as_bytes(), &mut out);
            assert_eq!(String::from_utf8_lossy(&out), enc);
        }
    }

    #[test]
    fn text_is_exact_size() {
        let mut rng = Rng::derive(3, 3, 3, 3);
        for size in [3, 4, 5, 10, 17, 80, 512, 1000, 10_240] {
            let mut out = Vec::new();
            text_exact(&mut rng, &mut out, size);
            assert_eq!(out.len(), size, "{}", String::from_utf8_lossy(&out));
            assert!(out.ends_with(b".\r\n"));
        }
    }
}
