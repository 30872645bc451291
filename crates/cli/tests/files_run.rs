//! File-server runs end to end (issue 15): `peakhour run` and `peakhour sweep` with the
//! NetBench disk mix and the NBENCH trace, against the lab's Samba (`--target lab` on a
//! lab started with Samba, as `lab up --with smb`) and against a directory. Each run is
//! kept short: small workspaces, short think times, one measured iteration, a few
//! seconds of replay.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{PEAKHOUR, start_lab_with};
use peakhour_lab::{LabGuard, Layout, OptionalServer};
use serde_json::Value;

/// A disk mix that runs in seconds: 256 KB workspaces, 1+3+1 iterations of 4 pieces.
const SHORT_MIX: &[&str] = &[
    "--profile",
    "netbench-disk-mix",
    "--workspace",
    "256KB",
    "--start-delay",
    "300ms",
    "--work-per-iteration",
    "4",
    // Three, not one: the measured window is the time every client is in its measured
    // iterations, and with one of them a client held up by a busy machine could shrink
    // it to a few milliseconds without a single read (it happened once under load).
    "--measured-iterations",
    "3",
    "--interval",
    "1s",
    "--seed",
    "5",
];

fn validator(schema: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(schema);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

fn check_schema(schema: &str, file: &Path) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let problems: Vec<String> = validator(schema)
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{}: {problems:#?}", file.display());
    doc
}

/// A lab of `users` users with Samba, and its directory.
fn samba_lab(users: u32) -> (tempfile::TempDir, LabGuard) {
    let (dir, lab) = start_lab_with(users, &[OptionalServer::Smb]);
    assert!(lab.status.endpoints.smb.is_some(), "{:?}", lab.status);
    (dir, lab)
}

/// `peakhour ARGS --target lab --lab-dir DIR`.
fn lab_command(lab: &LabGuard, args: &[&str]) -> Command {
    let mut command = Command::new(PEAKHOUR);
    command
        .args(args)
        .args(["--target", "lab", "--lab-dir", &lab.status.dir]);
    command
}

/// The lab share's directory on disk: one directory per user.
fn share_dir(lab: &LabGuard) -> PathBuf {
    Layout::new(&lab.status.dir).samba_share()
}

/// Every user directory of the lab's share is empty: nothing left in the workspaces.
fn user_dirs_empty(lab: &LabGuard) -> bool {
    (1..=lab.status.users).all(|n| empty(&share_dir(lab).join(format!("user{n}"))))
}

/// A recursive listing of the lab's share by `smbclient` (Samba's own client, not
/// peakhour), signed in as user1.
fn smbclient_listing(lab: &LabGuard, scratch: &Path) -> String {
    let auth = scratch.join("smb-auth");
    std::fs::write(
        &auth,
        format!("username = user1\npassword = {}\n", lab.status.password),
    )
    .unwrap();
    let endpoint = lab.status.endpoints.smb.as_deref().unwrap();
    let port = endpoint
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap();
    let out = Command::new("smbclient")
        .args(["//127.0.0.1/peakhour", "-p", port, "-A"])
        .arg(&auth)
        .args(["-c", "recurse ON; ls"])
        .output()
        .expect("smbclient (scripts/setup.sh installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn show(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits for a child, killing it (and failing) if it outlives `limit`: a hang guard,
/// not a measurement.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("peakhour did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// Checks a disk mix's summary: bytes moved, per-operation percentiles, no error.
fn check_mix_summary(run_dir: &Path, clients: u64) -> Value {
    let summary = check_schema("summary.schema.json", &run_dir.join("summary.json"));
    assert_eq!(summary["users"], clients);
    let throughput = &summary["throughput"];
    let bytes = throughput["bytes_per_second"].as_f64().unwrap();
    assert!(bytes > 0.0, "{throughput}");
    let mbit = throughput["megabits_per_second"].as_f64().unwrap();
    assert!(
        (mbit - bytes * 8.0 / 1_048_576.0).abs() < 0.01,
        "{throughput}"
    );
    let counters = &summary["counters"];
    assert!(counters["bytes_read"].as_u64().unwrap() > 0, "{counters}");
    assert!(
        counters["bytes_written"].as_u64().unwrap() > 0,
        "{counters}"
    );
    for op in ["file.read", "file.write", "file.open", "file.close"] {
        let a = &summary["actions"][op];
        assert!(a["count"].as_u64().unwrap() > 0, "{op}: {a}");
        for p in ["p50_ms", "p95_ms", "p99_ms"] {
            assert!(a[p].as_f64().is_some(), "{op} {p}: {a}");
        }
    }
    assert_eq!(
        summary["errors_by_kind"],
        serde_json::json!({}),
        "the disk mix expects every operation to succeed"
    );
    summary
}

/// Issue 15's first Must show: `run --profile netbench-disk-mix --target lab --users 8`
/// on the lab's Samba. An independent smbclient sees the eight workspaces while it runs,
/// the summary has throughput in bytes/s and per-operation percentiles, and the last mix
/// leaves every user's directory empty.
#[test]
fn issue_15_disk_mix_on_the_labs_samba_with_8_clients_is_measured_and_cleaned_up() {
    let (_lab_dir, lab) = samba_lab(8);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let mut command = lab_command(&lab, &["run"]);
    command
        .args(SHORT_MIX)
        .args(["--users", "8", "--think-time", "150ms", "--out"])
        .arg(&run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();

    // While it runs: smbclient, not peakhour, lists the clients' workspaces, each in
    // its user's directory of the share.
    let deadline = Instant::now() + Duration::from_secs(60);
    let workspace = |n: u32| format!("\\user{n}\\clients\\client{n}");
    let listing = loop {
        let listing = smbclient_listing(&lab, out.path());
        if (1..=8).all(|n| listing.contains(&workspace(n))) {
            break listing;
        }
        assert!(Instant::now() < deadline, "no workspaces seen: {listing}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = wait_bounded(child, Duration::from_secs(120));
    assert!(output.status.success(), "{}", show(&output));
    assert!(listing.contains("file000.dat"), "{listing}");

    let summary = check_mix_summary(&run_dir, 8);
    assert_eq!(summary["profile"], "netbench-disk-mix");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("bytes/s"), "{stdout}");
    assert!(stdout.contains("nothing left behind"), "{stdout}");
    assert!(
        user_dirs_empty(&lab),
        "the last mix deletes every workspace"
    );
    assert!(!smbclient_listing(&lab, out.path()).contains("clients"));

    // The run directory is complete, with the lab's Samba in the monitor.
    for file in ["config.toml", "record.json", "intervals.csv", "report.html"] {
        assert!(run_dir.join(file).exists(), "{file}");
    }
    let config = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(config.contains("[files]") && config.contains("target = \"smb\""));
    assert!(config.contains(lab.status.endpoints.smb.as_deref().unwrap()));
    assert!(
        !config.contains(&lab.status.password),
        "no password in config.toml"
    );
    let monitor = std::fs::read_to_string(run_dir.join("monitor.csv")).unwrap();
    assert!(
        monitor.contains("group_samba_cpu_pct"),
        "{}",
        &monitor[..200.min(monitor.len())]
    );
}

/// `--target lab` on a lab without Samba says how to get one, before any load.
#[test]
fn issue_15_a_lab_without_samba_is_refused_for_a_file_run() {
    let (_lab_dir, lab) = common::start_lab(1);
    let output = lab_command(&lab, &["run", "--profile", "netbench-disk-mix"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("lab up --with smb"), "{stderr}");
}

#[test]
fn issue_15_disk_mix_over_a_directory_is_measured_and_cleaned_up() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let output = Command::new(PEAKHOUR)
        .arg("run")
        .args(SHORT_MIX)
        .args(["--users", "8", "--think-time", "20ms", "--dir"])
        .arg(target.path())
        .arg("--out")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output));
    check_mix_summary(&run_dir, 8);
    assert!(empty(target.path()), "the last mix deletes every workspace");
}

/// The first lines of Debian's client.txt: the replay is bounded by them and by
/// --duration, not the 458,344 operations of the whole trace.
fn short_loadfile(dir: &Path, lines: usize) -> std::path::PathBuf {
    let full = std::fs::read_to_string("/usr/share/dbench/client.txt")
        .expect("Debian's dbench ships /usr/share/dbench/client.txt (scripts/setup.sh)");
    let head: Vec<&str> = full.lines().take(lines).collect();
    let path = dir.join("client-head.txt");
    std::fs::write(&path, head.join("\n")).unwrap();
    path
}

fn check_replay(run_dir: &Path, output: &Output) -> Value {
    assert!(
        output.status.code().is_some_and(|c| c == 0 || c == 1),
        "{}",
        show(output)
    );
    let summary = check_schema("summary.schema.json", &run_dir.join("summary.json"));
    assert_eq!(summary["profile"], "nbench");
    assert_eq!(summary["users"], 4);
    for op in [
        "nbench.NTCreateX",
        "nbench.ReadX",
        "nbench.WriteX",
        "nbench.Close",
    ] {
        assert!(
            summary["actions"][op]["count"].as_u64().unwrap() > 0,
            "{op}: {}",
            summary["actions"]
        );
    }
    assert!(summary["throughput"]["bytes_per_second"].as_f64().unwrap() > 0.0);
    // Answers the trace expected, refusals included (an open of a missing file expects
    // OBJECT_NAME_NOT_FOUND), count as successes; any other answer is an error named
    // by what came and what was expected.
    for (kind, _) in summary["errors_by_kind"].as_object().unwrap() {
        assert!(kind.contains("(expected NT_STATUS_"), "{kind}");
    }
    let create = &summary["actions"]["nbench.NTCreateX"];
    assert!(
        create["error_ratio"].as_f64().unwrap() < 0.05,
        "opens that expect NOT_FOUND get it: {create}"
    );
    summary
}

#[test]
fn issue_15_nbench_replays_client_txt_over_smb_and_over_a_directory() {
    let (_lab_dir, lab) = samba_lab(4);
    let work = tempfile::tempdir().unwrap();
    let loadfile = short_loadfile(work.path(), 20_000);
    let replay = [
        "run",
        "--profile",
        "nbench",
        "--users",
        "4",
        "--ramp-up",
        "1s",
        "--duration",
        "3s",
        "--interval",
        "1s",
    ];

    let smb_dir = work.path().join("smb-run");
    let output = lab_command(&lab, &replay)
        .arg("--loadfile")
        .arg(&loadfile)
        .arg("--out")
        .arg(&smb_dir)
        .output()
        .unwrap();
    check_replay(&smb_dir, &output);
    assert!(
        user_dirs_empty(&lab),
        "the clients' directories are deleted"
    );

    let target = tempfile::tempdir().unwrap();
    let dir_run = work.path().join("dir-run");
    let output = Command::new(PEAKHOUR)
        .args(replay)
        .arg("--loadfile")
        .arg(&loadfile)
        .arg("--dir")
        .arg(target.path())
        .arg("--out")
        .arg(&dir_run)
        .output()
        .unwrap();
    check_replay(&dir_run, &output);
    assert!(empty(target.path()));
}

/// A sweep of growing client counts over SMB: the capacity curve is bytes/s against
/// clients, and --price gives dollars per Mbit/s as seed 004 computed them.
#[test]
fn issue_15_a_file_sweep_over_smb_gives_bytes_per_second_and_price_per_mbit() {
    let (_lab_dir, lab) = samba_lab(4);
    let out = tempfile::tempdir().unwrap();
    let sweep_dir = out.path().join("sweep");
    let output = lab_command(&lab, &["sweep"])
        .args(SHORT_MIX)
        .args([
            "--users",
            "1,2,4",
            "--think-time",
            "20ms",
            "--price",
            "2659",
            "--out",
        ])
        .arg(&sweep_dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output));
    let capacity = check_schema("capacity.schema.json", &sweep_dir.join("capacity.json"));
    let sweep = &capacity["sweep"];
    assert_eq!(sweep["load"], "clients");
    assert_eq!(sweep["throughput"], "bytes_per_second");
    assert_eq!(sweep["steps_run"], serde_json::json!([1, 2, 4]));
    let peak = capacity["peak"]["throughput"].as_f64().unwrap();
    let price = &sweep["price_performance"];
    assert_eq!(price["throughput_unit"], "Mbit/s");
    let mbit = peak * 8.0 / 1_048_576.0;
    assert!((price["peak_throughput"].as_f64().unwrap() - mbit).abs() < 1e-6);
    let per = price["per_throughput_unit"].as_f64().unwrap();
    assert!((per - 2659.0 / mbit).abs() < 1e-6, "{price}");
    let csv = std::fs::read_to_string(sweep_dir.join("capacity.csv")).unwrap();
    assert!(csv.starts_with("clients,throughput_bytes_per_s,"), "{csv}");
    let html = std::fs::read_to_string(sweep_dir.join("capacity.html")).unwrap();
    assert!(html.contains("bytes/s") && html.contains("clients"));
    assert!(user_dirs_empty(&lab));
}

/// SIGINT mid-run: the run stops, cleans up and writes what it measured, marked
/// interrupted (exit 130).
#[test]
fn issue_15_sigint_stops_a_file_run_and_still_cleans_up() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let child = Command::new(PEAKHOUR)
        .arg("run")
        .args(SHORT_MIX)
        .args(["--users", "2", "--think-time", "30s", "--dir"])
        .arg(target.path())
        .arg("--out")
        .arg(&run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until both workspaces are there, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(1..=2).all(|n| {
        target
            .path()
            .join(format!("clients/client{n}/file000.dat"))
            .exists()
    }) {
        assert!(Instant::now() < deadline, "no workspace appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let output = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(130), "{}", show(&output));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["interrupted"], true);
    assert!(empty(target.path()), "an interrupted run cleans up too");
}
