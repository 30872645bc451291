//! CONDSTORE's `MODSEQ (n)` in a FETCH response (RFC 7162 §3.1.4: once a
//! session has enabled CONDSTORE, every FETCH the server sends carries it).
//!
//! This build of imap-codec decodes no MODSEQ: its `ext_condstore_qresync`
//! feature would change imap-types' enums for every crate that uses them,
//! through feature unification. The client tracks no MODSEQ, so a FETCH is
//! read with the item taken out; the state checks' model, which does check
//! MODSEQ, finds it with [`find_modseq`] too.

use std::ops::Range;

/// `MODSEQ (digits)` in `text` (any case): its byte range and its value.
pub fn find_modseq(text: &[u8]) -> Option<(Range<usize>, u64)> {
    let needle = b"MODSEQ (";
    let start = text
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))?;
    let digits_start = start + needle.len();
    let close = digits_start + text[digits_start..].iter().position(|&b| b == b')')?;
    let value = std::str::from_utf8(&text[digits_start..close])
        .ok()?
        .parse()
        .ok()?;
    Some((start..close + 1, value))
}

/// What a FETCH response is without its MODSEQ item.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WithoutModseq {
    /// The response with the item (and one separating space) taken out.
    Rest(Vec<u8>),
    /// MODSEQ was its only item: nothing is left for the client.
    Nothing,
}

/// `bytes` (`* n FETCH (...)`) without its MODSEQ item, if it has one on its
/// first line (before any literal: servers put it among the small items).
pub(crate) fn without_modseq(bytes: &[u8]) -> Option<WithoutModseq> {
    let line_end = bytes.windows(2).position(|w| w == b"\r\n")?;
    let line = &bytes[..line_end];
    let fetch = b" FETCH (";
    let open = line
        .windows(fetch.len())
        .position(|w| w.eq_ignore_ascii_case(fetch))?
        + fetch.len();
    if !line.starts_with(b"* ") {
        return None;
    }
    let (range, _) = find_modseq(&line[open..])?;
    let (mut start, mut end) = (open + range.start, open + range.end);
    if line.get(end) == Some(&b' ') {
        end += 1;
    } else if start > open && line[start - 1] == b' ' {
        start -= 1;
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(&bytes[end..]);
    if out.get(open..open + 3) == Some(b")\r\n".as_slice()) && out.len() == open + 3 {
        return Some(WithoutModseq::Nothing);
    }
    Some(WithoutModseq::Rest(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rest(bytes: &[u8]) -> String {
        match without_modseq(bytes) {
            Some(WithoutModseq::Rest(out)) => String::from_utf8(out).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_item_and_one_space_are_taken_out_wherever_it_stands() {
        assert_eq!(
            rest(b"* 3 FETCH (MODSEQ (7) FLAGS (\\Seen))\r\n"),
            "* 3 FETCH (FLAGS (\\Seen))\r\n"
        );
        assert_eq!(
            rest(b"* 3 FETCH (UID 9 MODSEQ (12) FLAGS ())\r\n"),
            "* 3 FETCH (UID 9 FLAGS ())\r\n"
        );
        assert_eq!(
            rest(b"* 3 FETCH (FLAGS () UID 9 MODSEQ (12))\r\n"),
            "* 3 FETCH (FLAGS () UID 9)\r\n"
        );
        assert_eq!(
            rest(b"* 1 FETCH (UID 4 modseq (5) BODY[] {5}\r\nhello)\r\n"),
            "* 1 FETCH (UID 4 BODY[] {5}\r\nhello)\r\n"
        );
    }

    #[test]
    fn a_fetch_of_modseq_alone_leaves_nothing() {
        assert_eq!(
            without_modseq(b"* 4 FETCH (MODSEQ (3))\r\n"),
            Some(WithoutModseq::Nothing)
        );
    }

    #[test]
    fn other_responses_and_malformed_modseq_are_left_alone() {
        assert_eq!(without_modseq(b"* 4 FETCH (FLAGS ())\r\n"), None);
        assert_eq!(without_modseq(b"* OK [HIGHESTMODSEQ 5] ok\r\n"), None);
        assert_eq!(without_modseq(b"* 4 FETCH (MODSEQ (x))\r\n"), None);
        assert_eq!(without_modseq(b"A1 OK FETCH (MODSEQ (3))\r\n"), None);
        assert_eq!(
            find_modseq(b"MODSEQ (18446744073709551615)").map(|m| m.1),
            Some(u64::MAX)
        );
    }
}
