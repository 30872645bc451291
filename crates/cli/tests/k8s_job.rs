//! `peakhour k8s job`: the manifests load cleanly into the official
//! Kubernetes client's models (scripts/validate-k8s.py, strict about unknown
//! fields), for both places results can go.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::peakhour;

fn validate(dir: &std::path::Path) {
    let files: Vec<String> = ["configmap.json", "job.json"]
        .iter()
        .map(|f| dir.join(f).to_str().unwrap().to_owned())
        .collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/validate-k8s.py");
    let out = Command::new("python3")
        .arg(script)
        .args(&files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "manifests refused by the Kubernetes models (is `pip install kubernetes` done? scripts/setup.sh does it):\n{text}"
    );
    assert!(
        text.contains("V1Job ok") && text.contains("V1ConfigMap ok"),
        "{text}"
    );
}

#[test]
fn job_manifests_load_into_the_kubernetes_models() {
    let out = tempfile::tempdir().unwrap();
    let profile = out.path().join("my-profile.toml");
    let builtin = peakhour(&["profiles", "show", "mmb-medium"]);
    assert!(builtin.status.success());
    std::fs::write(&profile, &builtin.stdout).unwrap();
    for (name, results) in [
        ("pvc", ["--results-pvc", "peakhour-results"]),
        ("s3", ["--results-s3", "s3://bucket/runs"]),
    ] {
        let dir = out.path().join(name);
        let made = peakhour(&[
            "k8s",
            "job",
            "--profile",
            profile.to_str().unwrap(),
            "--users",
            "1000",
            "--shards",
            "4",
            "--imap",
            "imap://mail.bench.test:143",
            "--smtp",
            "smtp://mail.bench.test:587",
            "--start-at",
            "2026-05-01T12:00:00Z",
            results[0],
            results[1],
            "--out",
            dir.to_str().unwrap(),
            "--",
            "--duration",
            "10m",
        ]);
        assert!(made.status.success());
        validate(&dir);
        let job: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("job.json")).unwrap()).unwrap();
        assert_eq!(job["spec"]["completionMode"], "Indexed");
        assert_eq!(job["spec"]["completions"], 4);
        let text = job.to_string();
        assert!(text.contains("--shards 4") && text.contains("JOB_COMPLETION_INDEX"));
        assert!(text.contains("secretKeyRef"));
    }
}

#[test]
fn a_bad_manifest_is_caught_by_the_validator() {
    let dir = tempfile::tempdir().unwrap();
    let made = peakhour(&[
        "k8s",
        "job",
        "--profile",
        "mmb-medium",
        "--users",
        "10",
        "--shards",
        "2",
        "--imap",
        "imap://m:143",
        "--smtp",
        "smtp://m:25",
        "--results-pvc",
        "r",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let path = dir.path().join("job.json");
    let mut job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    job["spec"]["completionMod"] = "Indexed".into();
    std::fs::write(&path, job.to_string()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/validate-k8s.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "a misspelt field must be refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("completionMod"));
}
