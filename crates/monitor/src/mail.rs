//! Mail-server probes: Postfix's queue sizes and Dovecot's processes and
//! connections, read locally.
//!
//! * **Queues** are counted as files, recursively, in the `incoming`,
//!   `active`, `deferred` and `hold` subdirectories of Postfix's queue
//!   directory (the lab's is `<labdir>/postfix/queue`; a stock system's
//!   `/var/spool/postfix`). Each message is one file. Counting costs one
//!   `readdir` per directory and grows with the queue: about 1 µs per queued
//!   message, so a 100,000-message deferred queue costs ~0.1 s per sample.
//! * **Dovecot connections** are the ESTABLISHED TCP sockets whose local
//!   port is one of [`MailProbes::dovecot_ports`] (a `sock_diag` dump, see
//!   [`crate::ConnectionCounter`]; `/proc/net/tcp` and `tcp6` where netlink
//!   is not permitted). With no ports configured, the count of `imap` and `pop3`
//!   processes under `dovecot` stands in: exact with Dovecot's default
//!   `client_limit = 1`, an undercount when one process serves many clients.

use std::path::{Path, PathBuf};

use crate::error::MonitorError;
use crate::sample::QueueSizes;

/// What the mail probes look at.
#[derive(Debug, Clone, Default)]
pub struct MailProbes {
    /// Postfix's queue directory; `None` skips the queue columns' values.
    pub postfix_queue_dir: Option<PathBuf>,
    /// Dovecot's listening ports (IMAP, IMAPS, POP3 ...); empty = count
    /// `imap`/`pop3` processes instead.
    pub dovecot_ports: Vec<u16>,
    /// The mail store watched is not Dovecot (a Cyrus lab): the
    /// `dovecot_processes` and `dovecot_connections` columns stay empty
    /// rather than count some other Dovecot on the host, or the other
    /// store's connections as Dovecot's.
    pub not_dovecot: bool,
}

/// Counts regular files below `dir`, recursively. A directory that vanishes
/// while being walked (Postfix moves files constantly) counts as empty.
pub fn count_files(dir: &Path) -> Result<u64, MonitorError> {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(MonitorError::read(d, e)),
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => count += 1,
                _ => {}
            }
        }
    }
    Ok(count)
}

/// Postfix's queue sizes, or `None` when `queue_dir` does not exist.
pub fn postfix_queue_sizes(queue_dir: &Path) -> Result<Option<QueueSizes>, MonitorError> {
    if !queue_dir.is_dir() {
        return Ok(None);
    }
    Ok(Some(QueueSizes {
        incoming: count_files(&queue_dir.join("incoming"))?,
        active: count_files(&queue_dir.join("active"))?,
        deferred: count_files(&queue_dir.join("deferred"))?,
        hold: count_files(&queue_dir.join("hold"))?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_files_are_counted_recursively() {
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path();
        for sub in ["incoming", "active", "deferred/A", "deferred/B", "hold"] {
            std::fs::create_dir_all(q.join(sub)).unwrap();
        }
        for f in [
            "incoming/1",
            "active/2",
            "active/3",
            "deferred/A/4",
            "deferred/B/5",
            "deferred/B/6",
        ] {
            std::fs::write(q.join(f), b"x").unwrap();
        }
        let sizes = postfix_queue_sizes(q).unwrap().unwrap();
        assert_eq!(
            sizes,
            QueueSizes {
                incoming: 1,
                active: 2,
                deferred: 3,
                hold: 0
            }
        );
        assert_eq!(postfix_queue_sizes(&q.join("missing")).unwrap(), None);
    }
}
