//! Issue 30: the container image, and the Kubernetes Job's pods run from it
//! on this machine, as a cluster would run them.
//!
//! `scripts/build-image.sh` builds the image from a debootstrap base (no
//! registry; the base is cached in /var/cache/peakhour). Two shard
//! containers are started from the generated Job's own pod template: its
//! command and arguments (with `$(JOB_COMPLETION_INDEX)` expanded as
//! Kubernetes does), its environment (the Secret's password), its volumes
//! (the ConfigMap's profile, the results volume) and its security context
//! (read-only root, 65532:65532, no capabilities), with the host's network
//! to reach the lab. Then the merge Job's container runs the merge as the
//! manifests say. Nothing is lost, and the merged throughput is the sum of
//! the shards'.
//!
//! Skipped, saying why, where podman cannot run (not root, or no podman:
//! scripts/setup.sh installs it).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::{PEAKHOUR, peakhour, start_lab};
use serde_json::Value;

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const CACHE: &str = "/var/cache/peakhour";
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why podman cannot run here, if it cannot.
fn podman_missing() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0");
    if !root {
        return Some("not root: podman here runs as root only".into());
    }
    match Command::new("podman").arg("--version").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("no podman (scripts/setup.sh installs podman, runc and debootstrap)".into()),
    }
}

fn echo(what: &str, output: &Output) {
    eprintln!(
        "$ {what}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Podman with the private containers.conf the build script writes.
fn podman() -> Command {
    let mut command = Command::new("podman");
    command.env("CONTAINERS_CONF", format!("{CACHE}/containers.conf"));
    command
}

/// The image, built from the binary under test; its tag.
fn build_image() -> String {
    let tag = format!("localhost/peakhour:{VERSION}");
    let built = Command::new(format!("{REPO}/scripts/build-image.sh"))
        .arg(PEAKHOUR)
        .env("PEAKHOUR_IMAGE_TAG", &tag)
        .output()
        .unwrap();
    echo("scripts/build-image.sh", &built);
    assert!(built.status.success(), "the image did not build");
    assert_eq!(String::from_utf8_lossy(&built.stdout).trim(), tag);
    tag
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// Host directories standing in for the pod's volumes.
struct Volumes {
    results: PathBuf,
    profile: PathBuf,
}

/// `podman run` of a Job's pod template's container: what Kubernetes would
/// run, with `JOB_COMPLETION_INDEX` at `index`.
fn run_container(
    job: &Value,
    index: Option<u32>,
    volumes: &Volumes,
    password: &str,
    image: &str,
) -> Child {
    let pod = &job["spec"]["template"]["spec"];
    assert!(
        pod.get("initContainers").is_none(),
        "a results volume needs no init step"
    );
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    let user = format!("{}:{}", security["runAsUser"], security["runAsGroup"]);
    // Kubernetes expands $(VAR) in the arguments from the container's env.
    let expand = |text: &str| match index {
        Some(i) => text.replace("$(JOB_COMPLETION_INDEX)", &i.to_string()),
        None => text.to_owned(),
    };
    let mut command = podman();
    command.args(["run", "--rm", "--network", "host", "--read-only"]);
    command.args(["--user", &user, "--cap-drop", "ALL"]);
    command.args(["--security-opt", "no-new-privileges", "--tmpfs", "/tmp"]);
    for mount in container["volumeMounts"].as_array().unwrap() {
        let host = match mount["name"].as_str().unwrap() {
            "results" => &volumes.results,
            "profile" => &volumes.profile,
            "tmp" => continue,
            other => panic!("a volume the test does not know: {other}"),
        };
        let ro = if mount["readOnly"] == true { ":ro" } else { "" };
        command.arg("-v").arg(format!(
            "{}:{}{ro}",
            host.display(),
            mount["mountPath"].as_str().unwrap()
        ));
    }
    if let Some(i) = index {
        command.args(["-e", &format!("JOB_COMPLETION_INDEX={i}")]);
    }
    for var in container["env"].as_array().into_iter().flatten() {
        let secret = &var["valueFrom"]["secretKeyRef"];
        assert_eq!(secret["key"], "password", "{var}");
        // From podman's environment: the value stays out of the logged command.
        let name = var["name"].as_str().unwrap();
        command.args(["-e", name]).env(name, password);
    }
    let entry = strings(&container["command"]);
    command.args(["--entrypoint", &entry[0], image]);
    command.args(
        entry[1..]
            .iter()
            .chain(&strings(&container["args"]))
            .map(|a| expand(a)),
    );
    eprintln!("$ {command:?}");
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary(dir: &Path) -> Value {
    read_json(&dir.join("summary.json"))
}

/// `--version` from the image as a cluster runs it: read-only, as
/// 65532:65532, with no capabilities.
fn runs_locked_down(image: &str) {
    let version = podman()
        .args(["run", "--rm", "--read-only", "--user", "65532:65532"])
        .args(["--cap-drop", "ALL", image, "--version"])
        .output()
        .unwrap();
    echo("podman run ... --version", &version);
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("peakhour {VERSION}")
    );
}

/// The shards in `results/job-index-I` were shards I + 1 of `shards`; their
/// merge in `results/merged` lost nothing, and its throughput is their sum.
fn check_merged(results: &Path, shards: u32) {
    let shard_summaries: Vec<Value> = (0..shards)
        .map(|i| summary(&results.join(format!("job-index-{i}"))))
        .collect();
    for (i, shard) in shard_summaries.iter().enumerate() {
        assert_eq!(
            shard["meta"]["shards"][0]["index"],
            i + 1,
            "index {i} runs shard {}",
            i + 1
        );
        assert_eq!(shard["interrupted"], false);
    }
    let merged = summary(&results.join("merged"));
    assert_eq!(merged["meta"]["merged"], true);
    assert_eq!(merged["interrupted"], false);
    assert!(results.join("merged/report.html").exists());
    let delivery = &merged["delivery"];
    assert_eq!(delivery["lost"], 0, "{delivery}");
    assert!(delivery["submitted_recipients"].as_u64().unwrap() > 0);
    assert_eq!(
        delivery["submitted_recipients"].as_u64().unwrap(),
        delivery["delivered_recipients"].as_u64().unwrap()
            + delivery["failed_recipients"].as_u64().unwrap()
    );
    let rate = |s: &Value| s["throughput"]["actions_per_second"].as_f64().unwrap();
    let sum: f64 = shard_summaries.iter().map(rate).sum();
    assert!(sum > 0.0);
    assert!(
        // Rates are rounded to 3 significant digits; an average would be half.
        (rate(&merged) - sum).abs() <= sum * 0.01,
        "merged {} actions/s, the shards' sum {sum}",
        rate(&merged)
    );
    for shard in &shard_summaries {
        assert_eq!(merged["steady"]["intervals"], shard["steady"]["intervals"]);
    }
}

#[test]
fn issue_30_the_jobs_pod_template_runs_from_the_image_and_the_merge_job_sums_the_shards() {
    if let Some(why) = podman_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let image = build_image();
    runs_locked_down(&image);

    let (_lab_dir, lab) = start_lab(10);
    let status = &lab.status;
    assert!(
        peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &status.dir])
            .status
            .success()
    );
    let work = tempfile::tempdir().unwrap();
    let manifests = work.path().join("manifests");
    let start_at = (chrono::Utc::now() + chrono::Duration::seconds(20))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let imap = format!("imap://{}", status.endpoints.imap);
    let smtp = format!("smtp://{}", status.endpoints.smtp_noauth.clone().unwrap());
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
        &imap,
        "--smtp",
        &smtp,
        "--start-at",
        &start_at,
        "--results-pvc",
        "peakhour-results",
        "--image",
        &image,
        "--out",
        manifests.to_str().unwrap(),
        "--",
        "--smtp-auth",
        "none",
        "--speed",
        "400",
        "--duration",
        "15s",
        "--ramp-up",
        "2s",
        "--drain",
        "8s",
        "--interval",
        "5s",
    ]);
    assert!(made.status.success());

    // The volumes: the ConfigMap's files, and a results directory the
    // image's user owns (a cluster's fsGroup does that).
    let volumes = Volumes {
        results: work.path().join("results"),
        profile: work.path().join("profile"),
    };
    std::fs::create_dir(&volumes.results).unwrap();
    std::os::unix::fs::chown(&volumes.results, Some(65532), Some(65532)).unwrap();
    std::fs::create_dir(&volumes.profile).unwrap();
    let config_map = read_json(&manifests.join("configmap.json"));
    for (file, text) in config_map["data"].as_object().unwrap() {
        std::fs::write(volumes.profile.join(file), text.as_str().unwrap()).unwrap();
    }

    let job = read_json(&manifests.join("job.json"));
    let shards = job["spec"]["completions"].as_u64().unwrap() as u32;
    let pods: Vec<Child> = (0..shards)
        .map(|index| run_container(&job, Some(index), &volumes, &status.password, &image))
        .collect();
    for pod in pods {
        let output = pod.wait_with_output().unwrap();
        echo("shard container", &output);
        // Its exit code is the pod's: 0, or 1 for a failed QoS verdict
        // (after its results are written; an error also exits 1).
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{:?}",
            output.status
        );
    }
    for index in 0..shards {
        let dir = volumes.results.join(format!("job-index-{index}"));
        assert!(
            dir.join("summary.json").exists(),
            "{} has no results",
            dir.display()
        );
    }
    let merge_job = read_json(&manifests.join("merge-job.json"));
    let merging = run_container(&merge_job, None, &volumes, "", &image)
        .wait_with_output()
        .unwrap();
    echo("merge container", &merging);
    assert!(merging.status.success());

    check_merged(&volumes.results, shards);
}
