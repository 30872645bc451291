//! Issue 13 point 1: a shaped lab (`--cpus`, `--memory`) confines every
//! server process, including those forked later, with a cgroup of its own.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_matches_schema, config, lab_processes, scratch_dir};
use peakhour_lab::{CgroupStatus, Lab, LabConfig, LabGuard, LabStatus, Limits};

fn group_members(cgroup: &CgroupStatus) -> Vec<Vec<i32>> {
    cgroup
        .dirs
        .iter()
        .map(|dir| {
            std::fs::read_to_string(Path::new(dir).join("cgroup.procs"))
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect()
        })
        .collect()
}

/// Logs in over IMAP, so that Dovecot forks an `imap` process for the session.
fn imap_session(status: &LabStatus) -> TcpStream {
    let stream = TcpStream::connect(&status.endpoints.imap).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("* OK"), "{line}");
    write!(
        &stream,
        "a LOGIN {} {}\r\n",
        status.user(1),
        status.password
    )
    .unwrap();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.starts_with("a ") {
            assert!(line.starts_with("a OK"), "{line}");
            return stream;
        }
    }
}

/// A process that burns CPU as fast as it is allowed to.
fn burner() -> Child {
    Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn issue_13_a_shaped_lab_holds_its_servers_to_half_a_core_and_reports_its_limits() {
    let dir = scratch_dir();
    let shaped = LabConfig {
        limits: Limits::default()
            .with_cpus(0.5)
            .unwrap()
            .with_memory(256 << 20)
            .unwrap(),
        ..config(dir.path(), 3)
    };
    let lab = LabGuard::start(&shaped).unwrap();
    let status = lab.lab().status().unwrap();
    assert!(status.healthy, "{status:#?}");
    assert_eq!(status.limits.cpus, Some(0.5));
    assert_eq!(status.limits.memory_bytes, Some(256 << 20));
    let cgroup = status.limits.cgroup.clone().expect("a cgroup");
    assert!(cgroup.name.starts_with("peakhour-lab-"), "{cgroup:?}");
    assert_matches_schema(&status);
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["limits"]["cpus"], 0.5);
    assert_eq!(json["limits"]["memory_bytes"], 268_435_456);

    // The caps are written where the kernel reads them.
    let read = |file: &str| {
        cgroup
            .dirs
            .iter()
            .find_map(|d| std::fs::read_to_string(Path::new(d).join(file)).ok())
            .unwrap_or_default()
    };
    match cgroup.version {
        peakhour_lab::CgroupVersion::V1 => {
            assert_eq!(read("cpu.cfs_quota_us").trim(), "50000");
            assert_eq!(read("cpu.cfs_period_us").trim(), "100000");
            assert_eq!(read("memory.limit_in_bytes").trim(), "268435456");
        }
        peakhour_lab::CgroupVersion::V2 => {
            assert_eq!(read("cpu.max").trim(), "50000 100000");
            assert_eq!(read("memory.max").trim(), "268435456");
        }
    }

    // Every server process is in the group in every hierarchy, including
    // an `imap` process Dovecot forks for a session opened now.
    let _session = imap_session(&status);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        let status = lab.lab().status().unwrap();
        let dovecot = status.servers.iter().find(|s| s.name == "dovecot").unwrap();
        if dovecot.processes.iter().any(|p| p.name == "imap") || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let pids = lab_processes(&status);
    assert!(
        status.servers[0].processes.iter().any(|p| p.name == "imap"),
        "no imap process: {status:#?}"
    );
    for members in group_members(&cgroup) {
        for pid in &pids {
            assert!(
                members.contains(pid),
                "server pid {pid} is not in the group: {members:?}"
            );
        }
    }
    assert!(cgroup.memory_usage_bytes().unwrap() > 0);

    // Two burners in the group would take two cores; the cap holds them to
    // half of one. The ratio is CPU time over elapsed time, both measured here.
    let mut burners = [burner(), burner()];
    for file in cgroup
        .dirs
        .iter()
        .map(|d| Path::new(d).join("cgroup.procs"))
    {
        for b in &burners {
            std::fs::write(&file, b.id().to_string()).unwrap();
        }
    }
    let throttled_before = cgroup.throttled_periods().unwrap();
    let cpu_before = cgroup.cpu_usage_ns().unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let cpu_used = cgroup.cpu_usage_ns().unwrap() - cpu_before;
    let elapsed = started.elapsed();
    let throttled = cgroup.throttled_periods().unwrap() - throttled_before;
    for b in &mut burners {
        b.kill().unwrap();
        b.wait().unwrap();
    }
    let cores = cpu_used as f64 / elapsed.as_nanos() as f64;
    eprintln!(
        "burners in a 0.5-CPU lab: {cores:.3} cores over {elapsed:?}, throttled in {throttled} periods"
    );
    assert!(
        cores < 0.7,
        "the group used {cores:.3} cores with a cap of 0.5"
    );
    assert!(cores > 0.05, "the burners did not run: {cores:.3} cores");
    assert!(throttled > 0, "the cap never bit: {cores:.3} cores");

    // `down` removes the group.
    drop(_session);
    let report = lab.lab().down(false).unwrap();
    assert!(report.warnings.is_empty(), "{report:?}");
    for dir in &cgroup.dirs {
        assert!(!Path::new(dir).exists(), "{dir} outlived `down`");
    }
}

#[test]
fn an_unshaped_lab_has_no_cgroup_and_out_of_range_limits_are_refused() {
    let dir = scratch_dir();
    let lab = LabGuard::start(&config(dir.path(), 2)).unwrap();
    assert_eq!(lab.status.limits.cpus, None);
    assert_eq!(lab.status.limits.memory_bytes, None);
    assert!(lab.status.limits.cgroup.is_none());
    assert_matches_schema(&lab.status);
    drop(lab);

    let other = scratch_dir();
    let tiny = LabConfig {
        limits: Limits {
            millicpus: Some(1),
            memory_bytes: None,
        },
        ..config(other.path(), 2)
    };
    let error = Lab::up(&tiny).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("CPU cap of 0.001 is out of range"),
        "{error}"
    );
}
