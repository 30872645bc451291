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

pub(crate) mod proxy;

/// What a child run left, and its peak memory.
pub(crate) struct Bounded {
    /// Its exit status.
    pub status: std::process::ExitStatus,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// The highest VmHWM read from /proc while it ran, kB.
    pub peak_kb: u64,
}

/// Runs `command` as a child, reading its peak memory (VmHWM) from /proc
/// every 10 ms; kills it and fails the test if it runs past `hang`. No
/// duration is asserted beyond that generous bound (the machine is shared).
pub(crate) fn run_bounded(command: &mut Command, hang: std::time::Duration) -> Bounded {
    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut child = command
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut peak_kb = 0;
    let status = loop {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()));
        let hwm = status.ok().and_then(|s| {
            let line = s.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.to_owned();
            line.split_whitespace().next()?.parse::<u64>().ok()
        });
        peak_kb = peak_kb.max(hwm.unwrap_or(0));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > hang {
            child.kill().unwrap();
            let _ = child.wait();
            panic!(
                "still running after {hang:?}: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let read =
        |p: &std::path::Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let bounded = Bounded {
        status,
        stdout: read(&stdout),
        stderr: read(&stderr),
        peak_kb,
    };
    eprintln!(
        "exit {:?}, VmHWM {} kB\n{}{}",
        bounded.status, bounded.peak_kb, bounded.stdout, bounded.stderr
    );
    bounded
}

/// An IMAP session of lab user `user`, logged in over plain IMAP.
pub(crate) async fn log_in(
    status: &peakhour_lab::LabStatus,
    user: u32,
) -> peakhour_imap::ImapConnection {
    let port: u16 = status
        .endpoints
        .imap
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let timeout = std::time::Duration::from_secs(10);
    let security = peakhour_net::Security::Plain;
    let mut imap =
        peakhour_imap::ImapConnection::connect("127.0.0.1", port, security, None, timeout)
            .await
            .unwrap()
            .value;
    let password = peakhour_net::Secret::new(status.password.clone());
    imap.login(&status.user(user), &password).await.unwrap();
    imap
}

/// A lab with Cyrus for its mail store on free ports, tried again (three times at most)
/// when another test took a port between the choice and the start.
pub(crate) fn start_cyrus_lab(users: u32) -> (tempfile::TempDir, LabGuard) {
    start_lab_configured(users, |config| {
        config.mail_server = peakhour_lab::MailServer::Cyrus;
    })
}
