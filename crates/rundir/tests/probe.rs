//! Issue 26, item 1: the post-run server probe against hostile servers.
//! Each probe runs in a child process (this test binary again, running
//! only `probe_child`), so that its peak memory (VmHWM) is its own; the
//! child is killed and the test fails if it runs for more than 120 s. No
//! duration is asserted: the machine is shared.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use peakhour_analysis::Redactor;
use peakhour_rundir::TargetSection;

/// How long a child may run before the test calls it a hang.
const HANG: Duration = Duration::from_secs(120);
/// The most memory a probe may reach.
const MAX_VMHWM_KB: u64 = 200 * 1024;

/// How a hostile server treats a connection.
type Serve = fn(TcpStream);

/// A server on a free loopback port that treats each connection with
/// `serve` on a thread of its own. It ends with the test process.
fn server(serve: Serve) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

/// Writes `fill` until the client hangs up (or 16 GiB, far above any cap).
fn endless(stream: &mut TcpStream, fill: &[u8]) {
    for _ in 0..(16u64 << 30) / fill.len() as u64 {
        if stream.write_all(fill).is_err() {
            return;
        }
    }
}

/// Greets, then answers every command with an endless literal.
fn endless_literal(mut stream: TcpStream) {
    let _ = stream.write_all(b"* OK [CAPABILITY IMAP4rev1 ID] hostile ready\r\n");
    let mut line = String::new();
    let _ = BufReader::new(stream.try_clone().unwrap()).read_line(&mut line);
    let _ = stream.write_all(b"* ID (\"name\" {99999999999}\r\n");
    endless(&mut stream, &[b'x'; 65536]);
}

/// A greeting dripped at one byte a second, for ever.
fn drip(mut stream: TcpStream) {
    for byte in b"* OK dripping".iter().cycle().take(3600) {
        if stream.write_all(&[*byte]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// An SMTP greeting of endless `220-` lines.
fn endless_continuation(mut stream: TcpStream) {
    endless(&mut stream, b"220-hostile.test ESMTP still greeting\r\n");
}

/// A greeting line that never ends.
fn endless_line(mut stream: TcpStream) {
    endless(&mut stream, &[b'2'; 65536]);
}

/// Peak memory of a running process, kB.
fn vmhwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs the probe against `imap` and `smtp` in a child; its stdout (the
/// facts as JSON) and its peak memory.
fn probe_in_child(imap: &str, smtp: &str) -> (String, u64) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "probe_child", "--ignored", "--nocapture", "-q"])
        .env("PEAKHOUR_TEST_PROBE_IMAP", imap)
        .env("PEAKHOUR_TEST_PROBE_SMTP", smtp)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut peak = 0;
    loop {
        if let Some(kb) = vmhwm_kb(child.id()) {
            peak = peak.max(kb);
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > HANG {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("the probe of {imap} and {smtp} still ran after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    (String::from_utf8_lossy(&output.stdout).into_owned(), peak)
}

#[test]
#[ignore = "the child half of the probe tests: run by them, in a process of its own"]
fn probe_child() {
    let target = TargetSection {
        imap: std::env::var("PEAKHOUR_TEST_PROBE_IMAP").unwrap(),
        smtp: std::env::var("PEAKHOUR_TEST_PROBE_SMTP").unwrap(),
        security_shortcuts: Vec::new(),
        lab: None,
        source_addresses: Vec::new(),
    };
    let facts = peakhour_rundir::host::collect(Some(&target), &Redactor::default());
    println!("FACTS {}", serde_json::to_string(&facts.servers).unwrap());
}

#[test]
fn issue_26_item_1_hostile_servers_end_the_probe_within_its_deadline_and_memory_bounds() {
    let cases: [(&str, Serve, Serve, &[&str]); 3] = [
        (
            "an endless literal (IMAP ID) and an endless 220- greeting",
            endless_literal,
            endless_continuation,
            &["imap", "hostile ready", "smtp", "still greeting"],
        ),
        (
            "a greeting dripped at one byte a second",
            drip,
            drip,
            &["FACTS []"],
        ),
        (
            "a greeting line that never ends",
            endless_line,
            endless_line,
            &["FACTS []"],
        ),
    ];
    for (what, imap, smtp, expected) in cases {
        let (stdout, peak_kb) = probe_in_child(&server(imap), &server(smtp));
        eprintln!("{what}: VmHWM {peak_kb} kB; {stdout}");
        assert!(peak_kb > 0, "{what}: no VmHWM read");
        assert!(
            peak_kb < MAX_VMHWM_KB,
            "{what}: the probe reached {peak_kb} kB"
        );
        for expected in expected {
            assert!(
                stdout.contains(expected),
                "{what}: {expected:?} in {stdout}"
            );
        }
        // A literal is never read, so no ID is recorded from one.
        assert!(!stdout.contains("IMAP ID"), "{what}: {stdout}");
    }
}
