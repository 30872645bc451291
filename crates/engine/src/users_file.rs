//! The users file (`--users-file`): one `login,password[,address]` line per
//! user, in CSV (RFC 4180, read with the `csv` crate), for mail runs and for
//! SMB file runs alike.
//!
//! - A password that holds a comma or a double quote is written in double
//!   quotes, with a quote inside doubled: `alice,"pa,ss",alice@corp.example`.
//!   Unquoted, its comma makes another column: a line of more than three
//!   columns is an error naming the line, never joined into the password
//!   (issue 26, item 8). The password is taken exactly as written between its
//!   commas.
//! - The address is the third column, or the login when the login is an
//!   address. Every address, and every login that holds an `@`, passes the
//!   one address check ([`peakhour_workload::address::check_address`]), so
//!   that `victim%gmail.com@bench.test` is refused with its line before any
//!   connection (issue 26, item 4).
//! - The file is UTF-8; a byte-order mark at its start is skipped. Blank
//!   lines and lines that start with `#` are skipped. A user is one line (a
//!   quote is closed on its line); logins and passwords hold no control
//!   characters.
//!
//! Every error names the line, from 1; the caller adds the file's name.

use std::fmt;

use peakhour_net::Secret;
use peakhour_workload::address::check_address;

/// One user of a users file, as written.
#[derive(Debug, Clone)]
pub struct UsersFileLine {
    /// The line it is on, from 1.
    pub line: usize,
    /// What the user logs in with.
    pub login: String,
    /// Its password.
    pub password: Secret<String>,
    /// The third column, checked to be an address, if there is one.
    pub address: Option<String>,
}

/// Why a users file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsersFileError {
    /// A line that is not a user.
    #[error("{line}: {why}")]
    Line {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No line gives a user.
    #[error("holds no users (only blank lines and # comments)")]
    Empty,
}

impl UsersFileError {
    /// The error after the file's name: `users.csv:4: ...` for a line,
    /// `users.csv: holds no users ...` for the whole file.
    pub fn in_file(&self, path: &dyn fmt::Display) -> String {
        match self {
            Self::Line { .. } => format!("{path}:{self}"),
            Self::Empty => format!("{path}: {self}"),
        }
    }
}

/// Reads the users of a users file's bytes, in order.
pub fn parse_users_file(bytes: &[u8]) -> Result<Vec<UsersFileLine>, UsersFileError> {
    let text = std::str::from_utf8(bytes).map_err(|error| {
        let line = bytes[..error.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        UsersFileError::Line {
            line,
            why: "is not UTF-8 (a users file is UTF-8 text)".into(),
        }
    })?;
    // A byte-order mark (Windows editors write one) is not part of the first login.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut users = Vec::new();
    // Line by line, each line one CSV record: the line numbers are the
    // file's own, and a quoted field cannot run on into the next line.
    for (index, text) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = record(text).map_err(|why| UsersFileError::Line { line, why })?;
        let fields: Vec<&str> = fields.iter().collect();
        let user = parse_fields(&fields).map_err(|why| UsersFileError::Line { line, why })?;
        users.push(UsersFileLine {
            line,
            login: user.0,
            password: Secret::new(user.1),
            address: user.2,
        });
    }
    if users.is_empty() {
        return Err(UsersFileError::Empty);
    }
    Ok(users)
}

/// The fields of one line, read as CSV.
fn record(line: &str) -> Result<csv::StringRecord, String> {
    if line.matches('"').count() % 2 == 1 {
        return Err("has a double quote that is not closed on the line".into());
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(line.as_bytes());
    let mut record = csv::StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(true) => Ok(record),
        Ok(false) => Err("expected `login,password[,address]`".into()),
        Err(error) => Err(format!("does not read as CSV: {error}")),
    }
}

/// One line's columns: login, password and address, checked.
fn parse_fields(fields: &[&str]) -> Result<(String, String, Option<String>), String> {
    let (login, password, address) = match *fields {
        [login, password] => (login, password, None),
        [login, password, address] => (login, password, Some(address.trim())),
        [_] => return Err("expected `login,password[,address]`".into()),
        _ => {
            return Err(format!(
                "{} columns, where `login,password[,address]` has at most 3: a password \
                 with a comma must be in double quotes (alice,\"pa,ss\",alice@corp.example)",
                fields.len()
            ));
        }
    };
    let login = login.trim();
    if login.is_empty() {
        return Err("empty login".into());
    }
    if login.chars().any(char::is_control) || password.chars().any(char::is_control) {
        return Err("the login or the password holds a control character".into());
    }
    if login.contains('@') {
        check_address(login).map_err(|error| format!("the login: {error}"))?;
    }
    match address {
        Some("") => Err("the third column (the address) is empty".into()),
        Some(address) => {
            check_address(address).map_err(|error| format!("the address: {error}"))?;
            Ok((login.into(), password.into(), Some(address.into())))
        }
        None => Ok((login.into(), password.into(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<UsersFileLine>, UsersFileError> {
        parse_users_file(text.as_bytes())
    }

    fn refused(text: &str) -> (usize, String) {
        match parse(text).expect_err(text) {
            UsersFileError::Line { line, why } => (line, why),
            UsersFileError::Empty => panic!("{text}: empty"),
        }
    }

    #[test]
    fn lines_give_login_password_and_address_with_quoted_commas() {
        let users =
            parse("# users\n\nalice,s3cret,alice@corp.example\r\nbob@x.test,\"pa,ss\"\n").unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!((users[0].line, users[0].login.as_str()), (3, "alice"));
        assert_eq!(users[0].address.as_deref(), Some("alice@corp.example"));
        assert_eq!(users[1].line, 4);
        assert_eq!(users[1].password.expose(), "pa,ss");
        assert_eq!(users[1].address, None);
        let quoted = parse("carol@x.test,\"say \"\"hi\"\"\",carol@x.test\n").unwrap();
        assert_eq!(quoted[0].password.expose(), "say \"hi\"");
    }

    #[test]
    fn issue_26_item_8_a_byte_order_mark_is_not_part_of_the_first_login() {
        let users = parse("\u{feff}user1@bench.test,pw\nuser2@bench.test,pw\n").unwrap();
        assert_eq!(users[0].login, "user1@bench.test");
        let users = parse("\u{feff}# a comment first\nuser1@bench.test,pw\n").unwrap();
        assert_eq!(users[0].login, "user1@bench.test");
    }

    #[test]
    fn issue_26_item_8_an_extra_column_is_an_error_naming_the_line_not_part_of_the_password() {
        let (line, why) = refused(
            "user1@bench.test,pw\nuser2@bench.test,pw,user2@bench.test,user1@bench.test> NOTIFY=SUCCESS\n",
        );
        assert_eq!(line, 2);
        assert!(
            why.contains("4 columns") && why.contains("double quotes"),
            "{why}"
        );
        // The issue's line: junk in the third column is an address error, not password.
        let (line, why) = refused("user1@bench.test,pw,user1@bench.test> NOTIFY=SUCCESS\n");
        assert_eq!(line, 1);
        assert!(why.starts_with("the address:"), "{why}");
        // An unquoted comma in a password makes a third column that is not an address.
        let (_, why) = refused("bob@x.test,pa,ss\n");
        assert!(why.contains("\"ss\" is not a plain mail address"), "{why}");
        let (_, why) = refused("bob@x.test,pw,\n");
        assert!(why.contains("empty"), "{why}");
    }

    #[test]
    fn issue_26_item_4_routing_addresses_in_a_users_file_are_refused_with_their_line() {
        for address in [
            "victim%gmail.com@bench.test",
            "victim@gmail.com@bench.test",
            "@gmail.com:victim@bench.test",
            "\"victim@gmail.com\"@bench.test",
            "gmail.com!victim@bench.test",
        ] {
            let quoted = address.replace('"', "\"\"");
            for text in [
                format!("ok@bench.test,pw\n\"{quoted}\",pw\n"),
                format!("ok@bench.test,pw\nvictim,pw,\"{quoted}\"\n"),
            ] {
                let (line, why) = refused(&text);
                assert_eq!(line, 2, "{text}");
                assert!(why.contains("not a plain mail address"), "{text}: {why}");
            }
        }
    }

    #[test]
    fn malformed_files_name_the_line() {
        assert_eq!(
            refused("alice\n"),
            (1, "expected `login,password[,address]`".into())
        );
        assert_eq!(refused("ok@x.test,pw\n ,pw\n"), (2, "empty login".into()));
        assert_eq!(parse("# none\n\n").unwrap_err(), UsersFileError::Empty);
        assert_eq!(parse("").unwrap_err(), UsersFileError::Empty);
        let not_utf8 = parse_users_file(b"a@x.test,pw\nb@x.test,p\xffw\n").unwrap_err();
        assert!(
            matches!(not_utf8, UsersFileError::Line { line: 2, ref why } if why.contains("UTF-8")),
            "{not_utf8}"
        );
        let (line, why) = refused("a@x.test,pw\nb@x.test,\"p\nw\"\n");
        assert_eq!(line, 2);
        assert!(why.contains("not closed"), "{why}");
        let (_, why) = refused("a@x.test,p\u{7}w\n");
        assert!(why.contains("control"), "{why}");
        assert_eq!(
            UsersFileError::Empty.in_file(&"u.csv"),
            "u.csv: holds no users (only blank lines and # comments)"
        );
    }
}
