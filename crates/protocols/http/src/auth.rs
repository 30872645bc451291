//! HTTP Basic authentication (RFC 7617).

use base64::Engine as _;
use peakhour_net::Secret;

/// A user name and password for `Authorization: Basic`.
///
/// The encoded header value is a [`Secret`] too: it is the password in
/// base64, and must stay out of logs just the same.
#[derive(Debug, Clone)]
pub struct BasicAuth {
    user: String,
    header_value: Secret<String>,
}

impl BasicAuth {
    /// Credentials for `user`. RFC 7617 forbids a colon in the user name;
    /// such a name is still encoded as given, and the server will refuse it.
    pub fn new(user: impl Into<String>, password: &Secret<String>) -> BasicAuth {
        let user = user.into();
        let pair = format!("{user}:{}", password.expose());
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair.as_bytes());
        BasicAuth {
            user,
            header_value: Secret::new(format!("Basic {encoded}")),
        }
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The value of the `Authorization` header.
    pub fn header_value(&self) -> &Secret<String> {
        &self.header_value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_rfc_7617_example_and_hides_it_from_debug() {
        // RFC 7617 §2: Aladdin / open sesame.
        let auth = BasicAuth::new("Aladdin", &Secret::new("open sesame".to_owned()));
        assert_eq!(
            auth.header_value().expose(),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        let debug = format!("{auth:?}");
        assert!(
            !debug.contains("QWxh") && !debug.contains("sesame"),
            "{debug}"
        );
    }
}
