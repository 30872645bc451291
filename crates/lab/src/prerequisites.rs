//! Is everything the lab runs installed, and may we run it?

use std::collections::BTreeSet;
use std::path::Path;

use crate::{LabError, MailServer, OptionalServer};

/// (what, file, Debian package) for everything `lab up` executes.
const REQUIRED: &[(&str, &str, &str)] = &[
    ("Postfix", "/usr/lib/postfix/sbin/master", "postfix"),
    ("the postfix command", "/usr/sbin/postfix", "postfix"),
    (
        "OpenSSL (for the lab's certificates)",
        "/usr/bin/openssl",
        "openssl",
    ),
    ("setsid", "/usr/bin/setsid", "util-linux"),
];

/// What each mail store needs, as [`REQUIRED`].
fn store(server: MailServer) -> &'static [(&'static str, &'static str, &'static str)] {
    match server {
        MailServer::Dovecot => DOVECOT,
        MailServer::Cyrus => CYRUS,
    }
}

/// Cyrus: the packages' programs, and `imapd` and `pop3d` unpacked by
/// `scripts/setup.sh` (their packages conflict with Dovecot's).
const CYRUS: &[(&str, &str, &str)] = &[
    ("Cyrus's master", crate::cyrus::MASTER, "cyrus-common"),
    ("Cyrus's lmtpd", "/usr/lib/cyrus/bin/lmtpd", "cyrus-common"),
    (
        "Cyrus's httpd (JMAP)",
        "/usr/lib/cyrus/bin/httpd",
        "cyrus-caldav",
    ),
    (
        "Cyrus's imapd, unpacked privately by scripts/setup.sh",
        "/opt/peakhour/cyrus/usr/lib/cyrus/bin/imapd",
        "nothing: it would remove Dovecot; run scripts/setup.sh",
    ),
    (
        "Cyrus's pop3d, unpacked privately by scripts/setup.sh",
        "/opt/peakhour/cyrus/usr/lib/cyrus/bin/pop3d",
        "nothing: it would remove Dovecot; run scripts/setup.sh",
    ),
    (
        "Berkeley DB's db_load (for the SASL users)",
        crate::cyrus::DB_LOAD,
        "db-util",
    ),
    (
        "Cyrus SASL's sasldb plugin",
        "/usr/lib/x86_64-linux-gnu/sasl2/libsasldb.so.2",
        "libsasl2-modules-db",
    ),
];

const DOVECOT: &[(&str, &str, &str)] = &[
    ("Dovecot", "/usr/sbin/dovecot", "dovecot-core"),
    (
        "Dovecot's IMAP server",
        "/usr/lib/dovecot/imap",
        "dovecot-imapd",
    ),
    (
        "Dovecot's POP3 server",
        "/usr/lib/dovecot/pop3",
        "dovecot-pop3d",
    ),
    (
        "Dovecot's LMTP server",
        "/usr/lib/dovecot/lmtp",
        "dovecot-lmtpd",
    ),
];

/// What each optional server needs, as [`REQUIRED`].
fn optional(server: OptionalServer) -> &'static [(&'static str, &'static str, &'static str)] {
    match server {
        OptionalServer::Caldav => &[
            ("Radicale", crate::radicale::SCRIPT, "radicale"),
            (
                "setpriv (to run Radicale as its own user)",
                "/usr/bin/setpriv",
                "util-linux",
            ),
        ],
        OptionalServer::Smb => &[
            ("Samba's smbd", "/usr/sbin/smbd", "samba"),
            (
                "Samba's samba-dcerpcd",
                "/usr/libexec/samba/samba-dcerpcd",
                "samba",
            ),
            ("smbpasswd", "/usr/bin/smbpasswd", "samba-common-bin"),
        ],
    }
}

/// Fails with the first missing package (of the mail system, its store
/// `mail_server`, and the optional servers in `with`), or if not running as
/// root.
pub(crate) fn check(
    mail_server: MailServer,
    with: &BTreeSet<OptionalServer>,
) -> Result<(), LabError> {
    // A Cyrus lab's CalDAV is Cyrus's httpd, already required: no Radicale.
    let wanted = with
        .iter()
        .filter(|s| !(**s == OptionalServer::Caldav && mail_server == MailServer::Cyrus))
        .flat_map(|server| optional(*server));
    let needed = REQUIRED.iter().chain(store(mail_server)).chain(wanted);
    for &(what, path, package) in needed {
        if !Path::new(path).exists() {
            return Err(LabError::MissingPackage {
                what,
                path,
                package,
            });
        }
    }
    if !nix::unistd::geteuid().is_root() {
        return Err(LabError::NotRoot);
    }
    Ok(())
}
