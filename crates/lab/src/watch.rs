//! What the server monitor watches of a lab: its servers' processes (only
//! this lab's, by their masters, when other labs or a system Postfix run on
//! the same host), its mail queue and Dovecot's client ports, and its cgroup
//! when it is shaped. The monitor knows nothing of labs; the lab describes
//! itself in the monitor's terms.

use peakhour_monitor::{CgroupFiles, CgroupLayout, GroupSpec, LabMailStore, MailProbes};

use crate::MailServer;
use crate::cgroup::{CgroupStatus, CgroupVersion};
use crate::layout::Layout;
use crate::state::LabStatus;

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
