//! What `peakhour capacity` asks of a running lab (issue 25): growing its
//! population (the same lab, ports, shape, storage, password and mail
//! already there, restarted with more users, so that a step of N real users
//! has N accounts), and restarting it with the same settings after a step
//! left it unhealthy (a shaped lab's cgroup out of memory, its Dovecot
//! master killed by the kernel), so that the search can go on.

use crate::error::LabError;
use crate::lifecycle::{Lab, UpReport};
use crate::state::LabState;

/// The Dovecot limits that decide how many sessions a lab can hold, as its
/// `dovecot.conf` sets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DovecotLimits {
    /// `service imap { process_limit }`.
    pub imap_process_limit: u32,
    /// `service imap { client_limit }`: connections per imap process.
    pub imap_client_limit: u32,
}

impl Lab {
    /// Restarts the lab with `users` users when it has fewer, keeping every
    /// other setting and the mail already delivered; `Ok(None)` when it
    /// already has that many.
    pub fn grow_to(&self, users: u32) -> Result<Option<UpReport>, LabError> {
        let state_file = self.layout().state_file();
        let Some(state) = LabState::load(&state_file)? else {
            return Err(LabError::NoLab(self.layout().root().to_path_buf()));
        };
        if state.config.users >= users {
            return Ok(None);
        }
        let mut config = state.config.clone();
        config.users = users;
        self.down(false)?;
        Lab::up(&config).map(Some)
    }

    /// Stops whatever is left of the lab and starts it again with the
    /// settings it was started with, keeping its mail, password and users:
    /// `lab down` then `lab up` of the same directory. A new cgroup comes
    /// with it, so a shaped lab starts from an empty memory charge and no
    /// OOM state.
    pub fn restart(&self) -> Result<UpReport, LabError> {
        let state_file = self.layout().state_file();
        let Some(state) = LabState::load(&state_file)? else {
            return Err(LabError::NoLab(self.layout().root().to_path_buf()));
        };
        self.down(false)?;
        Lab::up(&state.config)
    }

    /// The imap service's process and client limits from the lab's
    /// `dovecot.conf`; `None` for a lab without Dovecot or an unreadable file.
    pub fn dovecot_limits(&self) -> Option<DovecotLimits> {
        let text = std::fs::read_to_string(self.layout().dovecot_conf()).ok()?;
        parse_imap_limits(&text)
    }
}

/// `process_limit` and `client_limit` of the `service imap { }` block.
fn parse_imap_limits(conf: &str) -> Option<DovecotLimits> {
    let start = conf.find("service imap {")?;
    let block = &conf[start..];
    let block = &block[..block.find("\n}")?];
    let value = |key: &str| -> Option<u32> {
        block.lines().map(str::trim).find_map(|l| {
            l.strip_prefix(key)?
                .trim()
                .strip_prefix('=')?
                .trim()
                .parse()
                .ok()
        })
    };
    Some(DovecotLimits {
        imap_process_limit: value("process_limit")?,
        imap_client_limit: value("client_limit")?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_imap_limits_are_read_from_the_rendered_configuration() {
        let mut config = crate::LabConfig::new("/tmp/lab");
        config.users = 3000;
        let conf = crate::render::dovecot_conf(&config, &crate::Layout::new("/tmp/lab"));
        let limits = parse_imap_limits(&conf).unwrap();
        assert_eq!(limits.imap_process_limit, 15100);
        assert!(limits.imap_client_limit >= 1);
    }
}
