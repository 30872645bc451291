//! `lab up --imap-client-limit N`: one Dovecot `imap` process serves up to N
//! sessions, so that thousands of simulated users do not need thousands of
//! processes (issue 16's 5,000-user run, issue 11's soak). Checked by counting
//! the lab's `imap` processes while sessions are logged on.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use common::{config, scratch_dir};
use peakhour_lab::{LabConfig, LabGuard};

/// A plain IMAP session logged on as `login` (loopback, where the lab allows
/// plaintext LOGIN), kept open by its caller.
fn logged_on(address: &str, login: &str, password: &str) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("* OK"), "greeting: {line}");
    write!(reader.get_mut(), "a LOGIN {login} {password}\r\n").unwrap();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "closed during LOGIN"
        );
        if line.starts_with("a ") {
            assert!(line.starts_with("a OK"), "LOGIN {login}: {line}");
            return reader;
        }
    }
}

#[test]
fn issue_16_one_imap_process_serves_up_to_the_client_limit() {
    let dir = scratch_dir();
    let users = 25;
    let lab = LabGuard::start(&LabConfig {
        imap_client_limit: 10,
        ..config(dir.path(), users)
    })
    .unwrap();
    let address = lab
        .status
        .endpoints
        .imap
        .rsplit("//")
        .next()
        .unwrap()
        .to_owned();
    let sessions: Vec<_> = (1..=users)
        .map(|n| {
            logged_on(
                &address,
                &format!("user{n}@{}", lab.status.domain),
                &lab.status.password,
            )
        })
        .collect();
    let status = lab.lab().status().unwrap();
    let imap_processes = status
        .servers
        .iter()
        .flat_map(|s| s.processes.iter())
        .filter(|p| p.name == "imap")
        .count();
    // 25 sessions at 10 per process: 3 processes, not 25.
    assert!(
        (1..=3).contains(&imap_processes),
        "{imap_processes} imap processes for {} sessions",
        sessions.len()
    );
}
