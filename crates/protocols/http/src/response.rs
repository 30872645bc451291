//! Responses as the core hands them out.

/// Response headers in the order received, names lower-cased.
///
/// A value that is not UTF-8 is kept with U+FFFD in place of the bad bytes:
/// the headers peakhour reads (ETag, Location, Content-Type) are ASCII.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    entries: Vec<(String, String)>,
}

impl Headers {
    pub(crate) fn push(&mut self, name: &str, value: &[u8]) {
        let value = String::from_utf8_lossy(value);
        self.entries
            .push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }

    /// The first value of header `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (any case), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True if some value of `name` is a comma-separated list holding `token`
    /// (any case), as in `Connection: keep-alive, close`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// All headers, names lower-cased.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// How many header lines there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The status line and headers of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status code (100–999; httparse refuses anything else).
    pub status: u16,
    /// The reason phrase, as sent.
    pub reason: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// The headers.
    pub headers: Headers,
    /// False if the connection cannot carry another request after this
    /// response: the server said `Connection: close`, spoke HTTP/1.0 without
    /// `keep-alive`, or ended the body by closing.
    pub keep_alive: bool,
}

impl ResponseHead {
    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A complete response with its body decoded (chunked encoding removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status line and headers.
    pub head: ResponseHead,
    /// The body, at most [`crate::Limits::max_body`] bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.headers.get(name)
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        self.head.is_success()
    }

    /// The start of the body, escaped, for error messages.
    pub fn body_excerpt(&self) -> String {
        crate::excerpt(&self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_ignore_case_and_tokens_split_on_commas() {
        let mut headers = Headers::default();
        headers.push("ETag", b" \"abc\" ");
        headers.push("Connection", b"Keep-Alive, Close");
        headers.push("X-Bad", b"\xff");
        assert_eq!(headers.get("etag"), Some("\"abc\""));
        assert!(headers.has_token("connection", "close"));
        assert!(!headers.has_token("connection", "upgrade"));
        assert_eq!(headers.get("x-bad"), Some("\u{fffd}"));
        assert_eq!(headers.len(), 3);
    }
}
