//! The local source against this machine's real `/proc`: two reads give
//! plausible values. Bounds only, never timings.

use std::collections::HashSet;
use std::time::Duration;

use peakhour_monitor::{LocalConfig, LocalSource};

#[test]
fn real_proc_sampled_twice_is_plausible() {
    let mut source = LocalSource::new(LocalConfig::default()).unwrap();
    let first = source.sample_now().unwrap();
    assert!(first.system.cpu.is_none());
    // Burn a little CPU so this process has something to show.
    let mut x = 0u64;
    for i in 0..20_000_000u64 {
        x = x.wrapping_mul(31).wrapping_add(i);
    }
    std::hint::black_box(x);
    std::thread::sleep(Duration::from_millis(300));
    let s = source.sample_now().unwrap();

    let cores = s.system.cores;
    assert!(cores >= 1);
    let cpu = s.system.cpu.as_ref().expect("second read has CPU shares");
    let t = cpu.total;
    for v in [
        t.user_pct,
        t.system_pct,
        t.iowait_pct,
        t.steal_pct,
        t.idle_pct,
    ] {
        assert!((0.0..=100.0).contains(&v), "{t:?}");
    }
    assert!(
        (t.user_pct + t.system_pct + t.iowait_pct + t.steal_pct + t.idle_pct - 100.0).abs() < 1e-6
    );
    assert_eq!(cpu.per_core.len(), cores);
    assert!(
        s.system.run_queue.is_some_and(|r| r >= 1.0),
        "procs_running counts the reader"
    );

    let m = s.system.memory;
    assert!(m.total_kb > 0 && m.available_kb <= m.total_kb, "{m:?}");
    assert!(m.swap_used_kb <= m.swap_total_kb);
    assert!(m.major_faults_per_s.is_some_and(|f| f >= 0.0));

    for d in &s.system.disks {
        assert!(
            !d.device.starts_with("loop") && !d.device.starts_with("ram"),
            "{}",
            d.device
        );
        assert!(
            d.util_pct.is_some_and(|u| (0.0..=100.0).contains(&u)),
            "{d:?}"
        );
    }
    let lo = s
        .system
        .networks
        .iter()
        .find(|n| n.interface == "lo")
        .expect("lo is sampled");
    assert!(lo.rx_bytes_per_s.is_some_and(|r| r >= 0.0));

    let me = s.groups.iter().find(|g| g.name == "peakhour").unwrap();
    assert_eq!(me.processes, 1);
    assert!(me.threads >= 1 && me.rss_kb > 0);
    let pct = me.cpu_pct.unwrap();
    // One tick (10 ms) of rounding over a 0.3 s interval is ~3 points.
    assert!(pct >= 0.0 && pct <= 100.0 * cores as f64 + 10.0, "{pct}");
    for g in &s.groups {
        assert!(g.cpu_pct.is_some_and(|c| c >= 0.0), "{g:?}");
        assert!(g.ctx_switches_per_s.is_some_and(|c| c >= 0.0));
    }

    let metrics = s.metrics();
    let names: HashSet<&str> = metrics.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), metrics.len(), "column names are unique");
    for required in [
        "cpu_busy_pct",
        "cpu0_busy_pct",
        "mem_total_kb",
        "net_lo_rx_bytes_per_s",
        "group_dovecot_cpu_pct",
        "monitor_cpu_us",
    ] {
        assert!(names.contains(required), "{required}");
    }
}
