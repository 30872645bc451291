//! `peakhour k8s job`: the manifests load cleanly into the official
//! Kubernetes client's models (scripts/validate-k8s.py, strict about unknown
//! fields), and kubeconform (strict, against the API's schemas, offline) and
//! kube-score find no error in them, for both places results can go.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::peakhour;

const MANIFESTS: [&str; 4] = [
    "configmap.json",
    "networkpolicy.json",
    "job.json",
    "merge-job.json",
];

fn validate(dir: &std::path::Path) {
    let files: Vec<String> = MANIFESTS
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
    for model in ["V1Job", "V1ConfigMap", "V1NetworkPolicy"] {
        assert!(text.contains(&format!("{model} ok")), "{text}");
    }
}

/// Writes the manifests for a PVC and for S3 results into `out`; their
/// directories.
fn both_kinds(out: &Path) -> Vec<PathBuf> {
    let profile = out.join("my-profile.toml");
    let builtin = peakhour(&["profiles", "show", "mmb-medium"]);
    assert!(builtin.status.success());
    std::fs::write(&profile, &builtin.stdout).unwrap();
    let mut dirs = Vec::new();
    for (name, results) in [
        ("pvc", ["--results-pvc", "peakhour-results"]),
        ("s3", ["--results-s3", "s3://bucket/runs"]),
    ] {
        let dir = out.join(name);
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
        dirs.push(dir);
    }
    dirs
}

/// A tool `go install` put in ~/go/bin, or one on the PATH.
fn go_tool(name: &str) -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_default();
    let installed = Path::new(&home).join("go/bin").join(name);
    if installed.exists() {
        installed
    } else {
        PathBuf::from(name)
    }
}

/// The Kubernetes API's JSON schemas from PyPI's kubernetes-validate, with
/// their `$ref`s to the remote definitions file pointed at the local copy,
/// in `dir`: kubeconform then needs no network.
fn offline_schemas(dir: &Path) -> String {
    let found = Command::new("python3")
        .args([
            "-c",
            "import kubernetes_validate, os; print(os.path.dirname(kubernetes_validate.__file__))",
        ])
        .output()
        .unwrap();
    assert!(
        found.status.success(),
        "no kubernetes-validate (scripts/setup.sh installs it with pip): {}",
        String::from_utf8_lossy(&found.stderr)
    );
    let package = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    let source = Path::new(&package).join("kubernetes-json-schema/v1.30.0-local-strict");
    let definitions = dir.join("_definitions.json");
    for file in [
        "_definitions.json",
        "job-batch-v1.json",
        "configmap-v1.json",
        "networkpolicy-networking-v1.json",
    ] {
        let text = std::fs::read_to_string(source.join(file)).unwrap();
        let local = text.replace(
            "\"/api/_definitions.json#",
            &format!("\"file://{}#", definitions.display()),
        );
        std::fs::write(dir.join(file), local).unwrap();
    }
    format!(
        "{}/{{{{.ResourceKind}}}}{{{{.KindSuffix}}}}.json",
        dir.display()
    )
}

#[test]
fn issue_30_kubeconform_and_kube_score_find_no_error_for_a_pvc_and_for_s3() {
    let out = tempfile::tempdir().unwrap();
    let schemas = out.path().join("schemas");
    std::fs::create_dir(&schemas).unwrap();
    let location = offline_schemas(&schemas);
    for dir in both_kinds(out.path()) {
        let files: Vec<PathBuf> = MANIFESTS.iter().map(|f| dir.join(f)).collect();
        let checked = Command::new(go_tool("kubeconform"))
            .args(["-strict", "-summary", "-schema-location", &location])
            .args(&files)
            .output()
            .expect("kubeconform (scripts/setup.sh installs it with go install)");
        let said = String::from_utf8_lossy(&checked.stdout);
        eprintln!("{said}{}", String::from_utf8_lossy(&checked.stderr));
        assert!(checked.status.success(), "kubeconform: {said}");
        assert!(said.contains("Valid: 4, Invalid: 0, Errors: 0"), "{said}");

        let scored = Command::new(go_tool("kube-score"))
            .args(["score", "--output-format", "ci"])
            .args(&files)
            .output()
            .expect("kube-score (scripts/setup.sh installs it with go install)");
        let said = String::from_utf8_lossy(&scored.stdout);
        eprintln!("{said}{}", String::from_utf8_lossy(&scored.stderr));
        assert!(scored.status.success(), "kube-score: {said}");
        assert!(!said.contains("[CRITICAL]"), "{said}");
    }
    // The checkers would see a fault: a misspelt field fails kubeconform.
    let bad = out.path().join("pvc/job.json");
    let mut job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bad).unwrap()).unwrap();
    job["spec"]["completionMod"] = "Indexed".into();
    std::fs::write(&bad, job.to_string()).unwrap();
    let checked = Command::new(go_tool("kubeconform"))
        .args(["-strict", "-schema-location", &location])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!checked.status.success());
    assert!(String::from_utf8_lossy(&checked.stdout).contains("completionMod"));
}

#[test]
fn job_manifests_load_into_the_kubernetes_models() {
    let out = tempfile::tempdir().unwrap();
    for dir in both_kinds(out.path()) {
        validate(&dir);
        let job: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("job.json")).unwrap()).unwrap();
        assert_eq!(job["spec"]["completionMode"], "Indexed");
        assert_eq!(job["spec"]["completions"], 4);
        let text = job.to_string();
        assert!(text.contains("--shards") && text.contains("JOB_COMPLETION_INDEX"));
        assert!(text.contains("secretKeyRef"));
        // The profile travels with the job, whatever the image has built in.
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("configmap.json")).unwrap())
                .unwrap();
        assert!(
            config["data"]["profile.toml"]
                .as_str()
                .unwrap()
                .contains("[actions")
        );
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
