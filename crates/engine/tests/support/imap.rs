//! The fake IMAP server: one session per connection, line by line. It knows
//! LOGIN, LIST, CREATE, SELECT, EXAMINE, FETCH and UID FETCH of UID, FLAGS
//! and ENVELOPE, UID SEARCH, UID MOVE, IDLE, NOOP, CAPABILITY and LOGOUT.

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::time::Instant;

use super::{FakeMail, PASSWORD, StoredMessage, canonical};

const CAPABILITIES: &str = "IMAP4rev1 IDLE MOVE UIDPLUS";

struct Session {
    mail: FakeMail,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
    login: Option<String>,
    selected: Option<String>,
    /// The message count the client was last told for the selected folder.
    told_exists: usize,
}

/// Serves one connection until the client logs out or goes away.
pub(crate) async fn serve(mail: FakeMail, stream: DuplexStream) {
    let (read, out) = tokio::io::split(stream);
    let mut session = Session {
        mail,
        lines: BufReader::new(read).lines(),
        out,
        login: None,
        selected: None,
        told_exists: 0,
    };
    let greeting = format!("* OK [CAPABILITY {CAPABILITIES}] fake IMAP ready\r\n");
    if session.send(&greeting).await.is_err() {
        return;
    }
    while let Ok(Some(line)) = session.lines.next_line().await {
        if session.command(&line).await.is_err() {
            return;
        }
    }
}

/// Splits a command's arguments: atoms, quoted strings and parenthesized
/// lists (kept whole).
fn arguments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' => {
                chars.next();
            }
            '"' => {
                chars.next();
                let mut value = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next()),
                        '"' => break,
                        c => value.push(c),
                    }
                }
                out.push(value);
            }
            '(' => {
                let mut depth = 0;
                let mut value = String::new();
                for c in chars.by_ref() {
                    value.push(c);
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        break;
                    }
                }
                out.push(value);
            }
            _ => {
                let mut value = String::new();
                while let Some(&c) = chars.peek() {
                    if c == ' ' {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
                out.push(value);
            }
        }
    }
    out
}

/// The UIDs of `set` (`1,4:6`, `7:*`) among `uids` (ascending), `*` being
/// the highest, so `n:*` past the end still names the last message (RFC 3501).
fn in_set(set: &str, uid: u32, highest: u32) -> bool {
    set.split(',').any(|range| {
        let number = |s: &str| {
            if s == "*" {
                highest
            } else {
                s.parse().unwrap_or(0)
            }
        };
        match range.split_once(':') {
            Some((a, b)) => {
                let (a, b) = (number(a), number(b));
                (a.min(b)..=a.max(b)).contains(&uid)
            }
            None => number(range) == uid,
        }
    })
}

fn fetch_line(seq: usize, message: &StoredMessage) -> String {
    let flags = if message.seen { "\\Seen" } else { "" };
    format!(
        "* {seq} FETCH (UID {} FLAGS ({flags}) ENVELOPE (NIL NIL NIL NIL NIL NIL NIL NIL NIL \"{}\"))\r\n",
        message.uid, message.message_id
    )
}

impl Session {
    async fn send(&mut self, text: &str) -> std::io::Result<()> {
        self.out.write_all(text.as_bytes()).await?;
        self.out.flush().await
    }

    fn login(&self) -> String {
        self.login.clone().unwrap_or_default()
    }

    /// The selected folder's messages, if any.
    fn messages(&self) -> Vec<StoredMessage> {
        let (Some(login), Some(folder)) = (&self.login, &self.selected) else {
            return Vec::new();
        };
        self.mail
            .store()
            .mailboxes
            .get(login)
            .and_then(|m| m.folder(folder).cloned())
            .unwrap_or_default()
    }

    /// `* N EXISTS` when the selected folder grew since the client was told.
    fn news(&mut self) -> String {
        let exists = self.messages().len();
        if self.selected.is_some() && exists > self.told_exists {
            self.told_exists = exists;
            format!("* {exists} EXISTS\r\n")
        } else {
            String::new()
        }
    }

    async fn command(&mut self, line: &str) -> std::io::Result<()> {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (mut name, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let uid = name.eq_ignore_ascii_case("UID");
        let full_name;
        if uid {
            let (sub, after) = rest.split_once(' ').unwrap_or((rest, ""));
            full_name = format!("UID {}", sub.to_ascii_uppercase());
            name = &full_name;
            rest = after;
        }
        let name = name.to_ascii_uppercase();
        self.mail
            .store()
            .log
            .push((Instant::now(), self.login(), name.clone()));
        let delay = self.mail.delay(&name, &self.login());
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let args = arguments(rest);
        let refusal = self
            .mail
            .store()
            .refuse_imap
            .iter()
            .find(|(command, _)| *command == name)
            .map(|(_, text)| *text);
        if let Some(text) = refusal {
            return self.send(&format!("{tag} NO {text}\r\n")).await;
        }
        let reply = match name.as_str() {
            "CAPABILITY" => format!("* CAPABILITY {CAPABILITIES}\r\n{tag} OK done\r\n"),
            "LOGIN" => self.log_in(tag, &args),
            "LIST" => self.list(tag),
            "CREATE" => self.create(tag, &args),
            "SELECT" | "EXAMINE" => self.select(tag, &args),
            "FETCH" | "UID FETCH" if self.mail.store().endless_fetch => {
                return self.endless_fetch().await;
            }
            "FETCH" | "UID FETCH" => self.fetch(tag, &args, uid),
            "UID SEARCH" => self.search(tag, rest),
            "UID MOVE" => self.move_message(tag, &args),
            "IDLE" => return self.idle(tag).await,
            "NOOP" => format!("{}{tag} OK done\r\n", self.news()),
            "LOGOUT" => {
                self.send(&format!("* BYE see you\r\n{tag} OK done\r\n"))
                    .await?;
                return Err(std::io::ErrorKind::ConnectionAborted.into());
            }
            _ => format!("{tag} BAD unknown command\r\n"),
        };
        self.send(&reply).await
    }

    fn log_in(&mut self, tag: &str, args: &[String]) -> String {
        let [login, password] = args else {
            return format!("{tag} BAD two arguments\r\n");
        };
        let mut store = self.mail.store();
        let refused = store
            .refuse_login_until
            .get(login)
            .is_some_and(|until| Instant::now() < *until);
        if refused || password != PASSWORD || !store.mailboxes.contains_key(login) {
            return format!("{tag} NO [AUTHENTICATIONFAILED] no\r\n");
        }
        store
            .log
            .push((Instant::now(), login.clone(), "LOGGED IN".into()));
        drop(store);
        self.login = Some(login.clone());
        format!("{tag} OK [CAPABILITY {CAPABILITIES}] logged in\r\n")
    }

    fn list(&self, tag: &str) -> String {
        let store = self.mail.store();
        let mut reply = String::new();
        if let Some(mailbox) = self.login.as_ref().and_then(|l| store.mailboxes.get(l)) {
            for folder in mailbox.folders.keys() {
                reply.push_str(&format!("* LIST () \"/\" \"{folder}\"\r\n"));
            }
        }
        reply + &format!("{tag} OK done\r\n")
    }

    fn create(&self, tag: &str, args: &[String]) -> String {
        let mut store = self.mail.store();
        let (Some(login), Some(folder)) = (&self.login, args.first()) else {
            return format!("{tag} BAD no\r\n");
        };
        if let Some(mailbox) = store.mailboxes.get_mut(login) {
            mailbox.folders.entry(canonical(folder)).or_default();
        }
        format!("{tag} OK created\r\n")
    }

    fn select(&mut self, tag: &str, args: &[String]) -> String {
        let Some(folder) = args.first() else {
            return format!("{tag} BAD no folder\r\n");
        };
        self.selected = Some(canonical(folder));
        let exists = self.messages().len();
        self.told_exists = exists;
        format!(
            "* {exists} EXISTS\r\n* OK [UIDVALIDITY 1] ok\r\n{tag} OK [READ-WRITE] selected\r\n"
        )
    }

    fn fetch(&mut self, tag: &str, args: &[String], by_uid: bool) -> String {
        let Some(set) = args.first() else {
            return format!("{tag} BAD no set\r\n");
        };
        let messages = self.messages();
        let mut reply = String::new();
        let hide = by_uid && set.ends_with(":*") && {
            let mut store = self.mail.store();
            let hide = store.hide_from_uid_fetch > 0;
            store.hide_from_uid_fetch = store.hide_from_uid_fetch.saturating_sub(1);
            hide
        };
        if !hide {
            let highest = if by_uid {
                messages.last().map_or(0, |m| m.uid)
            } else {
                messages.len() as u32
            };
            for (i, message) in messages.iter().enumerate() {
                let key = if by_uid { message.uid } else { i as u32 + 1 };
                if in_set(set, key, highest) {
                    reply.push_str(&fetch_line(i + 1, message));
                }
            }
        }
        // A real server announces growth first; the fetch above may
        // already cover it.
        self.news() + &reply + &format!("{tag} OK fetched\r\n")
    }

    fn search(&self, tag: &str, criteria: &str) -> String {
        let uids: Vec<String> = self
            .messages()
            .iter()
            .filter(|m| {
                m.run_id
                    .as_ref()
                    .is_some_and(|run| criteria.contains(run.as_str()))
            })
            .map(|m| m.uid.to_string())
            .collect();
        let mut line = String::from("* SEARCH");
        for uid in uids {
            line.push(' ');
            line.push_str(&uid);
        }
        format!("{line}\r\n{tag} OK searched\r\n")
    }

    fn move_message(&mut self, tag: &str, args: &[String]) -> String {
        let [set, target] = args else {
            return format!("{tag} BAD two arguments\r\n");
        };
        let (Some(login), Some(folder)) = (self.login.clone(), self.selected.clone()) else {
            return format!("{tag} BAD not selected\r\n");
        };
        let mut store = self.mail.store();
        let Some(mailbox) = store.mailboxes.get_mut(&login) else {
            return format!("{tag} NO no mailbox\r\n");
        };
        let messages = mailbox.folders.entry(folder).or_default();
        let highest = messages.last().map_or(0, |m| m.uid);
        let mut expunged = String::new();
        let mut moved = Vec::new();
        let mut seq = 1;
        messages.retain(|m| {
            if in_set(set, m.uid, highest) {
                expunged.push_str(&format!("* {seq} EXPUNGE\r\n"));
                moved.push(m.clone());
                false
            } else {
                seq += 1;
                true
            }
        });
        for message in moved {
            mailbox.add(target, message);
        }
        self.told_exists = self.told_exists.saturating_sub(expunged.lines().count());
        format!("{expunged}{tag} OK moved\r\n")
    }

    /// Answers a FETCH with untagged responses carrying 1 KB literals, and
    /// never completes it, until the client hangs up.
    async fn endless_fetch(&mut self) -> std::io::Result<()> {
        let body = "x".repeat(1024);
        let mut written = 0_u64;
        let mut n = 1_u64;
        let result = loop {
            let response = format!("* {n} FETCH (UID {n} BODY[] {{1024}}\r\n{body})\r\n");
            if let Err(e) = self.send(&response).await {
                break Err(e);
            }
            written += response.len() as u64;
            n += 1;
        };
        let mut store = self.mail.store();
        store.endless_bytes_max = store.endless_bytes_max.max(written);
        result
    }

    /// IDLE until DONE, telling the client about new mail as it arrives.
    async fn idle(&mut self, tag: &str) -> std::io::Result<()> {
        self.send("+ idling\r\n").await?;
        let mut changes = self.mail.changes();
        loop {
            let news = self.news();
            if !news.is_empty() {
                self.send(&news).await?;
            }
            tokio::select! {
                line = self.lines.next_line() => match line? {
                    Some(line) if line.eq_ignore_ascii_case("DONE") && self.mail.store().stall_done => {
                        // Never completes: quiet until the client hangs up.
                        while let Ok(Some(_)) = self.lines.next_line().await {}
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    Some(line) if line.eq_ignore_ascii_case("DONE") => break,
                    Some(_) => return self.send(&format!("{tag} BAD expected DONE\r\n")).await,
                    None => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                },
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Err(std::io::ErrorKind::BrokenPipe.into());
                    }
                }
            }
        }
        self.send(&format!("{tag} OK idle done\r\n")).await
    }
}
