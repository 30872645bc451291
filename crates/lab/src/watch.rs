//! What the server monitor watches of a lab: its servers' processes (only
//! this lab's, by their masters, when other labs or a system Postfix run on
//! the same host), its mail queue and Dovecot's client ports, and its cgroup
//! when it is shaped. The monitor knows nothing of labs; the lab describes
//! itself in the monitor's terms.

use std::path::Path;

use peakhour_monitor::{
    CgroupFiles, CgroupLayout, GroupSpec, LabMailStore, LocalConfig, MailProbes,
};

use crate::MailServer;
use crate::cgroup::{CgroupStatus, CgroupVersion};
use crate::error::LabError;
use crate::layout::Layout;
use crate::lifecycle::Lab;
use crate::state::LabStatus;

/// Samba's processes (Debian 12's 4.17): `smbd` and its helpers, the `samba`
/// group of a file server that is not the lab's (the lab's is scoped to its own).
pub const SAMBA_GROUP: &str = "samba=^(smbd|cleanupd|samba-dcerpc|samba-bgqd|rpcd_)";

/// Which processes the local source counts besides the `--group` ones, when
/// no lab is the target (a lab's own servers are counted whatever this says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watching {
    /// `peakhour monitor`: Dovecot and Postfix by name (and peakhour).
    MailServers,
    /// A mail run against an explicit target: only peakhour, since a Dovecot
    /// or Postfix on this host need not be the target's.
    OnlyPeakhour,
    /// A file run against an SMB server that is not the lab's: peakhour and
    /// every Samba process ([`SAMBA_GROUP`]).
    Samba,
}

/// The local source's settings: the groups `watching` names, or the lab's own
/// servers (only this lab's: other labs or a system Postfix on the same host
/// are left out) and its cgroup; then the `extra` groups (`--group`), and the
/// mail probes.
pub fn local_config(
    lab: Option<&LabStatus>,
    watching: Watching,
    mail: MailProbes,
    extra: Vec<GroupSpec>,
) -> LocalConfig {
    let mut config = LocalConfig {
        mail,
        ..LocalConfig::default()
    };
    match (lab, watching) {
        (Some(lab), _) => {
            config.groups = lab.monitor_groups();
            config.cgroup = lab.cgroup_files();
        }
        (None, Watching::MailServers) => {}
        (None, Watching::OnlyPeakhour) => {
            config.groups = vec![GroupSpec::peakhour()];
            // A Dovecot on this host need not be the target (issue 26): its
            // processes are not counted as the target's connections.
            config.mail.not_dovecot = true;
        }
        (None, Watching::Samba) => {
            config.mail.not_dovecot = true;
            // The constant is a valid spec; a test holds it to that.
            let samba = GroupSpec::parse(SAMBA_GROUP).ok();
            config.groups = [GroupSpec::peakhour()].into_iter().chain(samba).collect();
        }
    }
    config.groups.extend(extra);
    // A mail run's clients count their bytes (peakhour_net::wire_bytes); the
    // monitor on its own runs no load, and SMB clients are not counted.
    if watching == Watching::OnlyPeakhour {
        config.client_bytes = Some(client_wire_bytes);
    }
    config
}

/// This process's protocol clients' bytes, as the monitor reads them.
pub fn client_wire_bytes() -> (u64, u64) {
    let wire = peakhour_net::wire_bytes();
    (wire.sent, wire.received)
}

/// The mail probes `given` (`--postfix-queue`, `--dovecot-port`), each one
/// not given taken from the lab in `dir` when it holds one. A lab there that
/// cannot be read is the error beside the probes as given.
pub fn mail_probes_in(dir: &Path, given: MailProbes) -> (MailProbes, Option<LabError>) {
    let has_lab = Layout::new(dir).state_file().exists();
    if !has_lab || (given.postfix_queue_dir.is_some() && !given.dovecot_ports.is_empty()) {
        return (given, None);
    }
    match Lab::new(dir).status() {
        Ok(status) => (completed(given, &status), None),
        Err(e) => (given, Some(e)),
    }
}

/// `given` completed from `lab`'s probes: the queue, and the ports with
/// whether they are Dovecot's, when not given.
fn completed(mut given: MailProbes, lab: &LabStatus) -> MailProbes {
    let from_lab = lab.mail_probes();
    given.postfix_queue_dir = given.postfix_queue_dir.or(from_lab.postfix_queue_dir);
    if given.dovecot_ports.is_empty() {
        given.dovecot_ports = from_lab.dovecot_ports;
        given.not_dovecot = from_lab.not_dovecot;
    }
    given
}

impl LabStatus {
    /// The process groups of the lab's servers: its mail store (`dovecot` or
    /// `cyrus`), `postfix` and `peakhour`, scoped to this lab's masters, and
    /// `radicale` and `samba` when the lab runs them.
    pub fn monitor_groups(&self) -> Vec<GroupSpec> {
        let store = match self.mail_server {
            MailServer::Dovecot => LabMailStore::Dovecot,
            MailServer::Cyrus => LabMailStore::Cyrus,
        };
        GroupSpec::for_lab(store, |name| self.master_pid(name))
    }

    /// The mail probes: the lab's Postfix queue, and Dovecot's IMAP, IMAPS
    /// and POP3 ports for the connection count.
    pub fn mail_probes(&self) -> MailProbes {
        MailProbes {
            postfix_queue_dir: Some(Layout::new(&self.dir).postfix_queue()),
            dovecot_ports: self.dovecot_client_ports(),
            not_dovecot: self.mail_server != MailServer::Dovecot,
        }
    }

    /// The files of the lab's cgroup the monitor reads, when it is shaped.
    pub fn cgroup_files(&self) -> Option<CgroupFiles> {
        self.limits.cgroup.as_ref().map(CgroupStatus::files)
    }
}

impl CgroupStatus {
    /// The files the monitor reads (`lab status`'s `limits.cgroup`).
    pub fn files(&self) -> CgroupFiles {
        CgroupFiles {
            layout: match self.version {
                CgroupVersion::V1 => CgroupLayout::V1,
                CgroupVersion::V2 => CgroupLayout::V2,
            },
            cpu_usage: self.cpu_usage_file.clone().into(),
            memory_usage: self.memory_usage_file.clone().into(),
            cpu_stat: self.cpu_stat_file.clone().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(config: &LocalConfig) -> Vec<&str> {
        config.groups.iter().map(|g| g.name.as_str()).collect()
    }

    #[test]
    fn without_a_lab_the_groups_are_what_the_command_watches_then_the_extra_ones() {
        let extra = || vec![GroupSpec::parse("nginx=^nginx").expect("valid")];
        let mail = local_config(None, Watching::MailServers, MailProbes::default(), extra());
        let defaults: Vec<String> = GroupSpec::defaults().into_iter().map(|g| g.name).collect();
        assert_eq!(names(&mail)[..defaults.len()], defaults);
        assert_eq!(names(&mail).last(), Some(&"nginx"));
        let run = local_config(None, Watching::OnlyPeakhour, MailProbes::default(), extra());
        assert_eq!(names(&run), ["peakhour", "nginx"]);
        let files = local_config(None, Watching::Samba, MailProbes::default(), Vec::new());
        assert_eq!(names(&files), ["peakhour", "samba"]);
        assert_eq!(files.cgroup, None);
    }

    #[test]
    fn probes_given_are_kept_and_no_lab_is_read_without_a_state_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let given = MailProbes {
            postfix_queue_dir: Some("/var/spool/postfix".into()),
            dovecot_ports: vec![143],
            not_dovecot: false,
        };
        let (probes, error) = mail_probes_in(tmp.path(), given);
        assert!(error.is_none());
        assert_eq!(probes.postfix_queue_dir, Some("/var/spool/postfix".into()));
        assert_eq!(probes.dovecot_ports, [143]);
        let (probes, error) = mail_probes_in(tmp.path(), MailProbes::default());
        assert!(error.is_none());
        assert_eq!(probes.postfix_queue_dir, None);
        assert!(probes.dovecot_ports.is_empty());
    }

    #[test]
    fn a_v2_cgroup_is_read_through_its_own_files() {
        let status = CgroupStatus {
            version: CgroupVersion::V2,
            name: "peakhour-lab".into(),
            dirs: vec!["/sys/fs/cgroup/peakhour-lab".into()],
            cpu_usage_file: "/sys/fs/cgroup/peakhour-lab/cpu.stat".into(),
            memory_usage_file: "/sys/fs/cgroup/peakhour-lab/memory.current".into(),
            cpu_stat_file: "/sys/fs/cgroup/peakhour-lab/cpu.stat".into(),
        };
        let files = status.files();
        assert_eq!(files.layout, CgroupLayout::V2);
        assert_eq!(
            files.memory_usage,
            std::path::PathBuf::from("/sys/fs/cgroup/peakhour-lab/memory.current")
        );
    }
}
