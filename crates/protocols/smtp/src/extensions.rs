//! What a server announced in its EHLO/LHLO reply (RFC 5321 §4.1.1.1).

use crate::error::SmtpError;
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

    /// Which AUTH to send under `policy`, given what this EHLO reply offers
    /// and whether the connection is encrypted (`tls`). A mechanism asked for
    /// but not offered is an error that says why, when the reason is
    /// plain to see: most submission servers offer AUTH only after STARTTLS.
    pub fn auth_step(&self, policy: AuthPolicy, tls: bool) -> Result<AuthStep, SmtpError> {
        let only_after_starttls = self.auth.is_empty() && self.starttls && !tls;
        let offered = |name: &str| self.offers_auth(name);
        match policy {
            AuthPolicy::None => Ok(AuthStep::Skip),
            AuthPolicy::Plain if offered("PLAIN") => Ok(AuthStep::Plain),
            AuthPolicy::Login if offered("LOGIN") => Ok(AuthStep::Login),
            AuthPolicy::Auto if offered("PLAIN") => Ok(AuthStep::Plain),
            AuthPolicy::Auto if offered("LOGIN") => Ok(AuthStep::Login),
            _ if only_after_starttls => Err(SmtpError::NotOffered(
                "AUTH before STARTTLS (it offers STARTTLS: use a +starttls URL such as \
                 submission+starttls://host:587, or --smtp-auth none for a server that \
                 takes mail without AUTH)",
            )),
            AuthPolicy::Auto => Ok(AuthStep::Skip),
            AuthPolicy::Plain => Err(SmtpError::NotOffered("AUTH PLAIN")),
            AuthPolicy::Login => Err(SmtpError::NotOffered("AUTH LOGIN")),
        }
    }
}

/// How a client authenticates to a submission server (`--smtp-auth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthPolicy {
    /// AUTH PLAIN or LOGIN when the server offers either, none otherwise.
    #[default]
    Auto,
    /// Never AUTH: a relay that trusts the client's network.
    None,
    /// AUTH PLAIN, an error if it is not offered.
    Plain,
    /// AUTH LOGIN, an error if it is not offered.
    Login,
}

impl std::str::FromStr for AuthPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Ok(AuthPolicy::Auto),
            "none" => Ok(AuthPolicy::None),
            "plain" => Ok(AuthPolicy::Plain),
            "login" => Ok(AuthPolicy::Login),
            other => Err(format!("{other:?} is not one of auto, none, plain, login")),
        }
    }
}

/// What [`Extensions::auth_step`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStep {
    /// Send no AUTH.
    Skip,
    /// AUTH PLAIN.
    Plain,
    /// AUTH LOGIN.
    Login,
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
    fn issue_12_auth_follows_the_policy_and_says_when_it_needs_starttls() {
        let plain_only = extensions(b"250-mx\r\n250-STARTTLS\r\n250 SIZE 100\r\n");
        let error = plain_only
            .auth_step(AuthPolicy::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("submission+starttls://"), "{error}");
        assert_eq!(
            plain_only.auth_step(AuthPolicy::None, false).unwrap(),
            AuthStep::Skip
        );
        let relay = extensions(b"250-relay\r\n250 PIPELINING\r\n");
        assert_eq!(
            relay.auth_step(AuthPolicy::Auto, false).unwrap(),
            AuthStep::Skip
        );
        let error = relay.auth_step(AuthPolicy::Plain, true).unwrap_err();
        assert_eq!(error.to_string(), "the server does not offer AUTH PLAIN");
        let both = extensions(b"250-mx\r\n250 AUTH LOGIN PLAIN\r\n");
        assert_eq!(
            both.auth_step(AuthPolicy::Auto, true).unwrap(),
            AuthStep::Plain
        );
        assert_eq!(
            both.auth_step(AuthPolicy::Login, true).unwrap(),
            AuthStep::Login
        );
        assert_eq!("NONE".parse::<AuthPolicy>().unwrap(), AuthPolicy::None);
        assert!("cram".parse::<AuthPolicy>().is_err());
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
