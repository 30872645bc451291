//! `peakhour capacity` end to end on a small real lab (issue 25, item 4): a
//! short search whose answer.json validates against the committed schema and
//! agrees with its steps' own verdicts, and a search interrupted after its
//! first step that resumes without repeating it.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{PEAKHOUR, start_lab};

/// mmb-medium with a 20 s morning logon storm instead of 30 minutes, so
/// that a morning window fits in a test.
fn quick_profile(dir: &Path) -> String {
    let shown = Command::new(PEAKHOUR)
        .args(["profiles", "show", "mmb-medium"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("logon_within = \"30m\""), "{text}");
    let path = dir.join("quick.toml");
    std::fs::write(
        &path,
        text.replace("logon_within = \"30m\"", "logon_within = \"20s\""),
    )
    .unwrap();
    path.display().to_string()
}

/// A short search: 50 users, then 100 (its --max-users), each in a 20 s
/// peak hour (about 20 actions at mmb-medium's real peak rate of 40 actions
/// per user-hour), and the morning confirmed at the answer.
fn capacity_command(lab_dir: &str, profile: &str, out: &Path) -> Command {
    let mut command = Command::new(PEAKHOUR);
    command
        .args([
            "capacity",
            "--profile",
            profile,
            "--target",
            "lab",
            "--lab-dir",
            lab_dir,
            "--first-users",
            "50",
            "--max-users",
            "100",
            "--duration",
            "20s",
            "--ramp-up",
            "2s",
            "--drain",
            "3s",
            "--budget",
            "30m",
            "--json",
            "--out",
        ])
        .arg(out);
    command
}

fn answer_validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/answer.schema.json"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn issue_25_item_4_a_short_capacity_search_answers_in_real_users_with_a_valid_answer_json() {
    let (_lab_dir, lab) = start_lab(2);
    let work = tempfile::tempdir().unwrap();
    let profile = quick_profile(work.path());
    let out = work.path().join("capacity");
    let output = capacity_command(&lab.status.dir, &profile, &out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "exit {:?}", output.status);

    // --json prints answer.json, which validates against the committed schema.
    let printed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let answer = read_json(&out.join("answer.json"));
    assert_eq!(printed, answer);
    let validator = answer_validator();
    let errors: Vec<String> = validator
        .iter_errors(&answer)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "answer.json: {errors:#?}");
    assert!(out.join("answer.html").exists());

    // The lab grew to the steps' users (it started with 2).
    let status = peakhour_lab::Lab::new(&lab.status.dir).status().unwrap();
    let steps = answer["steps"].as_array().unwrap();
    let largest = steps
        .iter()
        .map(|s| s["users"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        u64::from(status.users) >= largest,
        "lab {} users",
        status.users
    );

    // Each step's qos_pass is its run's own verdict (one QoS rule), and a
    // peak-hour step held its users' sessions on the server's side.
    for step in steps {
        let summary = read_json(
            &out.join(step["run_dir"].as_str().unwrap())
                .join("summary.json"),
        );
        let growing = step["qos_failures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("still growing"));
        if !growing {
            assert_eq!(
                step["qos_pass"].as_bool().unwrap(),
                summary["verdict"] == "pass",
                "{step:#}"
            );
        }
        assert_eq!(step["weighted_p95_ms"], summary["score"]["weighted_p95_ms"]);
        if step["window"] == "peak-hour" {
            assert!(
                step["sessions_held"].as_u64().unwrap() >= step["users"].as_u64().unwrap(),
                "{step:#}"
            );
        }
    }
    // The answer is the bracket's low end, and a passing answer was confirmed
    // in the morning window too.
    assert_eq!(answer["users"], answer["users_low"]);
    if let Some(n) = answer["users"].as_u64() {
        for window in ["peak-hour", "morning"] {
            assert!(
                steps.iter().any(|s| s["users"].as_u64() == Some(n)
                    && s["window"] == window
                    && s["qos_pass"] == true),
                "no passing {window} step at {n} users"
            );
        }
        let statement = answer["statement"][0].as_str().unwrap();
        assert!(
            statement.contains(&format!("{n} real users")),
            "{statement}"
        );
    }
}

#[test]
fn issue_25_item_4_an_interrupted_capacity_search_resumes_without_repeating_its_finished_step() {
    let (_lab_dir, lab) = start_lab(2);
    let work = tempfile::tempdir().unwrap();
    let profile = quick_profile(work.path());
    let out = work.path().join("capacity");
    let state = out.join("capacity-state.json");

    let mut first = capacity_command(&lab.status.dir, &profile, &out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until the first step is saved, then interrupt.
    let started = Instant::now();
    let finished_steps = |path: &Path| -> usize {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map_or(0, |v| v["steps"].as_array().map_or(0, Vec::len))
    };
    while finished_steps(&state) == 0 {
        assert!(
            first.try_wait().unwrap().is_none(),
            "capacity ended before its first step was saved"
        );
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no step finished"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(130), "an interrupted search exits 130");
    let saved = read_json(&state);
    let done = saved["steps"].as_array().unwrap().clone();
    assert!(!done.is_empty());

    let output = capacity_command(&lab.status.dir, &profile, &out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    assert!(output.status.success(), "exit {:?}", output.status);
    assert!(
        stderr.contains(&format!("resuming after {}", done.len())),
        "{stderr}"
    );
    let answer = read_json(&out.join("answer.json"));
    let steps = answer["steps"].as_array().unwrap();
    // The finished steps are kept as they were, and none was run again.
    assert_eq!(&steps[..done.len()], &done[..]);
    for step in &done {
        let again = steps
            .iter()
            .filter(|s| s["users"] == step["users"] && s["window"] == step["window"])
            .count();
        assert_eq!(again, 1, "{step:#} was repeated");
        let dir = step["run_dir"].as_str().unwrap();
        assert!(
            !out.join(format!("{dir}-2")).exists(),
            "a second attempt at {dir} was made"
        );
    }
}
