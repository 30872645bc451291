//! Issue 26 item 12: a server that forks a child per connection, each child
//! living well under a sampling interval, has its CPU counted. Sampling
//! `/proc` sees few of the children alive; the parent's `cutime`/`cstime`
//! hold the CPU of every child it has reaped.
//!
//! The server is a small Python program started by the test: it forks one
//! child per connection, the child burns a known amount of CPU (measured
//! with `time.process_time`, and written back to the client), and the parent
//! reaps it. The group's CPU summed over the samples must hold at least most
//! of what the children report having burnt. No wall-clock duration is
//! asserted: only CPU amounts.
#![allow(clippy::unwrap_used)] // tests fail loudly

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use peakhour_monitor::{GroupSpec, LocalConfig, LocalSource};

const SERVER: &str = r#"
import os, socket, sys, time
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
for _ in range(200):
    conn, _ = listener.accept()
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        x = 0
        while time.process_time() - start < 0.05:
            x += 1
        conn.sendall(("%d\n" % int((time.process_time() - start) * 1e6)).encode())
        conn.close()
        os._exit(0)
    conn.close()
    os.waitpid(pid, 0)
"#;

/// Stops the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn issue_26_item_12_a_forking_servers_short_lived_children_are_counted_in_its_group() {
    let mut child = Command::new("python3")
        .args(["-c", SERVER])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let server = Server(child);
    let port: u16 = port.trim().parse().unwrap();
    let pid = server.0.id();

    let config = LocalConfig {
        groups: vec![GroupSpec::names("forking", &["python3"]).within(&[pid])],
        ..LocalConfig::default()
    };
    let mut source = LocalSource::new(config).unwrap();
    source.sample_now().unwrap();
    let mut last = Instant::now();
    let mut group_cpu_s = 0.0;
    let mut burnt_us = 0u64;
    let mut most_processes = 0;
    // 40 connections of 50 ms of CPU each, sampled every 0.5 s: the
    // children live a tenth of an interval.
    for connection in 1..=40 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut said = String::new();
        stream.read_to_string(&mut said).unwrap();
        burnt_us += said.trim().parse::<u64>().unwrap();
        if connection % 5 == 0 || connection == 40 {
            // The last child may be reaped just after its answer: wait until
            // the server is alone again before the last sample.
            if connection == 40 {
                std::thread::sleep(Duration::from_millis(200));
            }
            let sample = source.sample_now().unwrap();
            let elapsed = last.elapsed().as_secs_f64();
            last = Instant::now();
            let group = sample.groups.iter().find(|g| g.name == "forking").unwrap();
            most_processes = most_processes.max(group.processes);
            group_cpu_s += group.cpu_pct.unwrap() / 100.0 * elapsed;
        }
    }
    let burnt_s = burnt_us as f64 / 1e6;
    eprintln!(
        "children burnt {burnt_s:.2} s of CPU; the group counted {group_cpu_s:.2} s; \
         at most {most_processes} processes seen"
    );
    assert!(burnt_s >= 40.0 * 0.05, "{burnt_s}");
    // Most of the children's CPU is in the group (sampling the live ones
    // alone sees a few percent of it); not far above it either (the
    // parent's own accept loop costs little).
    assert!(
        group_cpu_s >= 0.8 * burnt_s,
        "the group counted {group_cpu_s:.2} s of the {burnt_s:.2} s its children burnt"
    );
    assert!(
        group_cpu_s <= 1.5 * burnt_s + 0.5,
        "{group_cpu_s} vs {burnt_s}"
    );
}
