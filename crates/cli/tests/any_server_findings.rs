//! Issue 12, what a run learns about a server that is not the lab: its
//! capabilities, its errors grouped with the server's own words, a
//! connection limit said as such, the MTA's own delivery time beside the
//! end-to-end latency, process groups by executable, user and parent, and a
//! node_exporter as the monitor's source.
//!
//! The servers are the lab's. The connection limit is a small proxy in
//! front of the lab's Dovecot that lets three connections through at a time
//! and greets the rest with `* BYE`, as Courier's MAXPERIP does: a fault the
//! lab's Dovecot is not configured to show. The node_exporter is Debian's
//! `prometheus-node-exporter`, started by this test on a free loopback port.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{PEAKHOUR, peakhour, start_lab};

/// A short mmb-medium run: every action falls due.
const SHORT_RUN: [&str; 14] = [
    "--profile",
    "mmb-medium",
    "--speed",
    "400",
    "--duration",
    "15s",
    "--ramp-up",
    "2s",
    "--drain",
    "8s",
    "--interval",
    "5s",
    "--seed",
    "12",
];

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// `peakhour run` against explicit endpoints of the lab, with its password.
fn explicit_run(imap: &str, smtp: &str, password: &str, out: &Path, extra: &[&str]) -> Output {
    let (imap, smtp) = (format!("imap://{imap}"), format!("smtp://{smtp}"));
    let mut args = vec![
        "run",
        "--target",
        "explicit",
        "--imap",
        &imap,
        "--smtp",
        &smtp,
        "--smtp-auth",
        "none",
        "--users",
        "6",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(SHORT_RUN);
    args.extend(extra);
    let output = Command::new(PEAKHOUR)
        .args(&args)
        .env("PEAKHOUR_PASSWORD", password)
        .output()
        .unwrap();
    eprintln!(
        "$ peakhour {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A proxy to `upstream` that lets `limit` connections through at once and
/// greets any more with `* BYE` before closing (Courier's MAXPERIP). Serves
/// at most 2,000 connections: bounded.
fn limiting_proxy(upstream: String, limit: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming().take(2000) {
            let Ok(mut client) = client else { return };
            if open.load(Ordering::SeqCst) >= limit {
                let _ = client.write_all(b"* BYE Too many connections from your IP\r\n");
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            open.fetch_add(1, Ordering::SeqCst);
            let open = open.clone();
            std::thread::spawn(move || {
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let (mut server, mut client) = (server, client);
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    address
}

#[test]
fn issue_12_capabilities_mta_time_and_a_connection_limit_said_as_such() {
    let (_dir, lab) = start_lab(6);
    let status = lab.status.clone();
    let out = tempfile::tempdir().unwrap();
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &status.dir]);
    assert!(init.status.success());

    // On the lab: capabilities in the summary, the terminal and the report;
    // the MTA's own delivery time beside the end-to-end latency.
    let lab_run = out.path().join("lab");
    let mut args = vec![
        "run",
        "--lab-dir",
        &status.dir,
        "--out",
        lab_run.to_str().unwrap(),
    ];
    args.extend(SHORT_RUN);
    let run = peakhour(&args);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let summary = json(&lab_run.join("summary.json"));
    let offered = &summary["server_capabilities"];
    let has = |protocol: &str, name: &str| {
        offered[protocol]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == name)
    };
    assert!(has("imap", "IMAP4REV1") && has("imap", "MOVE"), "{offered}");
    assert!(has("smtp", "PIPELINING"), "{offered}");
    assert!(stdout.contains("server offers:"), "{stdout}");
    let delivery = &summary["delivery"];
    assert!(
        delivery["latency_includes"]
            .as_str()
            .unwrap()
            .contains("notice to the client"),
        "{delivery}"
    );
    let mta = &delivery["mta"];
    assert_eq!(
        mta["deliveries"], delivery["delivered_recipients"],
        "one Postfix delivery per recipient seen: {delivery}"
    );
    assert!(mta["p95_ms"].as_f64().unwrap() <= delivery["max_ms"].as_f64().unwrap());
    assert!(stdout.contains("MTA's own delivery time: p50"), "{stdout}");
    let report = read(&lab_run.join("report.html"));
    assert!(
        report.contains("id=\"mta-delivery\""),
        "the report shows the MTA's time"
    );
    assert!(
        report.contains("IMAP (after login)"),
        "the report shows capabilities"
    );
    let host = read(&lab_run.join("host.json"));
    assert!(
        host.contains("dpkg-query"),
        "a lab target lists its packages: {host}"
    );

    // An explicit target behind a limit of 3 connections: the errors carry
    // the server's own text once, and the limit is said as such.
    let proxy = limiting_proxy(status.endpoints.imap.clone(), 3);
    let smtp = status.endpoints.smtp_noauth.clone().unwrap();
    let limited = out.path().join("limited");
    let run = explicit_run(&proxy, &smtp, &status.password, &limited, &[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let summary = json(&limited.join("summary.json"));
    let limit = &summary["connection_limit"];
    assert!(limit["max_logged_on"].as_u64().unwrap() <= 3, "{limit}");
    assert!(stdout.contains("CONNECTION LIMIT?"), "{stdout}");
    let logon = summary["error_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["action"] == "logon" && g["kind"] == "imap:closed")
        .cloned()
        .unwrap_or_else(|| panic!("a logon group: {}", summary["error_groups"]));
    let example = logon["example"].as_str().unwrap();
    assert!(example.starts_with("as user"), "the login sent: {example}");
    assert_eq!(
        example.matches("Too many connections").count(),
        1,
        "{example}"
    );
    let errors = read(&limited.join("errors.csv"));
    assert!(errors.starts_with("interval_start_s,phase,action,error_kind,count,example\n"));
    assert_eq!(
        errors.matches("Too many connections").count(),
        1,
        "once: {errors}"
    );
    assert!(stdout.contains("Too many connections"), "{stdout}");
    let report = read(&limited.join("report.html"));
    assert!(report.contains("id=\"error-groups\"") && report.contains("Too many connections"));
    assert!(report.contains("Connection limit?"));
    // What is known of an explicit target: its greeting, never this host's packages.
    let host = read(&limited.join("host.json"));
    assert!(!host.contains("dpkg-query"), "{host}");
    assert!(
        summary["delivery"]["mta_unknown"]
            .as_str()
            .unwrap()
            .contains("not readable"),
        "{}",
        summary["delivery"]
    );
}

/// Kills the exporter this test started, by its PID.
struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_node_exporter() -> (Exporter, String) {
    let binary = "/usr/bin/prometheus-node-exporter";
    assert!(
        Path::new(binary).exists(),
        "{binary} is missing: scripts/setup.sh installs prometheus-node-exporter"
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it listens (well under a second here), at most 10 s.
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (Exporter(child), format!("http://127.0.0.1:{port}/metrics"))
}

#[test]
fn issue_12_groups_by_exe_user_and_parent_and_a_node_exporter_as_the_source() {
    let (_dir, lab) = start_lab(6);
    let status = lab.status.clone();
    let out = tempfile::tempdir().unwrap();
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &status.dir]);
    assert!(init.status.success());
    let smtp = status.endpoints.smtp_noauth.clone().unwrap();

    // Dovecot's imap processes by executable and owner (the lab's mail
    // uid), and everything under a `dovecot` master by parent.
    let grouped = out.path().join("grouped");
    explicit_run(
        &status.endpoints.imap,
        &smtp,
        &status.password,
        &grouped,
        &[
            "--group",
            "imap_exe=exe:^/usr/lib/dovecot/imap$,user:5000",
            "--group",
            "dovecot_tree=parent:^dovecot$",
        ],
    );
    let monitor = read(&grouped.join("monitor.csv"));
    let header: Vec<&str> = monitor.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (imap_exe, tree) = (
        column("group_imap_exe_processes"),
        column("group_dovecot_tree_processes"),
    );
    let most = |i: usize| {
        monitor
            .lines()
            .skip(1)
            .filter_map(|l| l.split(',').nth(i)?.parse::<f64>().ok())
            .fold(0.0, f64::max)
    };
    assert!(
        most(imap_exe) >= 1.0,
        "imap processes found by exe and user"
    );
    assert!(
        most(tree) > most(imap_exe),
        "the tree holds the master and its helpers too"
    );
    let report = read(&grouped.join("report.html"));
    assert!(report.contains("these process groups: imap_exe, dovecot_tree"));

    // A node_exporter instead of /proc: system metrics, no process groups,
    // and the report says so.
    let (_exporter, url) = start_node_exporter();
    let remote = out.path().join("remote");
    explicit_run(
        &status.endpoints.imap,
        &smtp,
        &status.password,
        &remote,
        &["--node-exporter", &url],
    );
    let monitor = read(&remote.join("monitor.csv"));
    let header = monitor.lines().next().unwrap();
    assert!(header.contains("cpu_busy_pct"), "{header}");
    assert!(!header.contains("group_"), "no process groups: {header}");
    let summary = json(&remote.join("summary.json"));
    assert!(
        summary["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["metric"] == "cpu_busy_pct" && r["samples"].as_u64().unwrap() > 5),
        "{}",
        summary["resources"]
    );
    let report = read(&remote.join("report.html"));
    assert!(
        report.contains("no process group names the server"),
        "the report says what was monitored"
    );
    assert!(!report.contains("CPU Time - dovecot"));

    // --node-exporter and --group cannot go together: a usage error.
    let both = explicit_run(
        &status.endpoints.imap,
        &smtp,
        &status.password,
        &out.path().join("both"),
        &["--node-exporter", &url, "--group", "x=^x$"],
    );
    assert_eq!(both.status.code(), Some(2));
}
