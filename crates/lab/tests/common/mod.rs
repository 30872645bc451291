//! What the lab's integration tests share.
#![allow(dead_code, clippy::unwrap_used)] // each test file uses what it needs

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use peakhour_lab::{LabConfig, LabGuard, Ports, ProcessId};

/// An empty temporary directory the lab may use: mode 0755, so the servers'
/// users can reach it (`tempfile::tempdir()` makes 0700, which the lab
/// refuses and, rightly, does not change).
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("peakhour-lab-test.")
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempdir()
        .unwrap()
}

/// A lab of `users` users in `dir`, on free loopback ports.
pub(crate) fn config(dir: &Path, users: u32) -> LabConfig {
    LabConfig {
        users,
        ports: Ports::free().expect("free loopback ports"),
        ..LabConfig::new(dir)
    }
}

/// Every process of the lab's servers, from its status.
pub(crate) fn lab_processes(status: &peakhour_lab::LabStatus) -> Vec<i32> {
    status
        .servers
        .iter()
        .flat_map(|s| s.processes.iter().map(|p| p.pid))
        .collect()
}

/// Fails unless `status`, as `lab status --json` prints it, follows the
/// committed schema.
pub(crate) fn assert_matches_schema(status: &peakhour_lab::LabStatus) {
    let schema: serde_json::Value = serde_json::from_str(peakhour_lab::STATUS_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json = serde_json::to_value(status).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(
        problems.is_empty(),
        "lab status does not match schemas/lab-status.schema.json: {problems:#?}\n{json:#}"
    );
}

/// Runs tests/lab_smoke.py (Python's own clients, not peakhour's) against
/// `lab` with `extra` arguments; returns what it printed.
pub(crate) fn python_smoke(lab: &LabGuard, extra: &[&str]) -> String {
    let status_file = scratch_dir();
    let status_path = status_file.path().join("status.json");
    let status = lab.lab().status().unwrap();
    std::fs::write(&status_path, serde_json::to_vec(&status).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lab_smoke.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg("--status-file")
        .arg(&status_path)
        .args(extra)
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        // The servers' own account of what happened, to tell a server's fault from ours.
        let log_tail = |path: PathBuf| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            format!(
                "--- {}\n{}",
                path.display(),
                lines[lines.len().saturating_sub(30)..].join("\n")
            )
        };
        let layout = lab.lab().layout();
        let logs: Vec<String> = [
            layout.dovecot_log(),
            layout.postfix_log(),
            layout.radicale_console(),
            layout.samba_log(),
        ]
        .into_iter()
        .filter(|path| path.exists())
        .map(log_tail)
        .collect();
        panic!(
            "lab_smoke.py {extra:?} failed:\n{stdout}{}\n{}",
            String::from_utf8_lossy(&output.stderr),
            logs.join("\n")
        );
    }
    stdout
}

/// A process of somebody else's: `sleep` in a session of its own, as a
/// server master would be.
pub(crate) struct Bystander(std::process::Child);

impl Bystander {
    pub(crate) fn start() -> Bystander {
        let child = Command::new("setsid")
            .args(["sleep", "300"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Bystander(child)
    }

    pub(crate) fn id(&self) -> ProcessId {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            // setsid has exec'd sleep once the command line says so.
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.0.id())).unwrap();
            if cmdline.starts_with(b"sleep\0") {
                return ProcessId::of(self.0.id()).unwrap();
            }
            assert!(Instant::now() < deadline, "sleep did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
