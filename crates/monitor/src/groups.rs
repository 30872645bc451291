//! Process groups: which processes belong to Dovecot, Postfix or peakhour
//! (their CPU, memory, I/O and context switches summed per group are
//! `group_tracker.rs`'s).
//!
//! A process belongs to a group when its command name (`comm`) matches the
//! group's names or regex **and**, if the group lists ancestors, the process
//! itself or one of its ancestors has one of those names. Dovecot and Postfix
//! both run processes called `anvil` and `lmtp` (Postfix's `lmtp` is its
//! client, Dovecot's the server), so the defaults resolve them by ancestry:
//! Dovecot's processes descend from a process named `dovecot`, Postfix's from
//! Postfix's `master`. A process may belong to several groups if several
//! match; the defaults never overlap.

use std::collections::HashMap;

use regex_lite::Regex;

use crate::error::MonitorError;
pub use crate::group_conditions::Condition;
use crate::group_conditions::parse_conditions;
use crate::procfs::PidStat;

/// How a group recognises its processes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProcessMatcher {
    /// Exact command names; a trailing `*` matches any suffix (`indexer*`).
    Names(Vec<String>),
    /// A regex over the command name (`comm`, at most 15 bytes).
    Regex(Regex),
    /// The process the monitor runs in (peakhour itself).
    CurrentProcess,
    /// Any process: the group's [`GroupSpec::conditions`] decide.
    Any,
}

impl ProcessMatcher {
    fn matches(&self, comm: &str, pid: u32, own_pid: u32) -> bool {
        match self {
            Self::Names(names) => names.iter().any(|n| match n.strip_suffix('*') {
                Some(prefix) => comm.starts_with(prefix),
                None => comm == n,
            }),
            Self::Regex(re) => re.is_match(comm),
            Self::CurrentProcess => pid == own_pid,
            Self::Any => true,
        }
    }
}

/// A named set of processes to watch.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// Name used in columns: `group_<name>_cpu_pct`.
    pub name: String,
    /// Which command names belong.
    pub matcher: ProcessMatcher,
    /// If not empty, a process belongs only if it or an ancestor has one of
    /// these command names.
    pub ancestors: Vec<String>,
    /// If not empty, a process belongs only if it or an ancestor has one of
    /// these PIDs (and, if `ancestors` is not empty, that same process has
    /// one of those names): e.g. one lab's Dovecot master, when several run
    /// on the host.
    pub ancestor_pids: Vec<u32>,
    /// Further tests, all of which must hold: executable path, user,
    /// parent process ([`Condition`]); empty for the name-only groups.
    pub conditions: Vec<Condition>,
}

/// Dovecot's process names (Debian 12, Dovecot 2.3).
pub const DOVECOT_NAMES: &[&str] = &[
    "dovecot",
    "imap",
    "imap-login",
    "imap-hibernate",
    "pop3",
    "pop3-login",
    "lmtp",
    "auth",
    "anvil",
    "log",
    "config",
    "stats",
    "indexer*",
    "dict",
    "doveadm",
    "submission*",
    "managesieve*",
    "replicator",
    "aggregator",
    "quota-status",
];

/// Postfix's process names (Postfix 3.7).
pub const POSTFIX_NAMES: &[&str] = &[
    "master",
    "smtpd",
    "smtp",
    "qmgr",
    "cleanup",
    "lmtp",
    "pickup",
    "trivial-rewrite",
    "tlsmgr",
    "proxymap",
    "anvil",
    "postlogd",
    "bounce",
    "local",
    "virtual",
    "pipe",
    "scache",
    "verify",
    "showq",
    "flush",
    "error",
    "retry",
    "discard",
    "postscreen",
    "dnsblog",
    "tlsproxy",
    "spawn",
];

/// Radicale's process names: the lab runs it as `python3 /usr/bin/radicale`;
/// started through its script, it is `radicale`.
pub const RADICALE_NAMES: &[&str] = &["python3*", "radicale"];

/// Samba's process names (Samba 4.17): smbd and its helpers.
pub const SAMBA_NAMES: &[&str] = &["smbd*", "cleanupd", "samba-dcerpcd", "rpcd_*", "samba-bgqd"];

/// Cyrus IMAP's process names (Debian 12, Cyrus 3.6): its `master` and the
/// services it forks (IMAP, POP3, LMTP, the JMAP and CalDAV `httpd`, and
/// the maintenance programs). `master` is also Postfix's master's name, so
/// the group is only meaningful scoped to one Cyrus master
/// ([`GroupSpec::within`]), as a lab's is.
pub const CYRUS_NAMES: &[&str] = &[
    "master",
    "imapd",
    "pop3d",
    "lmtpd",
    "httpd",
    "ctl_cyrusdb",
    "ctl_*",
    "cyr_*",
    "idled",
    "notifyd",
    "squatter",
    "ptloader",
];

/// The mail store a lab runs, for [`GroupSpec::for_lab`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabMailStore {
    /// Dovecot (the lab's default).
    Dovecot,
    /// Cyrus IMAP (`lab up --mail-server cyrus`).
    Cyrus,
}

impl GroupSpec {
    /// A group matching exact command names (trailing `*` = prefix).
    pub fn names(name: impl Into<String>, names: &[&str]) -> Self {
        Self {
            name: name.into(),
            matcher: ProcessMatcher::Names(names.iter().map(|s| (*s).to_owned()).collect()),
            ancestors: Vec::new(),
            ancestor_pids: Vec::new(),
            conditions: Vec::new(),
        }
    }

    /// A group matching command names against a regex.
    pub fn regex(name: impl Into<String>, pattern: &str) -> Result<Self, MonitorError> {
        let name = name.into();
        let re = Regex::new(pattern).map_err(|source| MonitorError::Regex {
            group: name.clone(),
            source,
        })?;
        Ok(Self {
            name,
            matcher: ProcessMatcher::Regex(re),
            ancestors: Vec::new(),
            ancestor_pids: Vec::new(),
            conditions: Vec::new(),
        })
    }

    /// Restricts the group to processes under (or named) one of `names`.
    pub fn under(mut self, names: &[&str]) -> Self {
        self.ancestors = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Restricts the group to processes under (or being) one of `pids`, e.g.
    /// the master of one Dovecot among several on the host.
    pub fn within(mut self, pids: &[u32]) -> Self {
        self.ancestor_pids = pids.to_vec();
        self
    }

    /// Dovecot: its names, under a process named `dovecot`.
    pub fn dovecot() -> Self {
        Self::names("dovecot", DOVECOT_NAMES).under(&["dovecot"])
    }

    /// Postfix: its names, under Postfix's `master`.
    pub fn postfix() -> Self {
        Self::names("postfix", POSTFIX_NAMES).under(&["master"])
    }

    /// peakhour itself: the process the monitor runs in.
    pub fn peakhour() -> Self {
        Self {
            name: "peakhour".into(),
            matcher: ProcessMatcher::CurrentProcess,
            ancestors: Vec::new(),
            ancestor_pids: Vec::new(),
            conditions: Vec::new(),
        }
    }

    /// The defaults: `dovecot`, `postfix`, `peakhour`.
    pub fn defaults() -> Vec<Self> {
        vec![Self::dovecot(), Self::postfix(), Self::peakhour()]
    }

    /// The defaults, with `dovecot` and `postfix` counting only the processes
    /// under the given master (one lab's servers, when other labs or a system
    /// Postfix run on the same host); a master not known leaves its group whole.
    pub fn defaults_within(dovecot_master: Option<u32>, postfix_master: Option<u32>) -> Vec<Self> {
        let scoped = |group: Self, master: Option<u32>| match master {
            Some(pid) => group.within(&[pid]),
            None => group,
        };
        vec![
            scoped(Self::dovecot(), dovecot_master),
            scoped(Self::postfix(), postfix_master),
            Self::peakhour(),
        ]
    }

    /// The groups of one lab: its mail store (`dovecot` or `cyrus`, never
    /// both), `postfix`, `peakhour`, then the optional servers it runs
    /// (`radicale`, `samba`), each scoped to that lab's master by
    /// `master_pid` (which takes a server's name as `lab status` gives it).
    /// A Dovecot or Postfix master not known leaves its group whole; an
    /// optional server or a Cyrus not running has no group, and a Cyrus
    /// master not known leaves the `cyrus` group out rather than count every
    /// process named `master` on the host.
    pub fn for_lab(store: LabMailStore, master_pid: impl Fn(&str) -> Option<u32>) -> Vec<Self> {
        let scoped = |group: Self, master: Option<u32>| match master {
            Some(pid) => group.within(&[pid]),
            None => group,
        };
        let mut groups = Vec::new();
        match store {
            LabMailStore::Dovecot => groups.push(scoped(Self::dovecot(), master_pid("dovecot"))),
            LabMailStore::Cyrus => groups.extend(
                master_pid("cyrus").map(|pid| Self::names("cyrus", CYRUS_NAMES).within(&[pid])),
            ),
        }
        groups.push(scoped(Self::postfix(), master_pid("postfix")));
        groups.push(Self::peakhour());
        for (name, names) in [("radicale", RADICALE_NAMES), ("samba", SAMBA_NAMES)] {
            if let Some(pid) = master_pid(name) {
                groups.push(Self::names(name, names).within(&[pid]));
            }
        }
        groups
    }

    /// Whether matching needs each process's executable path.
    pub fn needs_exe(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| matches!(c, Condition::Exe(_)))
    }

    /// Whether matching needs each process's owner.
    pub fn needs_user(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| matches!(c, Condition::User(_)))
    }

    /// A group from `NAME=REGEX` (command names) or
    /// `NAME=KIND:PATTERN[,KIND:PATTERN...]` with KIND `name`, `exe`,
    /// `user` or `parent` (see [`Condition`]; user names from
    /// `/etc/passwd`). NAME is lowercase letters, digits and `_` (it
    /// becomes a column name) and not one of the defaults' names.
    pub fn parse(spec: &str) -> Result<Self, MonitorError> {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        Self::parse_with_passwd(spec, &passwd)
    }

    /// [`GroupSpec::parse`] with user names looked up in `passwd` (the text
    /// of an `/etc/passwd`).
    pub fn parse_with_passwd(spec: &str, passwd: &str) -> Result<Self, MonitorError> {
        let refuse = |reason: String| MonitorError::GroupSpec {
            spec: spec.to_owned(),
            reason,
        };
        let Some((name, pattern)) = spec.split_once('=') else {
            return Err(refuse(
                "expected NAME=REGEX or NAME=KIND:PATTERN (KIND: name, exe, user, parent), \
                 e.g. nginx=^nginx or imapd=exe:^/usr/lib/cyrus/"
                    .into(),
            ));
        };
        let name = name.trim();
        let column_safe = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
        if name.is_empty() || !name.bytes().all(column_safe) {
            return Err(refuse(
                "the name must be lowercase letters, digits and _ (it becomes a column name)"
                    .into(),
            ));
        }
        if ["dovecot", "postfix", "peakhour"].contains(&name) {
            return Err(refuse(format!("{name} is a default group already")));
        }
        if !crate::group_conditions::is_typed(pattern) {
            return Self::regex(name, pattern);
        }
        let mut conditions = parse_conditions(name, pattern, passwd)?;
        // A name condition is the group's matcher; the rest are conditions.
        let matcher = match conditions
            .iter()
            .position(|c| matches!(c, Condition::Name(_)))
        {
            Some(i) => match conditions.remove(i) {
                Condition::Name(re) => ProcessMatcher::Regex(re),
                _ => ProcessMatcher::Any,
            },
            None => ProcessMatcher::Any,
        };
        Ok(Self {
            name: name.to_owned(),
            matcher,
            ancestors: Vec::new(),
            ancestor_pids: Vec::new(),
            conditions,
        })
    }
}

/// For each group (in `specs` order), the indices into `procs` of its members.
/// Pure: it sees only the parsed `/proc/PID/stat` of every process.
pub fn assign_groups(specs: &[GroupSpec], procs: &[PidStat], own_pid: u32) -> Vec<Vec<usize>> {
    let by_pid: HashMap<u32, usize> = procs.iter().enumerate().map(|(i, p)| (p.pid, i)).collect();
    let has_ancestor = |start: usize, names: &[String], pids: &[u32]| {
        let mut at = Some(start);
        // Bounded walk: a PID cycle (impossible, but /proc is read racily) cannot hang us.
        for _ in 0..64 {
            let Some(i) = at else { return false };
            let p = &procs[i];
            if (names.is_empty() || names.contains(&p.comm))
                && (pids.is_empty() || pids.contains(&p.pid))
            {
                return true;
            }
            if p.ppid == 0 || p.ppid == p.pid {
                return false;
            }
            at = by_pid.get(&p.ppid).copied();
        }
        false
    };
    specs
        .iter()
        .map(|spec| {
            procs
                .iter()
                .enumerate()
                .filter(|(i, p)| {
                    spec.matcher.matches(&p.comm, p.pid, own_pid)
                        && ((spec.ancestors.is_empty() && spec.ancestor_pids.is_empty())
                            || has_ancestor(*i, &spec.ancestors, &spec.ancestor_pids))
                        && spec
                            .conditions
                            .iter()
                            .all(|c| condition_holds(c, *i, procs, &by_pid))
                })
                .map(|(i, _)| i)
                .collect()
        })
        .collect()
}

/// Whether `condition` holds for `procs[at]`.
fn condition_holds(
    condition: &Condition,
    at: usize,
    procs: &[PidStat],
    by_pid: &HashMap<u32, usize>,
) -> bool {
    let p = &procs[at];
    match condition {
        Condition::Name(re) => re.is_match(&p.comm),
        Condition::Exe(re) => p.exe.as_deref().is_some_and(|exe| re.is_match(exe)),
        Condition::User(uid) => p.uid == Some(*uid),
        Condition::Parent(re) => {
            let mut next = Some(at);
            // Bounded walk, as in `assign_groups`.
            for _ in 0..64 {
                let Some(i) = next else { return false };
                let q = &procs[i];
                if re.is_match(&q.comm) {
                    return true;
                }
                if q.ppid == 0 || q.ppid == q.pid {
                    return false;
                }
                next = by_pid.get(&q.ppid).copied();
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ps(pid: u32, ppid: u32, comm: &str) -> PidStat {
        PidStat {
            pid,
            ppid,
            comm: comm.into(),
            ..PidStat::default()
        }
    }

    #[test]
    fn a_group_from_text_needs_a_column_safe_new_name_and_a_regex() {
        let group = GroupSpec::parse("nginx=^nginx").unwrap();
        assert_eq!(group.name, "nginx");
        assert!(group.matcher.matches("nginx", 1, 2));
        assert!(!group.matcher.matches("apache2", 1, 2));
        for (spec, reason) in [
            ("nginx", "expected NAME=REGEX or NAME=KIND:PATTERN"),
            ("Nginx=^nginx", "lowercase letters"),
            ("=^nginx", "lowercase letters"),
            ("ngi-nx=^nginx", "lowercase letters"),
            ("postfix=^smtpd", "default group already"),
            ("nginx=(", "invalid regex"),
        ] {
            let error = GroupSpec::parse(spec).unwrap_err().to_string();
            assert!(error.contains(reason), "{spec}: {error}");
        }
    }

    #[test]
    fn defaults_within_a_lab_scope_only_the_servers_with_a_known_master() {
        let groups = GroupSpec::defaults_within(Some(100), None);
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["dovecot", "postfix", "peakhour"]);
        assert_eq!(groups[0].ancestor_pids, [100]);
        assert!(groups[1].ancestor_pids.is_empty());
    }

    #[test]
    fn anvil_and_lmtp_go_to_their_own_server() {
        let procs = vec![
            ps(1, 0, "systemd"),
            ps(100, 1, "dovecot"),
            ps(101, 100, "anvil"),
            ps(102, 100, "lmtp"),
            ps(103, 100, "imap"),
            ps(104, 100, "indexer-worker"),
            ps(200, 1, "master"),
            ps(201, 200, "anvil"),
            ps(202, 200, "lmtp"),
            ps(203, 200, "smtpd"),
            ps(300, 1, "anvil"), // stray: under neither
            ps(400, 1, "peakhour"),
        ];
        let groups = assign_groups(&GroupSpec::defaults(), &procs, 400);
        let pids = |g: usize| groups[g].iter().map(|&i| procs[i].pid).collect::<Vec<_>>();
        assert_eq!(pids(0), vec![100, 101, 102, 103, 104]);
        assert_eq!(pids(1), vec![200, 201, 202, 203]);
        assert_eq!(pids(2), vec![400]);
    }

    #[test]
    fn a_group_can_be_scoped_to_one_server_among_several() {
        let procs = vec![
            ps(1, 0, "systemd"),
            ps(100, 1, "dovecot"), // lab A
            ps(101, 100, "imap"),
            ps(150, 1, "dovecot"), // lab B
            ps(151, 150, "imap"),
            ps(152, 150, "imap-login"),
        ];
        let a = GroupSpec::dovecot().within(&[100]);
        let b = GroupSpec::dovecot().within(&[150]);
        let both = GroupSpec::dovecot();
        let groups = assign_groups(&[a, b, both], &procs, 0);
        let pids = |g: usize| groups[g].iter().map(|&i| procs[i].pid).collect::<Vec<_>>();
        assert_eq!(pids(0), vec![100, 101]);
        assert_eq!(pids(1), vec![150, 151, 152]);
        assert_eq!(pids(2), vec![100, 101, 150, 151, 152]);
        // A PID that is not a `dovecot` process scopes to nothing.
        let wrong = GroupSpec::dovecot().within(&[1]);
        assert_eq!(
            assign_groups(&[wrong], &procs, 0),
            vec![Vec::<usize>::new()]
        );
    }

    #[test]
    fn regex_groups() {
        let procs = vec![
            ps(1, 0, "nginx"),
            ps(2, 1, "nginx: worker"),
            ps(3, 1, "php-fpm"),
        ];
        let spec = GroupSpec::regex("web", "^(nginx|php)").unwrap();
        assert_eq!(assign_groups(&[spec], &procs, 0), vec![vec![0, 1, 2]]);
        assert!(GroupSpec::regex("bad", "(").is_err());
    }

    #[test]
    fn issue_12_groups_by_executable_user_and_parent_tell_two_smtpds_apart() {
        let passwd = "postfix:x:107:114::/var/spool/postfix:/usr/sbin/nologin\nmail:x:8:8::/var/mail:/bin/sh\n";
        let with = |pid, ppid, comm: &str, exe: &str, uid| PidStat {
            exe: Some(exe.into()),
            uid: Some(uid),
            ..ps(pid, ppid, comm)
        };
        let procs = vec![
            with(1, 0, "systemd", "/usr/lib/systemd/systemd", 0),
            with(100, 1, "master", "/usr/lib/postfix/sbin/master", 0),
            with(101, 100, "smtpd", "/usr/lib/postfix/sbin/smtpd", 107),
            with(200, 1, "smtpd", "/usr/sbin/smtpd", 8), // OpenSMTPD
            with(201, 200, "smtpd", "/usr/sbin/smtpd", 8),
            ps(300, 1, "smtpd"), // exe and user unreadable
        ];
        let spec = |text: &str| GroupSpec::parse_with_passwd(text, passwd).unwrap();
        let by_exe = spec("opensmtpd=exe:^/usr/sbin/smtpd$");
        let by_user = spec("pf=user:postfix");
        let by_parent = spec("pf_tree=name:^smtpd$,parent:^master$");
        let by_uid_and_name = spec("mailuser=name:^smtpd$,user:8");
        assert!(by_exe.needs_exe() && !by_exe.needs_user());
        let groups = assign_groups(&[by_exe, by_user, by_parent, by_uid_and_name], &procs, 0);
        let pids = |g: usize| groups[g].iter().map(|&i| procs[i].pid).collect::<Vec<_>>();
        assert_eq!(pids(0), [200, 201]);
        assert_eq!(pids(1), [101]);
        assert_eq!(pids(2), [101]);
        assert_eq!(pids(3), [200, 201]);
        // The old form still means a regex over command names.
        let old = spec("smtp=^smtpd$");
        assert_eq!(assign_groups(&[old], &procs, 0)[0].len(), 4);
    }
}
