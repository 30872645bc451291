//! The monitor's words for people while it runs: the live line of one
//! sample, and what a local source watches. What sampling cost is worded by
//! `peakhour_analysis::monitor::MonitorReport::cost_line`, beside the data.
//! The binary draws them; the wording lives here, beside what it describes.

use crate::mail::MailProbes;
use crate::sample::Sample;

impl Sample {
    /// The live line of one sample:
    /// `  12s  CPU  34% busy  run queue 2  mem avail 1234 MiB  disk vda 3%  net 1.20 MB/s  mail queue in 0 act 3 def 0`.
    /// A figure the sample lacks is `-`; the disk shown is the busiest.
    pub fn live_text(&self) -> String {
        let sys = &self.system;
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
        let cpu = or_dash(
            sys.cpu
                .as_ref()
                .map(|c| format!("{:3.0}%", c.total.busy_pct())),
        );
        let run_queue = or_dash(sys.run_queue.map(|r| format!("{r:.0}")));
        let disk = or_dash(
            sys.disks
                .iter()
                .filter_map(|d| d.util_pct.map(|u| (d.device.as_str(), u)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(d, u)| format!("{d} {u:.0}%")),
        );
        // A fold from +0.0: `sum()` of no f64 is -0.0, which prints as "-0.00".
        let net = sys.networks.iter().fold(0.0, |sum, n| {
            sum + n.rx_bytes_per_s.unwrap_or(0.0) + n.tx_bytes_per_s.unwrap_or(0.0)
        });
        let queue = or_dash(
            self.mail
                .postfix_queue
                .map(|q| format!("in {} act {} def {}", q.incoming, q.active, q.deferred)),
        );
        format!(
            "{:>6.0}s  CPU {cpu} busy  run queue {run_queue}  mem avail {} MiB  disk {disk}  net {:.2} MB/s  mail queue {queue}",
            self.time_s,
            sys.memory.available_kb / 1024,
            net / 1e6
        )
    }
}

impl MailProbes {
    /// What a local source with these probes watches:
    /// `local /proc, Postfix queue DIR, Dovecot ports 143,993`.
    pub fn describe(&self) -> String {
        let mut what = "local /proc".to_owned();
        if let Some(queue) = &self.postfix_queue_dir {
            what.push_str(&format!(", Postfix queue {}", queue.display()));
        }
        if !self.dovecot_ports.is_empty() && !self.not_dovecot {
            let ports: Vec<String> = self.dovecot_ports.iter().map(u16::to_string).collect();
            what.push_str(&format!(", Dovecot ports {}", ports.join(",")));
        }
        what
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::sample::{
        CpuSample, CpuShares, DiskSample, MailSample, MemorySample, NetworkSample, QueueSizes,
        SystemSample,
    };

    use super::*;

    #[test]
    fn a_first_sample_shows_dashes_for_what_needs_two_reads() {
        let sample = Sample {
            time_s: 0.0,
            system: SystemSample {
                memory: MemorySample {
                    available_kb: 2048 * 1024,
                    ..MemorySample::default()
                },
                ..SystemSample::default()
            },
            ..Sample::default()
        };
        assert_eq!(
            sample.live_text(),
            "     0s  CPU - busy  run queue -  mem avail 2048 MiB  disk -  net 0.00 MB/s  mail queue -"
        );
    }

    #[test]
    fn the_live_line_shows_the_busiest_disk_and_the_whole_network() {
        let disk = |device: &str, util: f64| DiskSample {
            device: device.into(),
            util_pct: Some(util),
            ..DiskSample::default()
        };
        let sample = Sample {
            time_s: 12.4,
            system: SystemSample {
                cpu: Some(CpuSample {
                    total: CpuShares {
                        user_pct: 30.0,
                        system_pct: 4.0,
                        idle_pct: 66.0,
                        ..CpuShares::default()
                    },
                    per_core: Vec::new(),
                }),
                run_queue: Some(2.0),
                disks: vec![disk("vda", 3.0), disk("vdb", 41.0)],
                networks: vec![NetworkSample {
                    interface: "lo".into(),
                    rx_bytes_per_s: Some(600_000.0),
                    tx_bytes_per_s: Some(600_000.0),
                    ..NetworkSample::default()
                }],
                ..SystemSample::default()
            },
            mail: MailSample {
                postfix_queue: Some(QueueSizes {
                    incoming: 0,
                    active: 3,
                    deferred: 1,
                    hold: 0,
                }),
                ..MailSample::default()
            },
            ..Sample::default()
        };
        assert_eq!(
            sample.live_text(),
            "    12s  CPU  34% busy  run queue 2  mem avail 0 MiB  disk vdb 41%  net 1.20 MB/s  mail queue in 0 act 3 def 1"
        );
    }

    #[test]
    fn a_source_says_what_it_watches() {
        assert_eq!(MailProbes::default().describe(), "local /proc");
        let probes = MailProbes {
            postfix_queue_dir: Some(PathBuf::from("/lab/postfix/queue")),
            dovecot_ports: vec![10143, 10993],
            not_dovecot: false,
        };
        assert_eq!(
            probes.describe(),
            "local /proc, Postfix queue /lab/postfix/queue, Dovecot ports 10143,10993"
        );
    }
}
