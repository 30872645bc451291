//! Cyrus IMAP, the lab's second mail store (`lab up --mail-server cyrus`).
//!
//! Debian 12's `cyrus-common` and `cyrus-caldav` (3.6) give the master,
//! `lmtpd` and the `httpd` that serves JMAP. `imapd` and `pop3d` come in
//! `cyrus-imapd` and `cyrus-pop3d`, which conflict with Dovecot's packages
//! (both provide `imap-server`, `pop3-server`), so `scripts/setup.sh`
//! unpacks those two .debs into [`PRIVATE_BIN`] instead of installing them.
//!
//! Cyrus runs from `cyrus/imapd.conf` and `cyrus/cyrus.conf` in the lab
//! directory, every program started with `-C` (the master does not pass its
//! own `-C` on), on 127.0.0.1 only. Its master runs as root and its services
//! as Debian's `cyrus` user. Users sign in as `userN@bench.test`
//! (`virtdomains: userid`) with the lab password, checked against a SASL
//! database of the lab's own (`sasldb2`, written by `db_load` in one go:
//! `saslpasswd2` takes 40 ms per user). Postfix gets its own copy for SMTP
//! AUTH, and delivers to Cyrus's `lmtpd` over LMTP; Cyrus's JMAP submission
//! hands mail back to Postfix on the lab's SMTP port without AUTH.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::dir;
use crate::layout::Layout;
use crate::process::ServerCommand;
use crate::{LabConfig, LabError, Namespace, OptionalServer};

/// Where Debian's Cyrus packages put their programs.
pub(crate) const PACKAGE_BIN: &str = "/usr/lib/cyrus/bin/";
/// Where `scripts/setup.sh` unpacks `cyrus-imapd` and `cyrus-pop3d`.
pub(crate) const PRIVATE_BIN: &str = "/opt/peakhour/cyrus/usr/lib/cyrus/bin/";
/// Cyrus's master.
pub(crate) const MASTER: &str = "/usr/lib/cyrus/bin/master";
/// Berkeley DB's loader, which writes the SASL database in one process.
pub(crate) const DB_LOAD: &str = "/usr/bin/db_load";
/// The system user Cyrus's services run as, and its group.
const SYSTEM_USER: &str = "cyrus";
const SYSTEM_GROUP: &str = "mail";

/// `altnamespace` and `unixhierarchysep` for the lab's namespace: Cyrus can
/// play Dovecot's default (top-level folders, `/`) and the `INBOX.` layout
/// with `.`, its own default; nothing else.
pub(crate) fn namespace(namespace: &Namespace) -> Result<(bool, bool), String> {
    match (namespace.prefix.as_str(), namespace.separator) {
        ("", '/') => Ok((true, true)),
        ("INBOX.", '.') => Ok((false, false)),
        (prefix, separator) => Err(format!(
            "Cyrus offers top-level folders with / or INBOX. with ., not prefix {prefix:?} \
             with separator {separator:?}"
        )),
    }
}

fn yes_no(on: bool) -> &'static str {
    if on { "yes" } else { "no" }
}

/// `imapd.conf`.
pub(crate) fn imapd_conf(config: &LabConfig, layout: &Layout) -> String {
    // Validated before anything is written; the default if not.
    let (alt, unix) = namespace(&config.namespace).unwrap_or((true, true));
    let config_dir = layout.cyrus_config_dir();
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start. Every Cyrus program
# of the lab is started with -C this file; nothing is read from /etc/imapd.conf.
configdirectory: {config_dir}
defaultpartition: default
partition-default: {partition}
proc_path: {config_dir}/proc
mboxname_lockpath: {config_dir}/lock
idlesocket: {config_dir}/socket/idle
notifysocket: {config_dir}/socket/notify
lmtpsocket: {config_dir}/socket/lmtp
servername: mx.{domain}
syslog_prefix: peakhour-lab/cyrus

# Users sign in as userN@{domain}, as on Dovecot; mailboxes live in the domain.
virtdomains: userid
# The lab's namespace: top-level folders with / (Dovecot's layout), or
# everything under INBOX. with . (Cyrus's own).
altnamespace: {alt}
unixhierarchysep: {unix}

# Passwords are the lab's, in a SASL database of the lab's own. Loopback
# benchmark: plain text logins without TLS are allowed.
allowplaintext: yes
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: {sasldb}
sasl_mech_list: PLAIN LOGIN

# Mailboxes are made on first login or delivery, with the special folders.
autocreate_quota: 0
autocreate_post: yes
autocreate_inbox_folders: Drafts|Sent|Trash
autocreate_subscribe_folders: Drafts|Sent|Trash
xlist-drafts: Drafts
xlist-sent: Sent
xlist-trash: Trash
lmtp_downcase_rcpt: yes
# Every benchmark message is delivered, even one whose Message-ID was seen.
duplicatesuppression: no

# IDLE: Cyrus's idled is not run (as a START entry it leaves the master's
# session, where `lab down` could not find it); imapd polls the mailbox each
# second while a client idles instead of Cyrus's default minute, so new mail
# is announced within a second.
imapidlepoll: 1

# JMAP (Cyrus's httpd) needs the conversations database. CalDAV (with
# scheduling, RFC 6638) is served by the same httpd for a lab `--with caldav`.
httpmodules: {httpmodules}
# The domain whose calendar addresses are local: an invitation to
# mailto:userN@{domain} is delivered to that user's schedule inbox. Cyrus's
# default is the servername (mx.{domain}), which would send it as iMIP mail.
calendar_user_address_set: {domain}
conversations: yes
conversations_db: twoskip
# JMAP push (EventSource) would look for changes this often (Cyrus's default
# is a minute). Cyrus reads it only with WebSockets enabled, and Debian's
# httpd is built without Wslay, so its EventSource answers 204 all the same
# and peakhour's JMAP users poll instead (docs/lab.md).
jmap_pushpoll: 1s
# JMAP EmailSubmission hands mail to Postfix's loopback port without AUTH.
smtp_backend: host
smtp_host: 127.0.0.1:{smtp_noauth}

tls_server_cert: {cert}
tls_server_key: {key}
",
        config_dir = config_dir.display(),
        partition = layout.cyrus_partition().display(),
        domain = config.domain,
        alt = yes_no(alt),
        unix = yes_no(unix),
        sasldb = layout.cyrus_sasldb().display(),
        smtp_noauth = config.ports.smtp_noauth,
        cert = layout.cyrus_tls_cert().display(),
        key = layout.cyrus_tls_key().display(),
        httpmodules = if config.runs(OptionalServer::Caldav) {
            "caldav jmap"
        } else {
            "jmap"
        },
    )
}

/// `cyrus.conf`: the services, each on its lab port.
pub(crate) fn master_conf(config: &LabConfig, layout: &Layout) -> String {
    let conf = layout.cyrus_imapd_conf();
    let conf = conf.display();
    let p = config.ports;
    let processes = config.users.saturating_mul(2).saturating_add(100);
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start.
START {{
  recover cmd=\"{package}ctl_cyrusdb -C {conf} -r\"
}}

# maxchild: two sessions per user (an online client and a sender) and room;
# Cyrus's default caps (100 IMAP, 50 POP3) would refuse a large lab's users.
SERVICES {{
  imap cmd=\"{private}imapd -C {conf}\" listen=\"127.0.0.1:{imap}\" prefork=2 maxchild={processes}
  imaps cmd=\"{private}imapd -C {conf} -s\" listen=\"127.0.0.1:{imaps}\" prefork=0 maxchild={processes}
  pop3 cmd=\"{private}pop3d -C {conf}\" listen=\"127.0.0.1:{pop3}\" prefork=0 maxchild={processes}
  lmtp cmd=\"{package}lmtpd -C {conf} -a\" listen=\"127.0.0.1:{lmtp}\" prefork=1 maxchild=100
  http cmd=\"{package}httpd -C {conf}\" listen=\"127.0.0.1:{jmap}\" prefork=2 maxchild={processes}
}}
",
        package = PACKAGE_BIN,
        private = PRIVATE_BIN,
        imap = p.imap,
        imaps = p.imaps,
        pop3 = p.pop3,
        lmtp = p.lmtp,
        jmap = p.jmap,
    )
}

/// The text `db_load -T` reads: for each user, the key
/// `userN NUL domain NUL userPassword` and the password, backslashes escaped
/// as `db_load` wants.
pub(crate) fn sasldb_text(config: &LabConfig, password: &str) -> String {
    let password = password.replace('\\', "\\\\");
    let domain = config.domain.replace('\\', "\\\\");
    (1..=config.users)
        .map(|n| format!("user{n}\\00{domain}\\00userPassword\n{password}\n"))
        .collect()
}

/// Postfix's `smtpd.conf` for Cyrus SASL: its own copy of the users.
pub(crate) fn postfix_smtpd_conf(layout: &Layout) -> String {
    format!(
        "pwcheck_method: auxprop\nauxprop_plugin: sasldb\nsasldb_path: {}\nmech_list: PLAIN LOGIN\n",
        layout.postfix_sasl_dir().join("sasldb2").display()
    )
}

/// The master's command line. Without `-d` it stays in the foreground, in
/// the session the lab made; `-D` keeps its stdout and stderr (the console).
pub(crate) fn command(layout: &Layout) -> ServerCommand {
    let path = |p: std::path::PathBuf| p.display().to_string();
    let mut command = ServerCommand::new(
        vec![
            MASTER.into(),
            "-C".into(),
            path(layout.cyrus_imapd_conf()),
            "-M".into(),
            path(layout.cyrus_master_conf()),
            "-p".into(),
            path(layout.cyrus_pid_file()),
            "-D".into(),
        ],
        Some(PACKAGE_BIN),
    );
    command.more_helper_dirs = &[PRIVATE_BIN];
    command
}

/// Cyrus's directories and files, and the SASL databases of Cyrus and
/// Postfix. The mail partition and databases persist across restarts, as
/// Dovecot's store does.
pub(crate) fn prepare(config: &LabConfig, layout: &Layout, password: &str) -> Result<(), LabError> {
    let (uid, gid) = system_user()?;
    let cyrus = Some((uid, gid));
    dir::ensure_dir(&layout.cyrus_dir(), 0o755, None)?;
    let config_dir = layout.cyrus_config_dir();
    dir::ensure_dir(&config_dir, 0o750, cyrus)?;
    for sub in ["socket", "proc", "lock"] {
        dir::ensure_dir(&config_dir.join(sub), 0o750, cyrus)?;
    }
    dir::ensure_dir(&layout.cyrus_partition(), 0o750, cyrus)?;
    write(
        &layout.cyrus_imapd_conf(),
        imapd_conf(config, layout).as_bytes(),
        0o644,
        None,
    )?;
    write(
        &layout.cyrus_master_conf(),
        master_conf(config, layout).as_bytes(),
        0o644,
        None,
    )?;
    for (from, to) in [
        (layout.server_cert(), layout.cyrus_tls_cert()),
        (layout.server_key(), layout.cyrus_tls_key()),
    ] {
        let bytes = std::fs::read(&from).map_err(|e| LabError::io(&from, e))?;
        write(&to, &bytes, 0o600, cyrus)?;
    }
    let users = sasldb_text(config, password);
    load_sasldb(&layout.cyrus_sasldb(), &users, cyrus)?;
    let sasl_dir = layout.postfix_sasl_dir();
    dir::ensure_dir(&sasl_dir, 0o755, None)?;
    write(
        &sasl_dir.join("smtpd.conf"),
        postfix_smtpd_conf(layout).as_bytes(),
        0o644,
        None,
    )?;
    let postfix = nix::unistd::User::from_name("postfix")
        .ok()
        .flatten()
        .map(|u| (u.uid.as_raw(), u.gid.as_raw()));
    load_sasldb(&sasl_dir.join("sasldb2"), &users, postfix)
}

fn write(path: &Path, bytes: &[u8], mode: u32, owner: Option<(u32, u32)>) -> Result<(), LabError> {
    let file = dir::write_file(path, bytes, mode)?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
            .map_err(|e| LabError::io(path, e))?;
    }
    Ok(())
}

/// Writes a fresh SASL database at `path` from `db_load -T` text on stdin
/// (the passwords never touch another file or the command line), owned by
/// `owner` and readable by it alone.
fn load_sasldb(path: &Path, text: &str, owner: Option<(u32, u32)>) -> Result<(), LabError> {
    dir::remove_if_present(path)?;
    let failed = |why: String| LabError::io(path, std::io::Error::other(why));
    let mut child = Command::new(DB_LOAD)
        .args(["-T", "-t", "hash"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot run {DB_LOAD}: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| failed(format!("writing to {DB_LOAD}: {e}")))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed(format!("{DB_LOAD}: {e}")))?;
    if !output.status.success() {
        return Err(failed(format!(
            "{DB_LOAD} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| LabError::io(path, e))?;
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| LabError::io(path, e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
            .map_err(|e| LabError::io(path, e))?;
    }
    Ok(())
}

/// How many users log in at once while their mailboxes are made.
const PROVISIONING_PARALLEL: u32 = 8;
/// The longest a provisioning login may take (connect, greeting, LOGIN).
const PROVISIONING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Makes every user's mailboxes once Cyrus is up, by logging each in over
/// IMAP (`autocreate_quota`), so that the first delivery to a user never
/// races its first login: Cyrus fails one of the two (LMTP's with 451
/// "Mailbox already exists", which Postfix then holds). The first login of a
/// user takes about 0.8 s here, so users already made (counted in
/// `cyrus/provisioned`) are not logged in again.
pub(crate) fn provision(
    config: &LabConfig,
    layout: &Layout,
    password: &str,
) -> Result<(), LabError> {
    let marker = layout.cyrus_dir().join("provisioned");
    let done: u32 = dir::read_to_string(&marker)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    if done >= config.users {
        return Ok(());
    }
    let next = std::sync::atomic::AtomicU32::new(done + 1);
    let failure = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|scope| {
        for _ in 0..PROVISIONING_PARALLEL {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n > config.users {
                        return;
                    }
                    let user = config.user_address(n);
                    if let Err(why) = imap_login(config.ports.imap, &user, password) {
                        let mut failure = failure.lock().unwrap_or_else(|e| e.into_inner());
                        failure.get_or_insert(format!("{user}: {why}"));
                        return;
                    }
                }
            });
        }
    });
    if let Some(why) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(LabError::ServerFailed {
            server: "Cyrus",
            reason: format!("a user's mailboxes could not be made: {why}"),
            log: layout.cyrus_console(),
        });
    }
    dir::write_file(&marker, config.users.to_string().as_bytes(), 0o644)?;
    Ok(())
}

/// One IMAP LOGIN and LOGOUT, with blocking sockets.
fn imap_login(port: u16, user: &str, password: &str) -> Result<(), String> {
    use std::io::{BufRead as _, BufReader};
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(PROVISIONING_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    // The password is the lab's alphanumeric one; quoted all the same.
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    write!(writer, "a LOGIN {} {}\r\n", quote(user), quote(password)).map_err(|e| e.to_string())?;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("connection closed".into());
        }
        if let Some(status) = line.strip_prefix("a ") {
            if !status.starts_with("OK") {
                return Err(status.trim().to_owned());
            }
            break;
        }
    }
    let _ = writer.write_all(b"b LOGOUT\r\n");
    Ok(())
}

/// The uid of Cyrus's system user and the gid of its group.
fn system_user() -> Result<(u32, u32), LabError> {
    let missing = || LabError::MissingPackage {
        what: "Cyrus's system user `cyrus`",
        path: "/etc/passwd",
        package: "cyrus-common",
    };
    let uid = nix::unistd::User::from_name(SYSTEM_USER)
        .ok()
        .flatten()
        .ok_or_else(missing)?
        .uid
        .as_raw();
    let gid = nix::unistd::Group::from_name(SYSTEM_GROUP)
        .ok()
        .flatten()
        .ok_or_else(missing)?
        .gid
        .as_raw();
    Ok((uid, gid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab() -> (LabConfig, Layout) {
        let mut config = LabConfig::new("/srv/lab");
        config.users = 2;
        config.mail_server = crate::MailServer::Cyrus;
        (config.clone(), Layout::new(&config.dir))
    }

    #[test]
    fn imapd_conf_keeps_everything_in_the_lab() {
        let (config, layout) = lab();
        let conf = imapd_conf(&config, &layout);
        assert!(conf.contains("configdirectory: /srv/lab/cyrus/config\n"));
        assert!(conf.contains("partition-default: /srv/lab/cyrus/spool\n"));
        assert!(conf.contains("proc_path: /srv/lab/cyrus/config/proc\n"));
        assert!(conf.contains("sasl_sasldb_path: /srv/lab/cyrus/sasldb2\n"));
        assert!(conf.contains("smtp_host: 127.0.0.1:10026\n"));
        assert!(conf.contains("altnamespace: yes\nunixhierarchysep: yes\n"));
        // Cyrus refuses an option with an empty value.
        assert!(
            conf.lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .all(|l| l
                    .split_once(": ")
                    .is_some_and(|(_, v)| !v.trim().is_empty())),
            "{conf}"
        );
    }

    #[test]
    fn caldav_with_scheduling_is_served_only_when_asked_for() {
        let (mut config, layout) = lab();
        let conf = imapd_conf(&config, &layout);
        assert!(conf.contains("httpmodules: jmap\n"), "{conf}");
        config.with.insert(crate::OptionalServer::Caldav);
        let conf = imapd_conf(&config, &layout);
        assert!(conf.contains("httpmodules: caldav jmap\n"), "{conf}");
        // Invitations to the lab's users stay on the server.
        assert!(conf.contains("calendar_user_address_set: bench.test\n"));
        assert!(!config.runs_radicale());
        assert!(!config.services().iter().any(|(s, _)| *s == "caldav"));
        let endpoints = crate::Endpoints::of(&config);
        assert_eq!(
            endpoints.caldav.as_deref(),
            Some("http://127.0.0.1:10081/dav/calendars/")
        );
    }

    #[test]
    fn every_service_gets_the_config_and_a_loopback_port() {
        let (config, layout) = lab();
        let conf = master_conf(&config, &layout);
        let services: Vec<&str> = conf.lines().filter(|l| l.contains("listen=")).collect();
        assert_eq!(services.len(), 5, "{conf}");
        for line in services {
            assert!(line.contains("-C /srv/lab/cyrus/imapd.conf"), "{line}");
            assert!(line.contains("listen=\"127.0.0.1:"), "{line}");
        }
        assert!(conf.contains("listen=\"127.0.0.1:10081\""));
        assert!(conf.contains(&format!("{PRIVATE_BIN}imapd -C")));
    }

    #[test]
    fn namespaces_cyrus_can_play() {
        assert_eq!(namespace(&Namespace::default()), Ok((true, true)));
        let inbox = Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        };
        assert_eq!(namespace(&inbox), Ok((false, false)));
        let other = Namespace {
            prefix: "INBOX/".into(),
            separator: '/',
        };
        assert!(namespace(&other).is_err());
    }

    #[test]
    fn sasldb_text_is_key_and_password_lines() {
        let (config, _) = lab();
        assert_eq!(
            sasldb_text(&config, "pa\\ss"),
            "user1\\00bench.test\\00userPassword\npa\\\\ss\n\
             user2\\00bench.test\\00userPassword\npa\\\\ss\n"
        );
    }
}
