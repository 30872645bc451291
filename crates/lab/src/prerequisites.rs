//! Is everything the lab runs installed, and may we run it?

use std::path::Path;

use crate::LabError;

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

/// Fails with the first missing package, or if not running as root.
pub(crate) fn check() -> Result<(), LabError> {
    for &(what, path, package) in REQUIRED {
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
