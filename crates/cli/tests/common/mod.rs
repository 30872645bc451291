//! What the live tests share: a private lab on free ports, and running the binary.
#![allow(dead_code, clippy::unwrap_used)] // each test file uses what it needs

use std::process::{Command, Output};

use peakhour_lab::{LabConfig, LabGuard, OptionalServer, Ports};

/// The binary under test.
pub(crate) const PEAKHOUR: &str = env!("CARGO_BIN_EXE_peakhour");

/// A lab with `users` users in a temporary directory, on free loopback ports;
/// it stops when the guard is dropped and the directory goes with the TempDir.
pub(crate) fn start_lab(users: u32) -> (tempfile::TempDir, LabGuard) {
    start_lab_configured(users, |_| {})
}

/// [`start_lab`] with optional servers too (`--with caldav`, `--with smb`).
pub(crate) fn start_lab_with(users: u32, with: &[OptionalServer]) -> (tempfile::TempDir, LabGuard) {
    start_lab_configured(users, |config| config.with = with.iter().copied().collect())
}

/// [`start_lab`], with the lab's configuration changed by `configure` first
/// (a namespace, limits ...).
pub(crate) fn start_lab_configured(
    users: u32,
    configure: impl Fn(&mut LabConfig),
) -> (tempfile::TempDir, LabGuard) {
    // 0755: the lab refuses (and does not chmod) a 0700 directory its servers cannot reach.
    let dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .unwrap();
    // Ports found free can be taken before the lab binds them (tests run in
    // parallel): try other free ports a few times before giving up.
    let mut attempts = 0;
    loop {
        let mut config = LabConfig {
            users,
            ports: Ports::free().expect("free loopback ports"),
            ..LabConfig::new(dir.path())
        };
        configure(&mut config);
        match LabGuard::start(&config) {
            Ok(lab) => return (dir, lab),
            Err(peakhour_lab::LabError::PortInUse { .. }) if attempts < 3 => attempts += 1,
            Err(e) => panic!("cannot start the lab: {e}"),
        }
    }
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
