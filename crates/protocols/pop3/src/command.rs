//! The commands the client sends, and how they look on the wire.

use std::fmt;

use peakhour_net::Secret;

/// A POP3 command (RFC 1939, RFC 2449 CAPA, RFC 2595 STLS).
///
/// Message numbers start at 1; [`Pop3Client::send`](crate::Pop3Client::send)
/// refuses 0 rather than let the server answer `-ERR` to a client bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `USER name`.
    User(String),
    /// `PASS password`. The password never shows in `Debug` output.
    Pass(Secret<String>),
    /// `CAPA`: list the server's capabilities (multi-line).
    Capa,
    /// `STLS`: start TLS on this connection.
    Stls,
    /// `STAT`: number of messages and their total size.
    Stat,
    /// `LIST` (every message, multi-line) or `LIST n` (one message).
    List(Option<u32>),
    /// `UIDL` (every message, multi-line) or `UIDL n` (one message).
    Uidl(Option<u32>),
    /// `RETR n`: the whole message (multi-line).
    Retr(u32),
    /// `TOP n lines`: the header and the first `lines` lines of the body (multi-line).
    Top {
        /// The message number.
        msg: u32,
        /// How many body lines to send after the header.
        lines: u32,
    },
    /// `DELE n`: mark a message deleted.
    Dele(u32),
    /// `NOOP`.
    Noop,
    /// `RSET`: unmark every deleted message.
    Rset,
    /// `QUIT`: commit deletions and close.
    Quit,
}

/// Which command a response answers: the verb without its arguments.
///
/// It is what errors and timings carry, so it never holds a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandKind {
    /// Not a command: the server's greeting, the first line of every session.
    Greeting,
    /// `USER`.
    User,
    /// `PASS`.
    Pass,
    /// `CAPA`.
    Capa,
    /// `STLS`.
    Stls,
    /// `STAT`.
    Stat,
    /// `LIST`.
    List,
    /// `UIDL`.
    Uidl,
    /// `RETR`.
    Retr,
    /// `TOP`.
    Top,
    /// `DELE`.
    Dele,
    /// `NOOP`.
    Noop,
    /// `RSET`.
    Rset,
    /// `QUIT`.
    Quit,
}

impl CommandKind {
    /// The verb as sent (`"RETR"`), or `"greeting"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Greeting => "greeting",
            CommandKind::User => "USER",
            CommandKind::Pass => "PASS",
            CommandKind::Capa => "CAPA",
            CommandKind::Stls => "STLS",
            CommandKind::Stat => "STAT",
            CommandKind::List => "LIST",
            CommandKind::Uidl => "UIDL",
            CommandKind::Retr => "RETR",
            CommandKind::Top => "TOP",
            CommandKind::Dele => "DELE",
            CommandKind::Noop => "NOOP",
            CommandKind::Rset => "RSET",
            CommandKind::Quit => "QUIT",
        }
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a command could not be sent. Nothing was written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// An argument would break the command line (CR, LF, NUL, another
    /// control byte) or is empty.
    #[error("invalid {command} argument: {reason}")]
    InvalidArgument {
        /// The command.
        command: CommandKind,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Message number 0: POP3 numbers messages from 1.
    #[error("{command} was given message number 0; POP3 numbers messages from 1")]
    MessageNumberZero {
        /// The command.
        command: CommandKind,
    },
    /// RFC 2595 forbids pipelining past STLS: the next bytes must be the TLS
    /// handshake.
    #[error("no command may be sent while STLS is outstanding or before the TLS handshake")]
    AfterStls,
    /// QUIT was already sent.
    #[error("{command} sent after QUIT")]
    AfterQuit {
        /// The command.
        command: CommandKind,
    },
    /// The session already failed on a protocol error; its byte stream can no
    /// longer be trusted.
    #[error("the session failed earlier; {command} cannot be sent")]
    SessionFailed {
        /// The command.
        command: CommandKind,
    },
}

/// What shape of response a command gets, which decides whether the parser
/// waits for the `.` terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Greeting,
    /// `+OK text`, nothing typed in it.
    Status,
    Stat,
    ScanOne,
    ScanAll,
    UidOne,
    UidAll,
    Capa,
    /// RETR and TOP: message bytes, dot-unstuffed.
    Message,
}

impl Shape {
    /// True when a `+OK` starts a multi-line response ending in `.`; a `-ERR`
    /// is always one line.
    pub(crate) fn is_multiline(self) -> bool {
        matches!(
            self,
            Shape::ScanAll | Shape::UidAll | Shape::Capa | Shape::Message
        )
    }
}

impl Command {
    /// The verb, for errors and timings.
    pub fn kind(&self) -> CommandKind {
        match self {
            Command::User(_) => CommandKind::User,
            Command::Pass(_) => CommandKind::Pass,
            Command::Capa => CommandKind::Capa,
            Command::Stls => CommandKind::Stls,
            Command::Stat => CommandKind::Stat,
            Command::List(_) => CommandKind::List,
            Command::Uidl(_) => CommandKind::Uidl,
            Command::Retr(_) => CommandKind::Retr,
            Command::Top { .. } => CommandKind::Top,
            Command::Dele(_) => CommandKind::Dele,
            Command::Noop => CommandKind::Noop,
            Command::Rset => CommandKind::Rset,
            Command::Quit => CommandKind::Quit,
        }
    }

    pub(crate) fn shape(&self) -> Shape {
        match self {
            Command::Stat => Shape::Stat,
            Command::List(None) => Shape::ScanAll,
            Command::List(Some(_)) => Shape::ScanOne,
            Command::Uidl(None) => Shape::UidAll,
            Command::Uidl(Some(_)) => Shape::UidOne,
            Command::Capa => Shape::Capa,
            Command::Retr(_) | Command::Top { .. } => Shape::Message,
            Command::User(_)
            | Command::Pass(_)
            | Command::Stls
            | Command::Dele(_)
            | Command::Noop
            | Command::Rset
            | Command::Quit => Shape::Status,
        }
    }

    /// Appends the command line, CRLF included, to `out`; on error `out` is
    /// left as it was.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Result<(), CommandError> {
        let kind = self.kind();
        let verb = kind.as_str().as_bytes();
        match self {
            Command::User(name) => {
                check_text(kind, name)?;
                line(out, &[verb, name.as_bytes()]);
            }
            Command::Pass(password) => {
                // RFC 1939 lets a password hold spaces (PASS has exactly one
                // argument), so only line-breaking bytes are refused.
                check_text(kind, password.expose())?;
                line(out, &[verb, password.expose().as_bytes()]);
            }
            Command::List(Some(msg))
            | Command::Uidl(Some(msg))
            | Command::Retr(msg)
            | Command::Dele(msg) => {
                let msg = number(kind, *msg)?;
                line(out, &[verb, msg.as_bytes()]);
            }
            Command::Top { msg, lines } => {
                let msg = number(kind, *msg)?;
                line(out, &[verb, msg.as_bytes(), lines.to_string().as_bytes()]);
            }
            Command::Capa
            | Command::Stls
            | Command::Stat
            | Command::List(None)
            | Command::Uidl(None)
            | Command::Noop
            | Command::Rset
            | Command::Quit => line(out, &[verb]),
        }
        Ok(())
    }
}

fn line(out: &mut Vec<u8>, words: &[&[u8]]) {
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(word);
    }
    out.extend_from_slice(b"\r\n");
}

fn number(command: CommandKind, msg: u32) -> Result<String, CommandError> {
    if msg == 0 {
        return Err(CommandError::MessageNumberZero { command });
    }
    Ok(msg.to_string())
}

/// An argument must stay on its own line: a CR or LF in a user name would let
/// the caller (or whoever wrote the profile) inject a second command.
fn check_text(command: CommandKind, text: &str) -> Result<(), CommandError> {
    if text.is_empty() {
        return Err(CommandError::InvalidArgument {
            command,
            reason: "empty",
        });
    }
    if text.bytes().any(|b| b.is_ascii_control()) {
        return Err(CommandError::InvalidArgument {
            command,
            reason: "contains a control byte (CR, LF, NUL, ...)",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(command: Command) -> Result<String, CommandError> {
        let mut out = Vec::new();
        command.encode(&mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn encodes_every_command() {
        let table = [
            (Command::User("mrose".into()), "USER mrose\r\n"),
            (
                Command::Pass(Secret::new("tan ker".into())),
                "PASS tan ker\r\n",
            ),
            (Command::Capa, "CAPA\r\n"),
            (Command::Stls, "STLS\r\n"),
            (Command::Stat, "STAT\r\n"),
            (Command::List(None), "LIST\r\n"),
            (Command::List(Some(2)), "LIST 2\r\n"),
            (Command::Uidl(None), "UIDL\r\n"),
            (Command::Uidl(Some(7)), "UIDL 7\r\n"),
            (Command::Retr(1), "RETR 1\r\n"),
            (Command::Top { msg: 1, lines: 0 }, "TOP 1 0\r\n"),
            (Command::Dele(4294967295), "DELE 4294967295\r\n"),
            (Command::Noop, "NOOP\r\n"),
            (Command::Rset, "RSET\r\n"),
            (Command::Quit, "QUIT\r\n"),
        ];
        for (command, wire) in table {
            assert_eq!(encoded(command).unwrap(), wire);
        }
    }

    #[test]
    fn refuses_injection_and_message_zero() {
        assert!(matches!(
            encoded(Command::User("a\r\nDELE 1".into())),
            Err(CommandError::InvalidArgument { .. })
        ));
        assert!(matches!(
            encoded(Command::Pass(Secret::new("x\0".into()))),
            Err(CommandError::InvalidArgument { .. })
        ));
        assert!(matches!(
            encoded(Command::User(String::new())),
            Err(CommandError::InvalidArgument { .. })
        ));
        assert_eq!(
            encoded(Command::Retr(0)),
            Err(CommandError::MessageNumberZero {
                command: CommandKind::Retr
            })
        );
    }

    #[test]
    fn debug_output_hides_the_password() {
        let debug = format!("{:?}", Command::Pass(Secret::new("hunter2".into())));
        assert!(!debug.contains("hunter2"), "{debug}");
    }
}
