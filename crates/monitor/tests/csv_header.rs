//! The header of `monitor.csv` is a contract (docs/metrics.md): it must stay
//! byte for byte what it was before the typed metric keys built it.
#![allow(clippy::unwrap_used)]

use peakhour_analysis::monitor::MetricKey;
use peakhour_monitor::{
    CpuSample, CpuShares, CsvWriter, DiskSample, GroupSample, MailSample, NetworkSample,
    QueueSizes, Sample, SystemSample,
};

/// A sample with two cores, a device and an interface whose kernel names
/// need sanitizing, the three default groups and an extra one, and every probe.
fn full_sample() -> Sample {
    let shares = CpuShares {
        user_pct: 1.0,
        system_pct: 2.0,
        iowait_pct: 0.0,
        steal_pct: 0.0,
        idle_pct: 97.0,
    };
    let group = |name: &str| GroupSample {
        name: name.to_owned(),
        ..GroupSample::default()
    };
    Sample {
        time_s: 1.0,
        system: SystemSample {
            cores: 2,
            cpu: Some(CpuSample {
                total: shares,
                per_core: vec![shares, shares],
            }),
            disks: vec![
                DiskSample {
                    device: "dm-0".into(),
                    ..DiskSample::default()
                },
                DiskSample {
                    device: "vda".into(),
                    ..DiskSample::default()
                },
            ],
            networks: vec![
                NetworkSample {
                    interface: "br-lan.10".into(),
                    ..NetworkSample::default()
                },
                NetworkSample {
                    interface: "lo".into(),
                    ..NetworkSample::default()
                },
            ],
            ..SystemSample::default()
        },
        groups: vec![
            group("dovecot"),
            group("postfix"),
            group("peakhour"),
            group("Shells"),
        ],
        mail: MailSample {
            postfix_queue: Some(QueueSizes::default()),
            dovecot_processes: Some(3),
            dovecot_connections: Some(10),
        },
        monitor_cpu_us: Some(250.0),
        cgroup: None,
        client_net: None,
    }
}

/// The header as the monitor wrote it before the metric keys existed.
const HEADER: &str = "time_s,cpu_busy_pct,cpu_user_pct,cpu_system_pct,cpu_iowait_pct,cpu_steal_pct,cpu_idle_pct,\
cpu0_busy_pct,cpu0_user_pct,cpu0_system_pct,cpu0_iowait_pct,cpu0_steal_pct,cpu0_idle_pct,\
cpu1_busy_pct,cpu1_user_pct,cpu1_system_pct,cpu1_iowait_pct,cpu1_steal_pct,cpu1_idle_pct,\
cores,run_queue,load1,psi_cpu_some_pct,psi_io_some_pct,psi_io_full_pct,psi_memory_some_pct,psi_memory_full_pct,\
mem_total_kb,mem_available_kb,mem_cached_kb,swap_total_kb,swap_used_kb,major_faults_per_s,swap_in_pages_per_s,swap_out_pages_per_s,\
disk_dm_0_reads_per_s,disk_dm_0_writes_per_s,disk_dm_0_read_kb_per_s,disk_dm_0_write_kb_per_s,disk_dm_0_util_pct,disk_dm_0_queue_len,disk_dm_0_await_ms,\
disk_vda_reads_per_s,disk_vda_writes_per_s,disk_vda_read_kb_per_s,disk_vda_write_kb_per_s,disk_vda_util_pct,disk_vda_queue_len,disk_vda_await_ms,\
net_br_lan_10_rx_bytes_per_s,net_br_lan_10_tx_bytes_per_s,net_br_lan_10_rx_packets_per_s,net_br_lan_10_tx_packets_per_s,net_br_lan_10_errors_per_s,net_br_lan_10_drops_per_s,\
net_lo_rx_bytes_per_s,net_lo_tx_bytes_per_s,net_lo_rx_packets_per_s,net_lo_tx_packets_per_s,net_lo_errors_per_s,net_lo_drops_per_s,\
group_dovecot_cpu_pct,group_dovecot_rss_kb,group_dovecot_read_bytes_per_s,group_dovecot_write_bytes_per_s,group_dovecot_processes,group_dovecot_threads,group_dovecot_ctx_switches_per_s,\
group_postfix_cpu_pct,group_postfix_rss_kb,group_postfix_read_bytes_per_s,group_postfix_write_bytes_per_s,group_postfix_processes,group_postfix_threads,group_postfix_ctx_switches_per_s,\
group_peakhour_cpu_pct,group_peakhour_rss_kb,group_peakhour_read_bytes_per_s,group_peakhour_write_bytes_per_s,group_peakhour_processes,group_peakhour_threads,group_peakhour_ctx_switches_per_s,\
group_shells_cpu_pct,group_shells_rss_kb,group_shells_read_bytes_per_s,group_shells_write_bytes_per_s,group_shells_processes,group_shells_threads,group_shells_ctx_switches_per_s,\
postfix_queue_incoming,postfix_queue_active,postfix_queue_deferred,postfix_queue_hold,dovecot_processes,dovecot_connections,monitor_cpu_us\n";

#[test]
fn monitor_csv_header_is_byte_identical() {
    let mut writer = CsvWriter::new(Vec::new());
    writer.write_sample(&full_sample()).unwrap();
    let text = String::from_utf8(writer.into_inner()).unwrap();
    let header = &text[..=text.find('\n').unwrap()];
    assert_eq!(header, HEADER);
}

#[test]
fn every_column_parses_back_into_the_key_that_named_it() {
    for (column, _) in full_sample().metrics() {
        let key = MetricKey::parse(&column)
            .unwrap_or_else(|| panic!("{column} does not parse as a metric key"));
        assert_eq!(key.column(), column);
    }
    assert_eq!(MetricKey::parse("time_s"), None);
}
