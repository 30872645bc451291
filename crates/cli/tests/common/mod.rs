//! What the live tests share: a private lab on free ports, and running the binary.
#![allow(dead_code, clippy::unwrap_used)] // each test file uses what it needs

use std::process::{Command, Output};

use peakhour_lab::{LabConfig, LabGuard, Ports};

/// The binary under test.
pub(crate) const PEAKHOUR: &str = env!("CARGO_BIN_EXE_peakhour");

/// A lab with `users` users in a temporary directory, on free loopback ports;
/// it stops when the guard is dropped and the directory goes with the TempDir.
pub(crate) fn start_lab(users: u32) -> (tempfile::TempDir, LabGuard) {
    let dir = tempfile::tempdir().unwrap();
    let config = LabConfig {
        users,
        ports: Ports::free().expect("free loopback ports"),
        ..LabConfig::new(dir.path())
    };
    let lab = LabGuard::start(&config).unwrap_or_else(|e| panic!("cannot start the lab: {e}"));
    (dir, lab)
}

/// Runs `peakhour ARGS`, echoing its output into the test's log.
pub(crate) fn peakhour(args: &[&str]) -> Output {
    let output = Command::new(PEAKHOUR).args(args).output().unwrap();
    eprintln!(
        "$ peakhour {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
