//! A shaped lab's cgroup accounting, read by the local source from files
//! laid out as cgroup v1 lays them out: two reads one second apart (by the
//! clock passed in) give the `lab_*` columns of `monitor.csv`.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use peakhour_analysis::monitor::{MetricKey, SystemField};
use peakhour_monitor::{CgroupFiles, CgroupLayout, CsvWriter, LocalConfig, LocalSource};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The smallest `/proc` the local source reads.
fn fake_proc(root: &Path, idle: u64) {
    write(
        root,
        "stat",
        &format!(
            "cpu  1000 0 500 {idle} 0 0 0 0 0 0\ncpu0 1000 0 500 {idle} 0 0 0 0 0 0\nprocs_running 1\n"
        ),
    );
    write(root, "uptime", "1000.00 1900.00\n");
    write(
        root,
        "meminfo",
        "MemTotal: 1000 kB\nMemAvailable: 500 kB\nCached: 100 kB\n",
    );
}

fn cgroup(dir: &Path, usage_ns: u64, throttled_ns: u64, memory: u64) {
    write(dir, "cpuacct/cpuacct.usage", &format!("{usage_ns}\n"));
    write(
        dir,
        "cpu/cpu.stat",
        &format!("nr_periods 10\nnr_throttled 3\nthrottled_time {throttled_ns}\n"),
    );
    write(dir, "memory/memory.usage_in_bytes", &format!("{memory}\n"));
    // A quarter of it page cache, read beside the usage file.
    let cache = memory / 4;
    write(
        dir,
        "memory/memory.stat",
        &format!("cache 0\nrss 0\ntotal_cache {cache}\ntotal_rss 0\n"),
    );
}

#[test]
fn a_shaped_labs_cgroup_adds_its_cpu_throttling_and_memory_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let (proc_root, group) = (tmp.path().join("proc"), tmp.path().join("cg"));
    fake_proc(&proc_root, 8000);
    cgroup(&group, 2_000_000_000, 0, 64 << 20);
    let files = CgroupFiles {
        layout: CgroupLayout::V1,
        cpu_usage: group.join("cpuacct/cpuacct.usage"),
        memory_usage: group.join("memory/memory.usage_in_bytes"),
        cpu_stat: group.join("cpu/cpu.stat"),
    };
    let mut source = LocalSource::new(LocalConfig {
        proc_root: proc_root.clone(),
        sys_block: tmp.path().join("no-sys-block"),
        groups: Vec::new(),
        cgroup: Some(files),
        ..LocalConfig::default()
    })
    .unwrap();
    let t0 = Instant::now();
    let first = source.sample_at(t0).unwrap();
    assert_eq!(
        first.cgroup.unwrap().cpu_pct,
        None,
        "no rate on a first read"
    );

    fake_proc(&proc_root, 8100);
    // Half a second of CPU in one second, throttled for 0.3 s of it.
    cgroup(&group, 2_500_000_000, 300_000_000, 80 << 20);
    let second = source.sample_at(t0 + Duration::from_secs(1)).unwrap();
    let lab = second.cgroup.unwrap();
    assert!((lab.cpu_pct.unwrap() - 50.0).abs() < 1e-9);
    assert!((lab.throttled_pct.unwrap() - 30.0).abs() < 1e-9);
    assert_eq!(lab.memory_kb, Some(80.0 * 1024.0));

    let metrics = second.metrics();
    let value = |field: SystemField| {
        let column = MetricKey::system(field).column();
        metrics.iter().find(|(c, _)| *c == column).unwrap().1
    };
    assert!((value(SystemField::LabCpuPct).unwrap() - 50.0).abs() < 1e-9);
    assert_eq!(value(SystemField::LabMemoryKb), Some(81920.0));
    assert_eq!(value(SystemField::LabMemoryNoCacheKb), Some(61440.0));

    let mut writer = CsvWriter::new(Vec::new());
    writer.write_sample(&second).unwrap();
    let text = String::from_utf8(writer.into_inner()).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.ends_with(
            "monitor_cpu_us,lab_cpu_pct,lab_cpu_throttled_pct,lab_memory_kb,lab_memory_no_cache_kb"
        ),
        "{header}"
    );
    for column in [
        "lab_cpu_pct",
        "lab_cpu_throttled_pct",
        "lab_memory_kb",
        "lab_memory_no_cache_kb",
    ] {
        assert_eq!(MetricKey::parse(column).unwrap().column(), column);
    }
}

#[test]
fn an_unshaped_lab_has_no_lab_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let proc_root = tmp.path().join("proc");
    fake_proc(&proc_root, 8000);
    let mut source = LocalSource::new(LocalConfig {
        proc_root,
        sys_block: tmp.path().join("no-sys-block"),
        groups: Vec::new(),
        ..LocalConfig::default()
    })
    .unwrap();
    let sample = source.sample_at(Instant::now()).unwrap();
    assert!(sample.cgroup.is_none());
    assert!(!sample.metrics().iter().any(|(c, _)| c.starts_with("lab_")));
}
