//! What the lab's integration tests share.
#![allow(dead_code, clippy::unwrap_used)] // each test file uses what it needs

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use peakhour_lab::{LabConfig, Ports};

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
