//! Is everything the lab runs installed, and may we run it?

use std::collections::BTreeSet;
use std::path::Path;

use crate::{LabError, OptionalServer};

/// (what, file, Debian package) for everything `lab up` executes.
const REQUIRED: &[(&str, &str, &str)] = &[
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
    ("Postfix", "/usr/lib/postfix/sbin/master", "postfix"),
    ("the postfix command", "/usr/sbin/postfix", "postfix"),
    (
        "OpenSSL (for the lab's certificates)",
        "/usr/bin/openssl",
        "openssl",
    ),
    ("setsid", "/usr/bin/setsid", "util-linux"),
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

/// Fails with the first missing package (of the mail system and of the
/// optional servers in `with`), or if not running as root.
pub(crate) fn check(with: &BTreeSet<OptionalServer>) -> Result<(), LabError> {
    let wanted = with.iter().flat_map(|server| optional(*server));
    for &(what, path, package) in REQUIRED.iter().chain(wanted) {
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
