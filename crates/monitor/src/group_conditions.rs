//! The typed form of a `--group` spec: matching a server's processes by
//! executable path, user or parent process as well as by name, so one MTA's
//! `smtpd` is told from another's.
//!
//! ```text
//! NAME=REGEX                         command name matches REGEX (the old form)
//! NAME=KIND:PATTERN[,KIND:PATTERN]   every condition holds
//!   name:REGEX     the command name (`comm`, at most 15 bytes) matches
//!   exe:REGEX      the executable's path (/proc/PID/exe) matches
//!   user:NAME|UID  the process belongs to this user (NAME from /etc/passwd)
//!   parent:REGEX   the process or one of its ancestors has a matching command name
//! ```
//!
//! The typed form is recognised by its first word (`name:`, `exe:`, `user:`,
//! `parent:`); conditions are split only at a comma followed by one of those
//! words, so a regex may hold commas (`^a{1,3}$`). A plain REGEX never
//! starts with those words in practice (a command name holds no `:`).

use regex_lite::Regex;

use crate::error::MonitorError;

/// The words that start a condition.
const KINDS: [&str; 4] = ["name:", "exe:", "user:", "parent:"];

/// One test a group puts on a process.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Condition {
    /// `name:REGEX`: the command name matches.
    Name(Regex),
    /// `exe:REGEX`: the path of the process's executable matches (a process
    /// whose executable cannot be read, another user's without root, never
    /// matches).
    Exe(Regex),
    /// `user:NAME|UID`: the process's owner, as a uid.
    User(u32),
    /// `parent:REGEX`: the process or one of its ancestors has a command
    /// name that matches.
    Parent(Regex),
}

/// Whether `pattern` uses the typed form.
pub(crate) fn is_typed(pattern: &str) -> bool {
    KINDS.iter().any(|k| pattern.starts_with(k))
}

/// Parses `KIND:PATTERN[,KIND:PATTERN...]`; `passwd` is the text of
/// `/etc/passwd`, for user names.
pub(crate) fn parse_conditions(
    group: &str,
    pattern: &str,
    passwd: &str,
) -> Result<Vec<Condition>, MonitorError> {
    split(pattern)
        .into_iter()
        .map(|part| parse_one(group, part, passwd))
        .collect()
}

/// Splits at each `,` followed by a condition's word.
fn split(pattern: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, _) in pattern.match_indices(',') {
        if KINDS.iter().any(|k| pattern[i + 1..].starts_with(k)) {
            parts.push(&pattern[start..i]);
            start = i + 1;
        }
    }
    parts.push(&pattern[start..]);
    parts
}

fn parse_one(group: &str, part: &str, passwd: &str) -> Result<Condition, MonitorError> {
    let regex = |text: &str| {
        Regex::new(text).map_err(|source| MonitorError::Regex {
            group: group.to_owned(),
            source,
        })
    };
    let refuse = |reason: String| MonitorError::GroupSpec {
        spec: part.to_owned(),
        reason,
    };
    let (kind, value) = part
        .split_once(':')
        .ok_or_else(|| refuse(format!("{part:?} is not KIND:PATTERN")))?;
    if value.is_empty() {
        return Err(refuse(format!("{kind}: needs a pattern")));
    }
    Ok(match kind {
        "name" => Condition::Name(regex(value)?),
        "exe" => Condition::Exe(regex(value)?),
        "parent" => Condition::Parent(regex(value)?),
        "user" => Condition::User(uid_of(value, passwd).ok_or_else(|| {
            refuse(format!(
                "user:{value}: no such user on this host (a name from /etc/passwd or a number)"
            ))
        })?),
        other => {
            return Err(refuse(format!(
                "{other}: is not one of name, exe, user, parent"
            )));
        }
    })
}

/// The uid of `user`: a number as it is, or a name looked up in `passwd`.
pub(crate) fn uid_of(user: &str, passwd: &str) -> Option<u32> {
    if let Ok(uid) = user.parse() {
        return Some(uid);
    }
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == user).then_some(())?;
        fields.nth(1)?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PASSWD: &str =
        "root:x:0:0:root:/root:/bin/bash\ncyrus:x:105:8:Cyrus:/var/spool/cyrus:/bin/sh\n";

    #[test]
    fn issue_12_conditions_split_only_before_a_kind_word() {
        assert_eq!(
            split("exe:^/usr/sbin/.*,user:cyrus"),
            ["exe:^/usr/sbin/.*", "user:cyrus"]
        );
        assert_eq!(
            split("name:^a{1,3}$,parent:^master$"),
            ["name:^a{1,3}$", "parent:^master$"]
        );
        assert!(is_typed("user:cyrus"));
        assert!(!is_typed("^imapd$"));
    }

    #[test]
    fn issue_12_users_by_name_or_number_and_bad_conditions_say_why() {
        assert_eq!(uid_of("cyrus", PASSWD), Some(105));
        assert_eq!(uid_of("0", PASSWD), Some(0));
        assert_eq!(uid_of("nobody-here", PASSWD), None);
        let conditions = parse_conditions("g", "exe:^/usr/lib/cyrus/,user:cyrus", PASSWD).unwrap();
        assert!(matches!(conditions[1], Condition::User(105)));
        for (pattern, reason) in [
            ("user:nobody-here", "no such user"),
            ("exe:", "needs a pattern"),
            ("exe:(", "invalid regex"),
        ] {
            let error = parse_conditions("g", pattern, PASSWD)
                .unwrap_err()
                .to_string();
            assert!(error.contains(reason), "{pattern}: {error}");
        }
    }
}
