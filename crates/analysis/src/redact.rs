//! The one redaction step every server text passes through before it is
//! stored or printed (issue 26, item 3).
//!
//! A server may quote the command it refuses: `NO login failed for: A0001
//! LOGIN user2@bench.test hunter2`, or `535 5.7.8 rejected: AUTH PLAIN
//! AHVzZXIy…`. A [`Redactor`] knows the run's passwords and replaces each
//! with [`REDACTED`]: as itself, as IMAP's quoted string escapes it, and in
//! any base64 token that decodes to text holding it (AUTH LOGIN sends the
//! password alone, AUTH PLAIN `authzid\0login\0password`, HTTP Basic
//! `login:password`). Decoding the server's tokens, rather than searching
//! for the encodings, finds the password whatever the alignment of the
//! bytes around it, and a token cut short by a length limit still decodes
//! to the part it holds.

use std::collections::BTreeSet;

use base64::Engine as _;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Shortest base64 token that is decoded and checked: four characters are
/// three bytes, the shortest password prefix worth hiding.
const MIN_TOKEN: usize = 4;

/// The run's passwords, and the one step that takes them out of a text.
/// `Default` knows none and changes nothing.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Each password as sent (POP3 PASS, an IMAP atom or literal), and as
    /// an IMAP quoted string escapes it when that differs; longest first,
    /// so that a password holding another is replaced whole.
    plain: Vec<String>,
    /// The passwords' bytes, for what base64 tokens decode to.
    passwords: Vec<Vec<u8>>,
}

// By hand: the derived form would print the passwords.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} passwords)", self.passwords.len())
    }
}

impl Redactor {
    /// A redactor for these passwords (duplicates and empty ones ignored).
    pub fn new<'a>(passwords: impl IntoIterator<Item = &'a str>) -> Self {
        let unique: BTreeSet<&str> = passwords.into_iter().filter(|p| !p.is_empty()).collect();
        let mut plain: Vec<String> = unique
            .iter()
            .flat_map(|p| {
                let quoted = p.replace('\\', "\\\\").replace('"', "\\\"");
                [(*p).to_owned(), quoted]
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        plain.sort_by_key(|p| std::cmp::Reverse(p.len()));
        let passwords = unique.iter().map(|p| p.as_bytes().to_vec()).collect();
        Self { plain, passwords }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// `text` with every password, plain or in base64, replaced by
    /// [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for secret in &self.plain {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        // A text cut short in the middle of a password (a length limit
        // upstream) keeps no part of it of four characters or more.
        for secret in &self.plain {
            let bytes = secret.as_bytes();
            if let Some(n) = (MIN_TOKEN..bytes.len().min(out.len()) + 1)
                .rev()
                .find(|n| out.as_bytes().ends_with(&bytes[..*n]))
            {
                out.truncate(out.len() - n);
                out.push_str(REDACTED);
            }
        }
        self.redact_base64_tokens(&out)
    }

    /// Replaces every base64 token whose decoded bytes hold a password, a
    /// password's beginning (a token cut short), or a NUL between
    /// printable text (a SASL PLAIN message, whoever it is for).
    fn redact_base64_tokens(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find(is_base64_char) {
            out.push_str(&rest[..start]);
            let tail = &rest[start..];
            let end = tail.find(|c| !is_base64_char(c)).unwrap_or(tail.len());
            let token = &tail[..end];
            if token.len() >= MIN_TOKEN && self.holds_secret(&decode_lenient(token)) {
                out.push_str(REDACTED);
            } else {
                out.push_str(token);
            }
            rest = &tail[end..];
        }
        out.push_str(rest);
        out
    }

    fn holds_secret(&self, decoded: &[u8]) -> bool {
        if decoded.is_empty() {
            return false;
        }
        let sasl_plain = decoded.contains(&0)
            && decoded.len() >= 3
            && std::str::from_utf8(decoded)
                .is_ok_and(|t| t.chars().all(|c| c == '\0' || !c.is_control()));
        sasl_plain
            || self
                .passwords
                .iter()
                .any(|p| contains(decoded, p) || ends_with_start_of(decoded, p, MIN_TOKEN - 1))
    }
}

fn is_base64_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')
}

/// The bytes `token` stands for: padding dropped, and an incomplete last
/// group (a token cut short) decoded as far as it goes.
fn decode_lenient(token: &str) -> Vec<u8> {
    let body = token.trim_end_matches('=');
    if body.contains('=') {
        return Vec::new();
    }
    let whole = body.len() - body.len() % 4;
    let usable = if body.len() % 4 == 1 {
        whole
    } else {
        body.len()
    };
    LENIENT.decode(&body[..usable]).unwrap_or_default()
}

/// Standard base64 that takes a token cut short: no padding needed, and
/// the bits of an incomplete last group allowed.
const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Whether `text` ends with the first `min` or more bytes of `secret`: a
/// text or token cut short in the middle of it.
fn ends_with_start_of(text: &[u8], secret: &[u8], min: usize) -> bool {
    (min..=secret.len().min(text.len())).any(|n| text.ends_with(&secret[..n]))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn issue_26_item_3_plain_quoted_and_base64_forms_are_redacted() {
        let r = Redactor::new(["hunter2", "pa\"ss", ""]);
        let login = "NO login failed for: A0001 LOGIN user2@bench.test hunter2";
        assert_eq!(
            r.redact(login),
            "NO login failed for: A0001 LOGIN user2@bench.test <redacted>"
        );
        assert_eq!(
            r.redact("A2 LOGIN u \"pa\\\"ss\""),
            "A2 LOGIN u \"<redacted>\""
        );
        for sent in [
            b64(b"\0user2@bench.test\0hunter2"),
            b64(b"user2@bench.test\0user2@bench.test\0hunter2"),
            b64(b"hunter2"),
            b64(b"user2:hunter2"),
        ] {
            let text = format!("535 5.7.8 rejected: AUTH PLAIN {sent}");
            assert_eq!(r.redact(&text), "535 5.7.8 rejected: AUTH PLAIN <redacted>");
            // Cut short by a length limit: what is left is still hidden.
            let cut = &sent[..sent.len() - 3];
            assert!(!r.redact(cut).contains(cut), "{cut}");
        }
        // A text cut short in the middle of a password.
        assert_eq!(r.redact("LOGIN u hunte"), "LOGIN u <redacted>");
        // Another user's SASL PLAIN message is hidden too.
        assert_eq!(r.redact(&b64(b"\0x\0other")), REDACTED);
        // Ordinary text is left alone.
        let text = "NO [AUTHENTICATIONFAILED] Authentication failed. (0.001 + 0.000 secs)";
        assert_eq!(r.redact(text), text);
        assert_eq!(Redactor::default().redact(login), login);
        assert!(!format!("{r:?}").contains("hunter2"));
    }
}
