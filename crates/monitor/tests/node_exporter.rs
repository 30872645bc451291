//! node_exporter against local `/proc`: started by this test on a free
//! loopback port, both sources sampled over the same interval, system CPU
//! % must agree within a few points.
//!
//! Needs Debian's `prometheus-node-exporter` package
//! (`apt-get install prometheus-node-exporter`).
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use peakhour_monitor::{LocalConfig, LocalSource, NodeExporterSource, Source};

const BINARY: &str = "/usr/bin/prometheus-node-exporter";

/// Kills the exporter this test started, by its PID, however the test ends.
struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_exporter() -> (Exporter, String) {
    assert!(
        Path::new(BINARY).exists(),
        "{BINARY} is missing: install it with `apt-get install prometheus-node-exporter` \
         (scripts/setup.sh should do this)"
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(BINARY)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        // Debian's default excludes `lo`; the lab lives on loopback.
        .arg("--collector.netdev.device-exclude=^$")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Exporter(child), format!("http://127.0.0.1:{port}/metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_exporter_agrees_with_local_proc() {
    let (_exporter, url) = start_exporter();
    let mut remote = NodeExporterSource::new(&url, Duration::from_secs(5)).unwrap();
    // Wait for it to listen (it is usually up in well under a second).
    let mut ready = false;
    for _ in 0..100 {
        if remote.scrape().await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "node_exporter did not answer on {url}");

    let mut local = LocalSource::new(LocalConfig::default()).unwrap();
    let mut busy = Vec::new();
    for round in 0..3 {
        // Read both back to back, so their intervals nearly coincide.
        let l = local.sample_now().unwrap();
        let r = remote.sample().await.unwrap();
        if round == 0 {
            assert!(r.system.cpu.is_none());
            assert!(r.groups.is_empty(), "process groups are local-only");
        } else {
            let lc = l.system.cpu.unwrap().total;
            let rc = r.system.cpu.unwrap().total;
            busy.push((lc.busy_pct(), rc.busy_pct(), lc.idle_pct, rc.idle_pct));
            assert_eq!(l.system.cores, r.system.cores);
            let (lm, rm) = (l.system.memory, r.system.memory);
            assert_eq!(lm.total_kb, rm.total_kb);
            assert!(r.system.networks.iter().any(|n| n.interface == "lo"));
            let local_disks: Vec<_> = l.system.disks.iter().map(|d| &d.device).collect();
            for d in &r.system.disks {
                assert!(
                    local_disks.contains(&&d.device),
                    "{} not seen locally",
                    d.device
                );
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    for (local_busy, remote_busy, local_idle, remote_idle) in &busy {
        println!("busy local {local_busy:.1}% vs node_exporter {remote_busy:.1}%");
        assert!((local_busy - remote_busy).abs() <= 5.0, "{busy:?}");
        assert!((local_idle - remote_idle).abs() <= 5.0, "{busy:?}");
    }
}
