//! Generated messages: deterministic, valid MIME, CRLF, sizes as the mix says, and fast.

use std::collections::HashSet;
use std::time::Instant;

use peakhour_workload::{
    AttachmentKind, MessageGenerator, MessageSpec, MessageType, Overrides, Plan, builtin,
};

const DATE: &str = "Tue, 04 Mar 2025 09:15:00 +0000";

fn plan() -> Plan {
    let profile = builtin("mmb-medium")
        .and_then(|b| Ok(b.profile()?))
        .expect("parses");
    Plan::resolve(&profile, &Overrides::default()).expect("resolves")
}

fn make(seed: u64, id: &str, kind: &MessageType) -> Vec<u8> {
    let to = vec![
        "user2@bench.test".to_owned(),
        "user3@bench.test".to_owned(),
        "list4@bench.test".to_owned(),
    ];
    MessageGenerator::new(seed).generate(&MessageSpec {
        run_id: "run-20250304T091500Z",
        id,
        from: "user1@bench.test",
        to: &to,
        date: DATE,
        kind,
    })
}

/// A MIME entity split into headers (unfolded, names lower-cased) and body.
struct Entity<'a> {
    headers: Vec<(String, String)>,
    body: &'a str,
}

impl Entity<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn entity(text: &str) -> Entity<'_> {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .expect("blank line after headers");
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.split("\r\n") {
        if line.starts_with(' ') || line.starts_with('\t') {
            let last = headers.last_mut().expect("continuation follows a header");
            last.1.push_str(line);
        } else {
            let (n, v) = line.split_once(':').expect("header has a colon");
            assert!(
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_graphic()),
                "{n}"
            );
            headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    Entity { headers, body }
}

fn boundary(content_type: &str) -> &str {
    let b = content_type
        .split("boundary=\"")
        .nth(1)
        .expect("boundary parameter");
    &b[..b.find('"').expect("closing quote")]
}

fn decode_base64(text: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 byte {c}"),
    };
    let mut out = Vec::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        assert!(
            line.len() <= 76 && line.len() % 4 == 0,
            "base64 line {}",
            line.len()
        );
        for q in line.as_bytes().chunks(4) {
            let pad = q.iter().filter(|&&c| c == b'=').count();
            let n = q[..4 - pad]
                .iter()
                .fold(0u32, |acc, &c| (acc << 6) | u32::from(val(c)))
                << (6 * pad);
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8][..3 - pad]);
        }
    }
    out
}

/// Checks line endings, lengths and structure; returns (text body, attachment raw bytes).
fn check(bytes: &[u8], kind: &MessageType) -> (String, Option<Vec<u8>>) {
    let text = std::str::from_utf8(bytes).expect("ASCII");
    assert!(text.is_ascii());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            assert!(i > 0 && bytes[i - 1] == b'\r', "bare LF at {i}");
        }
        if b == b'\r' {
            assert_eq!(bytes.get(i + 1), Some(&b'\n'), "bare CR at {i}");
        }
    }
    assert!(text.ends_with("\r\n"));
    for line in text.split("\r\n") {
        assert!(line.len() <= 78, "line of {}: {line}", line.len());
    }
    let top = entity(text);
    for h in [
        "date",
        "from",
        "to",
        "subject",
        "message-id",
        "mime-version",
        "x-peakhour-run",
        "x-peakhour-id",
        "content-type",
    ] {
        assert!(top.header(h).is_some(), "missing {h}");
    }
    assert_eq!(top.header("date"), Some(DATE));
    assert_eq!(top.header("mime-version"), Some("1.0"));
    assert_eq!(top.header("x-peakhour-run"), Some("run-20250304T091500Z"));
    let mid = top.header("message-id").expect("message-id");
    assert!(
        mid.starts_with('<') && mid.ends_with("@bench.test>"),
        "{mid}"
    );
    assert_eq!(top.header("to").map(|t| t.split(',').count()), Some(3));
    let ct = top.header("content-type").expect("content-type");
    match kind.attachment {
        None => {
            assert!(ct.starts_with("text/plain"), "{ct}");
            (top.body.to_owned(), None)
        }
        Some(att) => {
            assert!(ct.starts_with("multipart/mixed"), "{ct}");
            let b = boundary(ct);
            let delim = format!("\r\n--{b}\r\n");
            let close = format!("\r\n--{b}--\r\n");
            assert!(top.body.ends_with(&close), "closing boundary");
            let inner = &top.body[..top.body.len() - close.len()];
            // The preamble ends at the first delimiter (which starts a line).
            let first = format!("--{b}\r\n");
            let start = inner.find(&first).expect("first boundary");
            assert!(start == 0 || inner[..start].ends_with("\r\n"));
            let parts: Vec<&str> = inner[start + first.len()..].split(&delim).collect();
            assert_eq!(parts.len(), 2, "body part and attachment");
            for p in &parts {
                assert!(!p.contains(&format!("--{b}")), "boundary inside a part");
            }
            let body = entity(parts[0]);
            assert!(
                body.header("content-type")
                    .expect("ct")
                    .starts_with("text/plain")
            );
            let attachment = entity(parts[1]);
            let act = attachment.header("content-type").expect("attachment ct");
            assert!(act.starts_with(att.kind.content_type()), "{act}");
            let disposition = attachment
                .header("content-disposition")
                .expect("disposition");
            if att.kind == AttachmentKind::EmbeddedSpreadsheet {
                assert!(disposition.starts_with("inline"));
                assert!(attachment.header("content-id").is_some());
            } else {
                assert!(disposition.starts_with("attachment"));
            }
            let raw = match attachment.header("content-transfer-encoding") {
                Some("base64") => decode_base64(attachment.body),
                Some("7bit") => attachment.body.as_bytes().to_vec(),
                other => panic!("encoding {other:?}"),
            };
            (body.body.to_owned(), Some(raw))
        }
    }
}

#[test]
fn every_mix_entry_is_valid_mime_of_the_right_size() {
    let p = plan();
    for (i, kind) in p.mix().iter().enumerate() {
        for n in 0..20 {
            let bytes = make(7, &format!("s{i}.{n}"), kind);
            let (body, attachment) = check(&bytes, kind);
            let off = (body.len() as f64 - kind.body as f64).abs() / kind.body as f64;
            assert!(
                off < 0.03,
                "{}: body {} vs {}",
                kind.label,
                body.len(),
                kind.body
            );
            match (kind.attachment, attachment) {
                (None, None) => {}
                (Some(att), Some(raw)) => {
                    assert_eq!(raw.len() as u64, att.size, "{}", kind.label);
                    match att.kind {
                        AttachmentKind::Bitmap => {
                            assert_eq!(&raw[..2], b"BM");
                            let file_size = u32::from_le_bytes([raw[2], raw[3], raw[4], raw[5]]);
                            assert_eq!(file_size as usize, raw.len());
                            assert_eq!(u16::from_le_bytes([raw[28], raw[29]]), 24);
                        }
                        AttachmentKind::Spreadsheet
                        | AttachmentKind::Document
                        | AttachmentKind::EmbeddedSpreadsheet => {
                            assert_eq!(
                                &raw[..8],
                                &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]
                            );
                        }
                        AttachmentKind::Text => assert!(raw.is_ascii()),
                    }
                }
                other => panic!("{}: attachment mismatch {:?}", kind.label, other.0),
            }
        }
    }
}

#[test]
fn same_seed_same_bytes_and_ids_make_them_unique() {
    let p = plan();
    let kind = &p.mix()[3];
    assert_eq!(make(1, "s0.1", kind), make(1, "s0.1", kind));
    assert_ne!(make(1, "s0.1", kind), make(2, "s0.1", kind));
    assert_ne!(make(1, "s0.1", kind), make(1, "s0.2", kind));
    let mut ids = HashSet::new();
    for n in 0..500 {
        let bytes = make(1, &format!("s{n}.0"), &p.mix()[0]);
        let text = String::from_utf8(bytes).expect("ascii");
        let e = entity(&text);
        assert!(ids.insert(e.header("message-id").expect("id").to_owned()));
        assert_eq!(e.header("x-peakhour-id"), Some(format!("s{n}.0").as_str()));
    }
}

#[test]
fn bodies_are_varied_text_not_one_repeated_sentence() {
    let p = plan();
    let bytes = make(5, "s9.9", &p.mix()[2]); // 4 KB body
    let text = String::from_utf8(bytes).expect("ascii");
    let body = entity(&text).body.replace("\r\n", " ");
    let sentences: Vec<&str> = body
        .split(['.', '?'])
        .map(str::trim)
        .filter(|s| s.len() > 10)
        .collect();
    let distinct: HashSet<&str> = sentences.iter().copied().collect();
    assert!(sentences.len() >= 20, "{}", sentences.len());
    assert_eq!(distinct.len(), sentences.len(), "no sentence repeats");
    let words: HashSet<&str> = body.split_whitespace().collect();
    assert!(words.len() > 150, "{}", words.len());
}

/// Prints generation speed; asserts nothing about time (see examples/genrate.rs for a
/// release-mode figure).
#[test]
fn print_generation_speed() {
    let p = plan();
    let generator = MessageGenerator::new(1);
    let to = vec![p.address(1), p.address(2)];
    let from = p.address(0);
    let mut buf = Vec::new();
    let n = 5_000u64;
    let start = Instant::now();
    for i in 0..n {
        let choice = p.send_choice(0, i);
        let id = format!("s0.{i}");
        buf.clear();
        generator.write(
            &MessageSpec {
                run_id: "speed",
                id: &id,
                from: &from,
                to: &to,
                date: DATE,
                kind: &p.mix()[choice.mix],
            },
            &mut buf,
        );
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "generated {n} mmb-medium messages: {:.0} messages/s ({:.1} us each, this build profile)",
        n as f64 / secs,
        secs * 1e6 / n as f64
    );
}
