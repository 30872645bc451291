//! The local source over a fake `/proc` tree: two reads one second apart
//! (by the clock passed in), with hand-made deltas, give exact rates.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_arguments,
    reason = "tests fail loudly; fixtures spell out every field"
)]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use peakhour_monitor::{GroupSpec, LabMailStore, LocalConfig, LocalSource, MailProbes};

const DISKSTATS: &str = include_str!("fixtures/diskstats");
const NET_DEV: &str = include_str!("fixtures/net_dev");
const MEMINFO: &str = include_str!("fixtures/meminfo");
const VMSTAT: &str = include_str!("fixtures/vmstat");

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// `/proc/PID/{stat,status,io}` for a fake process.
fn process(
    root: &Path,
    pid: u32,
    comm: &str,
    ppid: u32,
    ticks: u64,
    start: u64,
    rss_kb: u64,
    ctx: u64,
    written: u64,
) {
    let stat = format!(
        "{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 {ticks} 0 0 0 20 0 1 0 {start} 1000000 200 18446744073709551615"
    );
    write(root, &format!("{pid}/stat"), &stat);
    write(
        root,
        &format!("{pid}/status"),
        &format!(
            "Name:\t{comm}\nVmRSS:\t{rss_kb} kB\nThreads:\t1\nvoluntary_ctxt_switches:\t{ctx}\nnonvoluntary_ctxt_switches:\t0\n"
        ),
    );
    write(
        root,
        &format!("{pid}/io"),
        &format!(
            "rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: {written}\ncancelled_write_bytes: 0\n"
        ),
    );
}

fn first_read(root: &Path) {
    write(
        root,
        "stat",
        "cpu  1000 0 500 8000 100 0 0 0 0 0\ncpu0 500 0 250 4000 50 0 0 0 0 0\ncpu1 500 0 250 4000 50 0 0 0 0 0\nprocs_running 2\n",
    );
    write(root, "loadavg", "0.50 0.40 0.30 1/100 999\n");
    write(root, "uptime", "1000.00 1900.00\n");
    write(
        root,
        "pressure/cpu",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    );
    write(
        root,
        "pressure/io",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    );
    write(root, "meminfo", MEMINFO);
    write(root, "vmstat", VMSTAT);
    write(
        root,
        "diskstats",
        &format!("{DISKSTATS} 254       1 vda1 10 0 20 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"),
    );
    write(root, "net/dev", NET_DEV);
    process(root, 1, "systemd", 0, 500, 1, 9000, 10, 0);
    process(root, 100, "dovecot", 1, 100, 50, 4000, 10, 0);
    process(root, 101, "imap", 100, 1000, 60, 6000, 100, 4096);
    process(root, 200, "master", 1, 30, 70, 3000, 10, 0);
    process(root, 201, "anvil", 200, 7, 80, 1000, 10, 0);
}

fn second_read(root: &Path) {
    // +60 user, +20 system, +100 idle, +20 iowait (per core: half each).
    write(
        root,
        "stat",
        "cpu  1060 0 520 8100 120 0 0 0 0 0\ncpu0 530 0 260 4050 60 0 0 0 0 0\ncpu1 530 0 260 4050 60 0 0 0 0 0\nprocs_running 5\n",
    );
    write(root, "uptime", "1001.00 1901.00\n");
    write(
        root,
        "pressure/cpu",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1250000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    );
    write(
        root,
        "vmstat",
        &VMSTAT.replace("pgmajfault 9976", "pgmajfault 10026"),
    );
    // vda: +100 reads, +2048 sectors (1 MiB), +200 ms reading, io_ticks +500 ms, weighted +1000 ms.
    let disks = DISKSTATS.replace(
        "vda 193320 16050 15490914 254845 27232 52257 17814744 70945 0 23696 328289",
        "vda 193420 16050 15492962 255045 27232 52257 17814744 70945 0 24196 329289",
    );
    assert_ne!(disks, DISKSTATS, "fixture line changed: update this test");
    write(
        root,
        "diskstats",
        &format!("{disks} 254       1 vda1 10 0 20 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"),
    );
    let net = NET_DEV.replace(
        "lo:  996181   16400    0    0    0     0          0         0   996181   16400",
        "lo: 1996181   17400    0    0    0     0          0         0  1996181   17400",
    );
    assert_ne!(net, NET_DEV, "fixture line changed: update this test");
    write(root, "net/dev", &net);
    process(root, 100, "dovecot", 1, 110, 50, 4000, 12, 0); // +10 ticks
    process(root, 101, "imap", 100, 1040, 60, 6000, 130, 4096 + 8192); // +40 ticks, +8 KiB written
    process(root, 102, "imap", 100, 20, 100_050, 5000, 8, 0); // born 0.5 s ago: all 20 ticks count
    process(root, 201, "anvil", 200, 12, 80, 1000, 10, 0); // +5 ticks; master 200 exited
    fs::remove_dir_all(root.join("200")).unwrap();
}

#[test]
fn two_reads_of_a_fake_proc_give_exact_rates() {
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let sys_block = dir.path().join("sys/block");
    for d in ["vda", "zram0", "loop0"] {
        fs::create_dir_all(sys_block.join(d)).unwrap();
    }
    let queue = dir.path().join("queue");
    for (sub, files) in [
        ("incoming", 1),
        ("active", 2),
        ("deferred/3", 4),
        ("hold", 0),
    ] {
        fs::create_dir_all(queue.join(sub)).unwrap();
        for i in 0..files {
            fs::write(queue.join(sub).join(format!("M{i}")), "").unwrap();
        }
    }
    first_read(&proc_root);
    let mut source = LocalSource::new(LocalConfig {
        proc_root: proc_root.clone(),
        sys_block,
        groups: GroupSpec::defaults(),
        mail: MailProbes {
            postfix_queue_dir: Some(queue),
            dovecot_ports: Vec::new(),
            not_dovecot: false,
        },
        cgroup: None,
        client_bytes: None,
    })
    .unwrap();
    let t0 = Instant::now();
    let first = source.sample_at(t0).unwrap();
    assert!(first.system.cpu.is_none(), "first read has no rates");
    assert_eq!(first.groups[0].cpu_pct, None);
    assert_eq!(first.system.memory.total_kb, 24_684_092);

    second_read(&proc_root);
    let s = source.sample_at(t0 + Duration::from_secs(1)).unwrap();
    let cpu = s.system.cpu.as_ref().unwrap();
    // Deltas 60 / 20 / 20 / 100 of 200 ticks.
    assert!((cpu.total.user_pct - 30.0).abs() < 1e-9);
    assert!((cpu.total.system_pct - 10.0).abs() < 1e-9);
    assert!((cpu.total.iowait_pct - 10.0).abs() < 1e-9);
    assert!((cpu.total.idle_pct - 50.0).abs() < 1e-9);
    assert_eq!(cpu.per_core.len(), 2);
    assert!((cpu.per_core[1].busy_pct() - 40.0).abs() < 1e-9);
    assert_eq!(s.system.run_queue, Some(5.0));
    assert_eq!(s.system.load1, Some(0.5));
    assert_eq!(s.system.pressure.cpu_some_pct, Some(25.0));
    assert_eq!(s.system.pressure.io_some_pct, Some(0.0));
    assert_eq!(
        s.system.pressure.memory_some_pct, None,
        "no /proc/pressure/memory: empty, not an error"
    );
    assert_eq!(s.system.memory.major_faults_per_s, Some(50.0));

    // vda kept; vda1 (partition), loop*, ... skipped; zram0 is a whole device.
    let names: Vec<&str> = s.system.disks.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(names, ["vda", "zram0"]);
    let vda = &s.system.disks[0];
    assert_eq!(vda.reads_per_s, Some(100.0));
    assert_eq!(vda.read_kb_per_s, Some(1024.0));
    assert_eq!(vda.util_pct, Some(50.0));
    assert_eq!(vda.queue_len, Some(1.0));
    assert!((vda.await_ms.unwrap() - 2.0).abs() < 1e-9);

    let lo = s
        .system
        .networks
        .iter()
        .find(|n| n.interface == "lo")
        .unwrap();
    assert_eq!(lo.rx_bytes_per_s, Some(1_000_000.0));
    assert_eq!(lo.tx_packets_per_s, Some(1000.0));
    assert_eq!(lo.errors_per_s, Some(0.0));

    let dovecot = &s.groups[0];
    assert_eq!((dovecot.name.as_str(), dovecot.processes), ("dovecot", 3));
    // 10 + 40 + 20 (newborn) ticks at 100 Hz over 1 s.
    assert!((dovecot.cpu_pct.unwrap() - 70.0).abs() < 1e-9);
    assert_eq!(dovecot.rss_kb, 15_000);
    assert_eq!(dovecot.write_bytes_per_s, Some(8192.0));
    assert_eq!(dovecot.ctx_switches_per_s, Some(2.0 + 30.0 + 8.0));
    let postfix = &s.groups[1];
    // master exited; its anvil is orphaned and no longer under `master`.
    assert_eq!(postfix.processes, 0);
    assert_eq!(postfix.cpu_pct, Some(0.0));
    let peakhour = &s.groups[2];
    assert_eq!(
        peakhour.processes, 0,
        "the test process is not in the fake tree"
    );

    let q = s.mail.postfix_queue.unwrap();
    assert_eq!((q.incoming, q.active, q.deferred, q.hold), (1, 2, 4, 0));
    assert_eq!(s.mail.dovecot_processes, Some(3));
    assert_eq!(s.mail.dovecot_connections, Some(2), "two imap processes");

    let metrics = s.metrics();
    let get = |n: &str| {
        metrics
            .iter()
            .find(|(name, _)| name == n)
            .and_then(|(_, v)| *v)
    };
    assert_eq!(get("cpu_busy_pct"), Some(40.0));
    assert_eq!(get("disk_vda_util_pct"), Some(50.0));
    assert_eq!(get("net_lo_rx_bytes_per_s"), Some(1_000_000.0));
    assert_eq!(get("group_dovecot_processes"), Some(3.0));
    assert_eq!(get("postfix_queue_deferred"), Some(4.0));
    assert_eq!(get("psi_memory_some_pct"), None);
}

#[test]
fn a_cyrus_lab_is_watched_as_cyrus_with_no_dovecot_columns() {
    // One host: a Cyrus lab (master 300 with imapd, httpd and lmtpd), its
    // Postfix (master 200), and a Dovecot of some other lab (100).
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let sys_block = dir.path().join("sys/block");
    first_read(&proc_root);
    for (pid, comm, ticks) in [
        (300, "master", 10),
        (301, "imapd", 100),
        (302, "httpd", 200),
        (303, "lmtpd", 30),
    ] {
        let ppid = if pid == 300 { 1 } else { 300 };
        process(&proc_root, pid, comm, ppid, ticks, 90, 2000, 10, 0);
    }
    let masters = |name: &str| match name {
        "cyrus" => Some(300),
        "postfix" => Some(200),
        _ => None,
    };
    let groups = GroupSpec::for_lab(LabMailStore::Cyrus, masters);
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["cyrus", "postfix", "peakhour"]);
    let mut source = LocalSource::new(LocalConfig {
        proc_root: proc_root.clone(),
        sys_block,
        groups,
        mail: MailProbes {
            postfix_queue_dir: None,
            dovecot_ports: vec![10143],
            not_dovecot: true,
        },
        cgroup: None,
        client_bytes: None,
    })
    .unwrap();
    let t0 = Instant::now();
    source.sample_at(t0).unwrap();
    second_read(&proc_root);
    // imapd +50 ticks, httpd +100: 150 ticks at 100 Hz over 1 s.
    process(&proc_root, 301, "imapd", 300, 150, 90, 2000, 10, 0);
    process(&proc_root, 302, "httpd", 300, 300, 90, 2000, 10, 0);
    let s = source.sample_at(t0 + Duration::from_secs(1)).unwrap();
    let cyrus = &s.groups[0];
    assert_eq!((cyrus.name.as_str(), cyrus.processes), ("cyrus", 4));
    assert!((cyrus.cpu_pct.unwrap() - 150.0).abs() < 1e-9);
    // Postfix's master 200 exited in the second read; Cyrus's `master` is
    // not Postfix's, whatever its name.
    assert_eq!(s.groups[1].processes, 0);
    assert_eq!(s.mail.dovecot_processes, None);
    assert_eq!(s.mail.dovecot_connections, None);
    let metrics = s.metrics();
    assert!(
        metrics
            .iter()
            .all(|(name, _)| !name.starts_with("group_dovecot")),
        "no dovecot group on a Cyrus lab"
    );
    let get = |n: &str| {
        metrics
            .iter()
            .find(|(name, _)| name == n)
            .and_then(|(_, v)| *v)
    };
    assert_eq!(get("group_cyrus_processes"), Some(4.0));
    assert_eq!(get("dovecot_processes"), None);
}

#[test]
fn a_dovecot_lab_keeps_its_groups_and_adds_its_optional_servers() {
    let masters = |name: &str| match name {
        "dovecot" => Some(100),
        "postfix" => Some(200),
        "radicale" => Some(400),
        _ => None,
    };
    let groups = GroupSpec::for_lab(LabMailStore::Dovecot, masters);
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["dovecot", "postfix", "peakhour", "radicale"]);
    assert_eq!(groups[0].ancestor_pids, [100]);
    // A Cyrus lab whose master is not known has no cyrus group at all.
    let none = GroupSpec::for_lab(LabMailStore::Cyrus, |_| None);
    let names: Vec<&str> = none.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["postfix", "peakhour"]);
}
