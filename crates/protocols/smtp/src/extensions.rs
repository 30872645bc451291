//! What a server announced in its EHLO/LHLO reply (RFC 5321 §4.1.1.1).

use crate::reply::Reply;

/// The service extensions from an EHLO or LHLO reply.
///
/// Only what changes the client's behaviour or is worth reporting is kept;
/// unknown keywords are dropped so an idle connection stays small.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions {
    /// The first line of the reply: usually the server's name and a greeting.
    pub server: String,
    /// PIPELINING (RFC 2920): a transaction can go in one write.
    pub pipelining: bool,
    /// SIZE (RFC 1870). `Some(0)` when offered without a limit (or with one we
    /// could not read), `Some(n)` for a limit of `n` octets.
    pub size: Option<u64>,
    /// STARTTLS (RFC 3207).
    pub starttls: bool,
    /// AUTH mechanisms (RFC 4954), upper-cased, in the server's order.
    pub auth: Vec<String>,
    /// 8BITMIME (RFC 6152).
    pub eight_bit_mime: bool,
    /// ENHANCEDSTATUSCODES (RFC 2034).
    pub enhanced_status_codes: bool,
    /// SMTPUTF8 (RFC 6531).
    pub smtputf8: bool,
    /// CHUNKING (RFC 3030), BDAT.
    pub chunking: bool,
    /// BINARYMIME (RFC 3030).
    pub binary_mime: bool,
    /// DSN (RFC 3461).
    pub dsn: bool,
}

/// Most AUTH mechanisms remembered; a real server offers a handful.
const MAX_AUTH_MECHANISMS: usize = 16;

impl Extensions {
    /// Reads the keywords of a 250 reply to EHLO or LHLO. Never fails: an
    /// unknown or garbled line just adds nothing.
    pub fn from_reply(reply: &Reply) -> Self {
        let mut extensions = Extensions::default();
        let mut lines = reply.lines().iter();
        if let Some(first) = lines.next() {
            extensions.server = first.clone();
        }
        for line in lines {
            let mut words = line.split_ascii_whitespace();
            let Some(keyword) = words.next() else {
                continue;
            };
            let keyword = keyword.to_ascii_uppercase();
            // Old servers wrote `AUTH=LOGIN PLAIN` for Outlook Express.
            let (keyword, first_param) = match keyword.split_once('=') {
                Some((keyword, param)) => (keyword.to_owned(), Some(param.to_owned())),
                None => (keyword, None),
            };
            match keyword.as_str() {
                "PIPELINING" => extensions.pipelining = true,
                "STARTTLS" => extensions.starttls = true,
                "8BITMIME" => extensions.eight_bit_mime = true,
                "ENHANCEDSTATUSCODES" => extensions.enhanced_status_codes = true,
                "SMTPUTF8" => extensions.smtputf8 = true,
                "CHUNKING" => extensions.chunking = true,
                "BINARYMIME" => extensions.binary_mime = true,
                "DSN" => extensions.dsn = true,
                "SIZE" => {
                    let limit = first_param.as_deref().or_else(|| words.next());
                    extensions.size = Some(limit.and_then(|n| n.parse().ok()).unwrap_or(0));
                }
                "AUTH" => {
                    let mechanisms = first_param.into_iter().chain(words.map(str::to_owned));
                    for mechanism in mechanisms {
                        let mechanism = mechanism.to_ascii_uppercase();
                        if extensions.auth.len() < MAX_AUTH_MECHANISMS
                            && !mechanism.is_empty()
                            && !extensions.auth.contains(&mechanism)
                        {
                            extensions.auth.push(mechanism);
                        }
                    }
                }
                _ => {}
            }
        }
        extensions
    }

    /// True if the server offers the SASL mechanism `name` (case-insensitive).
    pub fn offers_auth(&self, name: &str) -> bool {
        self.auth.iter().any(|m| m.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::decode_reply;

    fn extensions(text: &[u8]) -> Extensions {
        let (_, reply) = decode_reply(text).unwrap();
        Extensions::from_reply(&reply)
    }

    #[test]
    fn reads_a_postfix_style_reply() {
        let e = extensions(
            b"250-mx.example\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-STARTTLS\r\n\
              250-AUTH PLAIN login\r\n250-AUTH=LOGIN\r\n250-ENHANCEDSTATUSCODES\r\n\
              250-8BITMIME\r\n250-DSN\r\n250-SMTPUTF8\r\n250 CHUNKING\r\n",
        );
        assert_eq!(e.server, "mx.example");
        assert!(e.pipelining && e.starttls && e.eight_bit_mime && e.dsn);
        assert!(e.enhanced_status_codes && e.smtputf8 && e.chunking);
        assert_eq!(e.size, Some(10_240_000));
        assert_eq!(e.auth, ["PLAIN", "LOGIN"]);
        assert!(e.offers_auth("plain"));
        assert!(!e.binary_mime);
    }

    #[test]
    fn size_without_a_number_means_no_declared_limit() {
        assert_eq!(extensions(b"250-x\r\n250 SIZE\r\n").size, Some(0));
        assert_eq!(extensions(b"250-x\r\n250 SIZE lots\r\n").size, Some(0));
        assert_eq!(extensions(b"250 x\r\n").size, None);
    }
}
