//! The HTTP side of a scrape, without a socket: a request head in, the
//! response's bytes out. One request per connection, answered with
//! `Connection: close`: a scraper asks once every few seconds, so keeping
//! connections alive would save nothing worth the state.

use crate::encode::Format;

/// The largest request head read; a scraper's is a few hundred bytes.
pub const MAX_HEAD: usize = 8 * 1024;

/// The most headers a request may have.
const MAX_HEADERS: usize = 32;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `GET` or `HEAD` of `/metrics`, in this format.
    Metrics {
        /// The format the `Accept` header prefers.
        format: Format,
        /// `HEAD`: the headers without the body.
        head_only: bool,
    },
    /// Any other path.
    NotFound,
    /// A method other than GET or HEAD.
    MethodNotAllowed,
}

/// Why a request head cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// Not HTTP/1.x, or malformed.
    #[error("malformed request head: {0}")]
    Malformed(String),
    /// Longer than [`MAX_HEAD`] without ending.
    #[error("request head longer than {MAX_HEAD} bytes")]
    TooLong,
}

/// Reads a request head from the bytes received so far: `Ok(None)` while
/// it is incomplete.
pub fn parse_head(received: &[u8]) -> Result<Option<Request>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let status = request
        .parse(received)
        .map_err(|e| HeadError::Malformed(e.to_string()))?;
    if status.is_partial() {
        return if received.len() >= MAX_HEAD {
            Err(HeadError::TooLong)
        } else {
            Ok(None)
        };
    }
    let head_only = match request.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => return Ok(Some(Request::MethodNotAllowed)),
    };
    let path = request.path.unwrap_or("/");
    let path = path.split_once('?').map_or(path, |(path, _query)| path);
    if path != "/metrics" {
        return Ok(Some(Request::NotFound));
    }
    let accept = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("accept"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned());
    Ok(Some(Request::Metrics {
        format: negotiate(accept.as_deref()),
        head_only,
    }))
}

/// The format an `Accept` header prefers: OpenMetrics unless the Prometheus
/// text format (`text/plain`) has a higher quality, so that a request
/// without the header, or with `*/*`, gets OpenMetrics.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::OpenMetrics;
    };
    let mut openmetrics = 0.0_f64;
    let mut text = 0.0_f64;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f64>().ok())
            .filter(|q| q.is_finite())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(quality),
            "text/plain" | "text/*" => text = text.max(quality),
            "*/*" => {
                openmetrics = openmetrics.max(quality);
                text = text.max(quality);
            }
            _ => {}
        }
    }
    if text > openmetrics {
        Format::Prometheus
    } else {
        Format::OpenMetrics
    }
}

/// A whole response: status line, headers, and the body unless `head_only`.
pub fn response(status: &str, headers: &[(&str, &str)], body: &str, head_only: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(body.as_bytes());
    }
    bytes
}

/// The response to a request that could not be read.
pub fn bad_request(error: &HeadError) -> Vec<u8> {
    let status = match error {
        HeadError::TooLong => "431 Request Header Fields Too Large",
        HeadError::Malformed(_) => "400 Bad Request",
    };
    response(
        status,
        &[("Content-Type", "text/plain; charset=utf-8")],
        &format!("{error}\n"),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Prometheus 2.42 sends (scrape.go's acceptHeader).
    const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn negotiation_prefers_openmetrics_unless_text_ranks_higher() {
        let cases = [
            (None, Format::OpenMetrics),
            (Some("*/*"), Format::OpenMetrics),
            (Some(PROMETHEUS_ACCEPT), Format::OpenMetrics),
            (Some("text/plain"), Format::Prometheus),
            (
                Some("text/plain;version=0.0.4;q=0.9,*/*;q=0.1"),
                Format::Prometheus,
            ),
            (
                Some("application/openmetrics-text; q=0.2, text/plain"),
                Format::Prometheus,
            ),
            (Some("application/json"), Format::OpenMetrics),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn heads_are_read_whole_and_routed() {
        let get = b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\n\r\n";
        for split in 0..get.len() {
            assert_eq!(parse_head(&get[..split]), Ok(None), "split at {split}");
        }
        assert_eq!(
            parse_head(get),
            Ok(Some(Request::Metrics {
                format: Format::Prometheus,
                head_only: false
            }))
        );
        let head = b"HEAD /metrics HTTP/1.0\r\n\r\n";
        assert_eq!(
            parse_head(head),
            Ok(Some(Request::Metrics {
                format: Format::OpenMetrics,
                head_only: true
            }))
        );
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\n\r\n"),
            Ok(Some(Request::NotFound))
        );
        assert_eq!(
            parse_head(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Ok(Some(Request::MethodNotAllowed))
        );
        assert!(matches!(
            parse_head(b"\x01\x02 nonsense\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
        let endless = [
            b"GET /metrics HTTP/1.1\r\nX: ".as_slice(),
            &[b'a'; MAX_HEAD],
        ]
        .concat();
        assert_eq!(parse_head(&endless), Err(HeadError::TooLong));
    }

    #[test]
    fn a_head_response_has_the_length_but_no_body() {
        let full = response("200 OK", &[("Content-Type", "text/plain")], "abc", false);
        let head = response("200 OK", &[("Content-Type", "text/plain")], "abc", true);
        assert!(full.ends_with(b"\r\n\r\nabc"));
        assert!(head.ends_with(b"Content-Length: 3\r\nConnection: close\r\n\r\n"));
    }
}
