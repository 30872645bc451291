//! The dbench/NBENCH load file: a trace of one NetBench client, replayed by every client.
//!
//! Debian's `dbench` ships one as `/usr/share/dbench/client.txt`. Its README says it was
//! "derived from a network sniffer dump of a real netbench run". Each line is one SMB
//! operation, its arguments and the NT status the server answered in the trace:
//!
//! ```text
//! NTCreateX "\clients\client1\~dmtmp\WORD\CHAP10.DOC" 0x40 0x1 10003 NT_STATUS_OK
//! ReadX 10003 0 4096 4096 NT_STATUS_OK
//! Close 10003 NT_STATUS_OK
//! ```
//!
//! A line may start with a time in seconds (dbench's timed load files); `#` starts a
//! comment line. Paths are rewritten per client: backslashes become `/`, the leading `/`
//! goes, and the path component `client1` becomes the client's own (`client7`), so each
//! client works in its own directory as dbench's clients do. A path with a `..`
//! component is refused, so a load file cannot reach outside the target.

use std::fmt;

use crate::files::status::NtStatus;

/// The longest line accepted, in bytes; the longest in client.txt is about 130.
pub const MAX_LINE: usize = 4096;

/// A path from a load file, normalized (`/`-separated, relative) but not yet rewritten
/// for a client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoadPath(String);

impl LoadPath {
    /// A path as a load file writes it (`\clients\client1\a.doc`), normalized; the
    /// error says why it is refused (a `..` component, for one).
    pub fn from_trace(text: &str) -> Result<LoadPath, String> {
        normalize_path(text, "path")
    }

    /// The normalized path, as for client 1.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path for client `n`: the component `client1` replaced with `client{n}`.
    pub fn for_client(&self, n: u32) -> String {
        if n == 1 {
            return self.0.clone();
        }
        let own = format!("client{n}");
        self.0
            .split('/')
            .map(|c| if c == "client1" { own.as_str() } else { c })
            .collect::<Vec<_>>()
            .join("/")
    }
}

impl fmt::Display for LoadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A client's number for an open file, as the trace wrote it (`fnum`).
pub type Fnum = i64;

/// One operation of a load file, with its arguments as dbench names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadOp {
    /// Open or create (`create_disposition`: 1 open, 2 create, 3 open-if, 5 overwrite-if;
    /// `create_options` 0x1: a directory).
    NtCreateX {
        /// The file.
        path: LoadPath,
        /// NT create options.
        create_options: u32,
        /// NT create disposition.
        create_disposition: u32,
        /// The handle later lines use.
        fnum: Fnum,
    },
    /// Close a handle.
    Close {
        /// The handle.
        fnum: Fnum,
    },
    /// Rename a file.
    Rename {
        /// The current name.
        from: LoadPath,
        /// The new name.
        to: LoadPath,
    },
    /// Delete files (`attributes`: the search attributes).
    Unlink {
        /// The file.
        path: LoadPath,
        /// Search attributes.
        attributes: u32,
    },
    /// Delete a directory tree.
    Deltree {
        /// The directory.
        path: LoadPath,
    },
    /// Remove an empty directory.
    Rmdir {
        /// The directory.
        path: LoadPath,
    },
    /// Create a directory.
    Mkdir {
        /// The directory.
        path: LoadPath,
    },
    /// Query a file's information by path (`level`: the information class).
    QueryPathInformation {
        /// The file.
        path: LoadPath,
        /// Information level.
        level: u32,
    },
    /// Query an open file's information.
    QueryFileInformation {
        /// The handle.
        fnum: Fnum,
        /// Information level.
        level: u32,
    },
    /// Query the file system's information.
    QueryFsInformation {
        /// Information level.
        level: u32,
    },
    /// Set an open file's information.
    SetFileInformation {
        /// The handle.
        fnum: Fnum,
        /// Information level.
        level: u32,
    },
    /// List a directory by pattern.
    FindFirst {
        /// Directory and wildcard pattern.
        pattern: LoadPath,
        /// Information level.
        level: u32,
        /// Entries asked for.
        max_count: u32,
        /// Entries the trace's server returned.
        count: u32,
    },
    /// Write `size` bytes at `offset`; the trace's server wrote `ret_size`.
    WriteX {
        /// The handle.
        fnum: Fnum,
        /// Where the write starts.
        offset: u64,
        /// Bytes written.
        size: u32,
        /// Bytes the trace's server said it wrote.
        ret_size: u32,
    },
    /// Read `size` bytes at `offset`; the trace's server returned `ret_size`.
    ReadX {
        /// The handle.
        fnum: Fnum,
        /// Where the read starts.
        offset: u64,
        /// Bytes asked for.
        size: u32,
        /// Bytes the trace's server returned.
        ret_size: u32,
    },
    /// Lock a byte range.
    LockX {
        /// The handle.
        fnum: Fnum,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        size: u64,
    },
    /// Unlock a byte range.
    UnlockX {
        /// The handle.
        fnum: Fnum,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        size: u64,
    },
    /// Flush an open file.
    Flush {
        /// The handle.
        fnum: Fnum,
    },
    /// Pause the client (dbench: microseconds).
    Sleep {
        /// How long.
        micros: u64,
    },
}

impl LoadOp {
    /// The operation's name as the load file writes it.
    pub fn name(&self) -> &'static str {
        match self {
            LoadOp::NtCreateX { .. } => "NTCreateX",
            LoadOp::Close { .. } => "Close",
            LoadOp::Rename { .. } => "Rename",
            LoadOp::Unlink { .. } => "Unlink",
            LoadOp::Deltree { .. } => "Deltree",
            LoadOp::Rmdir { .. } => "Rmdir",
            LoadOp::Mkdir { .. } => "Mkdir",
            LoadOp::QueryPathInformation { .. } => "QUERY_PATH_INFORMATION",
            LoadOp::QueryFileInformation { .. } => "QUERY_FILE_INFORMATION",
            LoadOp::QueryFsInformation { .. } => "QUERY_FS_INFORMATION",
            LoadOp::SetFileInformation { .. } => "SET_FILE_INFORMATION",
            LoadOp::FindFirst { .. } => "FIND_FIRST",
            LoadOp::WriteX { .. } => "WriteX",
            LoadOp::ReadX { .. } => "ReadX",
            LoadOp::LockX { .. } => "LockX",
            LoadOp::UnlockX { .. } => "UnlockX",
            LoadOp::Flush { .. } => "Flush",
            LoadOp::Sleep { .. } => "Sleep",
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// The time the line is due at, in seconds from the client's start, when the file
    /// gives one.
    pub at: Option<f64>,
    /// The operation.
    pub op: LoadOp,
    /// The status the trace's server answered, which a replay expects.
    pub expect: NtStatus,
}

/// A line that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("load file line {line}: {message}")]
pub struct LoadFileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong, naming the argument.
    pub message: String,
}

/// Parses a whole load file, lazily: one item per operation line, skipping blank and
/// comment lines. Each line stands alone, so after an error the following lines still
/// parse, and a caller may report every bad line at once.
pub fn parse_loadfile(text: &str) -> impl Iterator<Item = Result<LoadLine, LoadFileError>> + '_ {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| parse_line(i + 1, line).transpose())
}

/// Parses one line; `Ok(None)` for a blank or comment line.
pub fn parse_line(line: usize, text: &str) -> Result<Option<LoadLine>, LoadFileError> {
    let fail = |message: String| LoadFileError { line, message };
    if text.len() > MAX_LINE {
        return Err(fail(format!(
            "{} bytes is longer than the {MAX_LINE} allowed",
            text.len()
        )));
    }
    let tokens = tokenize(text).map_err(fail)?;
    let mut tokens = tokens.as_slice();
    match tokens.first() {
        None => return Ok(None),
        Some(t) if t.text.starts_with('#') && !t.quoted => return Ok(None),
        _ => {}
    }
    let at = match tokens.first() {
        Some(t) if !t.quoted && t.text.starts_with(|c: char| c.is_ascii_digit()) => {
            let v: f64 = t
                .text
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| fail(format!("`{}` is not a time in seconds", t.text)))?;
            tokens = &tokens[1..];
            Some(v)
        }
        _ => None,
    };
    let Some((name, rest)) = tokens.split_first() else {
        return Err(fail("a time but no operation".into()));
    };
    if name.quoted {
        return Err(fail(format!("the operation `\"{}\"` is quoted", name.text)));
    }
    if name.text == "Sleep" {
        // dbench's Sleep has no status.
        let [micros] = rest else {
            return Err(fail(format!(
                "Sleep needs 1 argument (microseconds), got {}",
                rest.len()
            )));
        };
        let micros = number(micros, "microseconds").map_err(fail)?;
        return Ok(Some(LoadLine {
            line,
            at,
            op: LoadOp::Sleep { micros },
            expect: NtStatus::OK,
        }));
    }
    let Some((status, args)) = rest.split_last() else {
        return Err(fail(format!("{} has no status", name.text)));
    };
    let expect = if status.quoted {
        None
    } else {
        NtStatus::parse(&status.text)
    }
    .ok_or_else(|| {
        fail(format!(
            "the last field `{}` is not a status (NT_STATUS_NAME or 0x hex)",
            status.text
        ))
    })?;
    let op = parse_op(&name.text, args).map_err(fail)?;
    Ok(Some(LoadLine {
        line,
        at,
        op,
        expect,
    }))
}

/// The argument names of each operation, in order, and what each is.
fn signature(op: &str) -> Option<&'static [(&'static str, Arg)]> {
    use Arg::{Num, Path};
    Some(match op {
        "NTCreateX" => &[
            ("path", Path),
            ("create_options", Num),
            ("create_disposition", Num),
            ("fnum", Num),
        ],
        "Close" | "Flush" => &[("fnum", Num)],
        "Rename" => &[("from", Path), ("to", Path)],
        "Unlink" => &[("path", Path), ("attributes", Num)],
        "Deltree" | "Rmdir" | "Mkdir" => &[("path", Path)],
        "QUERY_PATH_INFORMATION" => &[("path", Path), ("level", Num)],
        "QUERY_FILE_INFORMATION" | "SET_FILE_INFORMATION" => &[("fnum", Num), ("level", Num)],
        "QUERY_FS_INFORMATION" => &[("level", Num)],
        "FIND_FIRST" => &[
            ("pattern", Path),
            ("level", Num),
            ("max_count", Num),
            ("count", Num),
        ],
        "WriteX" | "ReadX" => &[
            ("fnum", Num),
            ("offset", Num),
            ("size", Num),
            ("ret_size", Num),
        ],
        "LockX" | "UnlockX" => &[("fnum", Num), ("offset", Num), ("size", Num)],
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arg {
    Path,
    Num,
}

/// Parsed arguments in signature order.
struct Args<'a> {
    tokens: &'a [Token],
    names: &'static [(&'static str, Arg)],
}

impl Args<'_> {
    fn path(&self, i: usize) -> Result<LoadPath, String> {
        normalize_path(&self.tokens[i].text, self.names[i].0)
    }
    fn num<T: TryFrom<u64>>(&self, i: usize) -> Result<T, String> {
        let name = self.names[i].0;
        let v = number(&self.tokens[i], name)?;
        T::try_from(v).map_err(|_| format!("{name} `{}` is too large", self.tokens[i].text))
    }
    fn fnum(&self, i: usize) -> Result<Fnum, String> {
        let t = &self.tokens[i];
        match t.text.strip_prefix('-') {
            Some(rest) if !t.quoted => {
                let v = number(
                    &Token {
                        text: rest.to_owned(),
                        quoted: false,
                    },
                    "fnum",
                )?;
                i64::try_from(v)
                    .map(|v| -v)
                    .map_err(|_| format!("fnum `{}` is too large", t.text))
            }
            _ => self.num(i),
        }
    }
}

fn parse_op(name: &str, tokens: &[Token]) -> Result<LoadOp, String> {
    let names = signature(name).ok_or_else(|| format!("unknown operation `{name}`"))?;
    if tokens.len() != names.len() {
        let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "{name} needs {} argument{} ({}) before the status, got {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            list.join(" "),
            tokens.len()
        ));
    }
    let a = Args { tokens, names };
    Ok(match name {
        "NTCreateX" => LoadOp::NtCreateX {
            path: a.path(0)?,
            create_options: a.num(1)?,
            create_disposition: a.num(2)?,
            fnum: a.fnum(3)?,
        },
        "Close" => LoadOp::Close { fnum: a.fnum(0)? },
        "Flush" => LoadOp::Flush { fnum: a.fnum(0)? },
        "Rename" => LoadOp::Rename {
            from: a.path(0)?,
            to: a.path(1)?,
        },
        "Unlink" => LoadOp::Unlink {
            path: a.path(0)?,
            attributes: a.num(1)?,
        },
        "Deltree" => LoadOp::Deltree { path: a.path(0)? },
        "Rmdir" => LoadOp::Rmdir { path: a.path(0)? },
        "Mkdir" => LoadOp::Mkdir { path: a.path(0)? },
        "QUERY_PATH_INFORMATION" => LoadOp::QueryPathInformation {
            path: a.path(0)?,
            level: a.num(1)?,
        },
        "QUERY_FILE_INFORMATION" => LoadOp::QueryFileInformation {
            fnum: a.fnum(0)?,
            level: a.num(1)?,
        },
        "SET_FILE_INFORMATION" => LoadOp::SetFileInformation {
            fnum: a.fnum(0)?,
            level: a.num(1)?,
        },
        "QUERY_FS_INFORMATION" => LoadOp::QueryFsInformation { level: a.num(0)? },
        "FIND_FIRST" => LoadOp::FindFirst {
            pattern: a.path(0)?,
            level: a.num(1)?,
            max_count: a.num(2)?,
            count: a.num(3)?,
        },
        "WriteX" => LoadOp::WriteX {
            fnum: a.fnum(0)?,
            offset: a.num(1)?,
            size: a.num(2)?,
            ret_size: a.num(3)?,
        },
        "ReadX" => LoadOp::ReadX {
            fnum: a.fnum(0)?,
            offset: a.num(1)?,
            size: a.num(2)?,
            ret_size: a.num(3)?,
        },
        "LockX" => LoadOp::LockX {
            fnum: a.fnum(0)?,
            offset: a.num(1)?,
            size: a.num(2)?,
        },
        "UnlockX" => LoadOp::UnlockX {
            fnum: a.fnum(0)?,
            offset: a.num(1)?,
            size: a.num(2)?,
        },
        _ => unreachable!("every name with a signature is handled above"),
    })
}

struct Token {
    text: String,
    quoted: bool,
}

/// Splits on whitespace; `"..."` is one token (without the quotes) and may hold spaces.
fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = line.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let body_start = start + 1;
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => break i,
                    Some(_) => {}
                    None => {
                        return Err(format!(
                            "the quote opened at column {} is not closed",
                            line[..start].chars().count() + 1
                        ));
                    }
                }
            };
            if chars.peek().is_some_and(|&(_, c)| !c.is_whitespace()) {
                return Err(format!(
                    "the quoted field ending at column {} runs into the next one",
                    line[..end].chars().count() + 1
                ));
            }
            tokens.push(Token {
                text: line[body_start..end].to_owned(),
                quoted: true,
            });
        } else {
            let mut end = line.len();
            while let Some(&(i, c)) = chars.peek() {
                if c.is_whitespace() {
                    end = i;
                    break;
                }
                if c == '"' {
                    return Err(format!("a quote in the middle of `{}`", &line[start..=i]));
                }
                chars.next();
            }
            tokens.push(Token {
                text: line[start..end].to_owned(),
                quoted: false,
            });
        }
    }
    Ok(tokens)
}

/// A decimal number or `0x` hex, unquoted.
fn number(t: &Token, name: &str) -> Result<u64, String> {
    let parsed = if t.quoted {
        None
    } else if let Some(hex) = t
        .text
        .strip_prefix("0x")
        .or_else(|| t.text.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16).ok()
    } else if t.text.starts_with(|c: char| c.is_ascii_digit()) {
        t.text.parse().ok()
    } else {
        None
    };
    parsed.ok_or_else(|| format!("{name} `{}` is not a number", t.text))
}

fn normalize_path(text: &str, name: &str) -> Result<LoadPath, String> {
    let slashed = text.replace('\\', "/");
    let trimmed = slashed.trim_start_matches('/');
    if trimmed.is_empty() {
        return Err(format!("{name} `{text}` names the root"));
    }
    if trimmed.split('/').any(|c| c == "..") {
        return Err(format!("{name} `{text}` has a `..` component"));
    }
    if trimmed.contains('\0') {
        return Err(format!("{name} contains a NUL character"));
    }
    Ok(LoadPath(trimmed.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_rewritten_by_component() {
        let p = normalize_path(r"\clients\client1\~dmtmp\client10.doc", "path").expect("ok");
        assert_eq!(p.as_str(), "clients/client1/~dmtmp/client10.doc");
        assert_eq!(p.for_client(7), "clients/client7/~dmtmp/client10.doc");
        assert_eq!(p.for_client(1), p.as_str());
        assert!(normalize_path(r"\clients\..\etc", "path").is_err());
        assert!(normalize_path(r"\", "path").is_err());
    }

    #[test]
    fn tokens_keep_spaces_inside_quotes() {
        let t = tokenize(r#"Mkdir "\a b\c" NT_STATUS_OK"#).expect("ok");
        let texts: Vec<_> = t.iter().map(|t| (t.text.as_str(), t.quoted)).collect();
        assert_eq!(
            texts,
            [("Mkdir", false), (r"\a b\c", true), ("NT_STATUS_OK", false)]
        );
        assert!(tokenize(r#"Mkdir "\a NT_STATUS_OK"#).is_err());
        assert!(tokenize(r#"Mkdir "\a"b NT_STATUS_OK"#).is_err());
        assert!(tokenize(r#"Mk"dir NT_STATUS_OK"#).is_err());
    }
}
