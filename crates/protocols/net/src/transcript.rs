//! C:/S: transcript files, as in the RFCs' examples, for testing sans-I/O cores.
//!
//! One line per step:
//!
//! * `S: text` — the server sends `text` followed by CRLF;
//! * `C: text` — the client is expected to send `text` followed by CRLF;
//! * `S| text` / `C| text` — the same without the CRLF (a truncated reply, or
//!   bytes that end mid-line);
//! * `# ...` — a comment; blank lines are ignored;
//! * `! key value` — a directive for the test that reads the file (for example
//!   `! expect error`).
//!
//! In `text`, `\r`, `\n`, `\t`, `\\` and `\xNN` are escapes, so hostile bytes
//! (NUL, bare LF, 8-bit) can be written down.

use std::path::{Path, PathBuf};

/// Who sends a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client (us).
    Client,
    /// The server.
    Server,
}

/// One step of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Bytes sent by one side.
    Bytes {
        /// Who sends them.
        side: Side,
        /// The bytes, escapes resolved and CRLF appended where the line asked.
        bytes: Vec<u8>,
        /// Line number in the file, for messages.
        line: usize,
    },
    /// A `! key value` directive.
    Directive {
        /// The first word after `!`.
        key: String,
        /// The rest of the line.
        value: String,
        /// Line number in the file.
        line: usize,
    },
}

/// Why a transcript could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// A line is not in the transcript format.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A parsed transcript.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Where it came from.
    pub path: PathBuf,
    /// Its steps, in order.
    pub steps: Vec<Step>,
}

impl Transcript {
    /// Reads and parses a transcript file.
    pub fn load(path: &Path) -> Result<Transcript, TranscriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses transcript text; `path` is used only in error messages.
    pub fn parse(path: &Path, text: &str) -> Result<Transcript, TranscriptError> {
        let syntax = |line: usize, message: String| TranscriptError::Syntax {
            path: path.to_owned(),
            line,
            message,
        };
        let mut steps = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if raw.trim().is_empty() || raw.starts_with('#') {
                continue;
            }
            if let Some(rest) = raw.strip_prefix("! ") {
                let (key, value) = rest.split_once(' ').unwrap_or((rest, ""));
                steps.push(Step::Directive {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    line,
                });
                continue;
            }
            let (side, crlf, body) = match (raw.get(..2), raw.get(2..3)) {
                (Some("S:"), Some(" ") | None) => (Side::Server, true, raw.get(3..).unwrap_or("")),
                (Some("C:"), Some(" ") | None) => (Side::Client, true, raw.get(3..).unwrap_or("")),
                (Some("S|"), Some(" ")) => (Side::Server, false, &raw[3..]),
                (Some("C|"), Some(" ")) => (Side::Client, false, &raw[3..]),
                _ => {
                    return Err(syntax(
                        line,
                        "expected `S: `, `C: `, `S| `, `C| `, `! ` or `#`".into(),
                    ));
                }
            };
            let mut bytes = unescape(body).map_err(|message| syntax(line, message))?;
            if crlf {
                bytes.extend_from_slice(b"\r\n");
            }
            steps.push(Step::Bytes { side, bytes, line });
        }
        Ok(Transcript {
            path: path.to_owned(),
            steps,
        })
    }

    /// Every `*.txt` transcript in a directory, sorted by file name.
    pub fn load_dir(dir: &Path) -> Result<Vec<Transcript>, TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: dir.to_owned(),
            source,
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|ext| ext == "txt") {
                paths.push(path);
            }
        }
        paths.sort();
        paths.iter().map(|p| Transcript::load(p)).collect()
    }

    /// The value of directive `key`, if the transcript has one.
    pub fn directive(&self, key: &str) -> Option<&str> {
        self.steps.iter().find_map(|step| match step {
            Step::Directive { key: k, value, .. } if k == key => Some(value.as_str()),
            _ => None,
        })
    }

    /// All bytes one side sends, concatenated (for parser-only tests and fuzz seeds).
    pub fn bytes_of(&self, who: Side) -> Vec<u8> {
        let mut out = Vec::new();
        for step in &self.steps {
            if let Step::Bytes { side, bytes, .. } = step
                && *side == who
            {
                out.extend_from_slice(bytes);
            }
        }
        out
    }
}

fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = text.get(i + 2..i + 4).ok_or("truncated \\x escape")?;
                let byte =
                    u8::from_str_radix(hex, 16).map_err(|_| format!("bad \\x escape {hex:?}"))?;
                out.push(byte);
                i += 2;
            }
            Some(other) => return Err(format!("unknown escape \\{}", *other as char)),
            None => return Err("a line cannot end in a lone backslash".into()),
        }
        i += 2;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sides_escapes_and_directives() {
        let text = "# greeting\n! expect error\nS: 220 hi\nC: EHLO x\nS| 250 trunc\\x00\\r\n";
        let t = Transcript::parse(Path::new("t.txt"), text).unwrap();
        assert_eq!(t.directive("expect"), Some("error"));
        assert_eq!(
            t.bytes_of(Side::Server),
            b"220 hi\r\n250 trunc\x00\r".to_vec()
        );
        assert_eq!(t.bytes_of(Side::Client), b"EHLO x\r\n".to_vec());
    }

    #[test]
    fn names_the_line_of_a_malformed_step() {
        let err = Transcript::parse(Path::new("bad.txt"), "S: ok\nX: nope\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad.txt:2: expected `S: `, `C: `, `S| `, `C| `, `! ` or `#`"
        );
    }
}
