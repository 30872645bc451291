//! `peakhour sweep` end to end against a small real lab: three steps, then
//! capacity.csv (its columns exactly), capacity.json (valid against the
//! committed schemas/capacity.schema.json; peak, USL fit and its few-points
//! warning), capacity.html and the capacity statement.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

use std::process::Command;
use std::time::Instant;

use peakhour_lab::{LabConfig, LabGuard, Ports};

const PEAKHOUR: &str = env!("CARGO_BIN_EXE_peakhour");

fn capacity_validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/capacity.schema.json"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn a_three_step_sweep_on_the_lab_gives_a_capacity_curve() {
    // 0755: the lab refuses (and does not chmod) a 0700 directory its servers cannot reach.
    let lab_root = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .unwrap();
    let config = LabConfig {
        users: 12,
        ports: Ports::free().expect("free loopback ports"),
        ..LabConfig::new(lab_root.path())
    };
    let lab = LabGuard::start(&config).unwrap_or_else(|e| panic!("cannot start the lab: {e}"));
    let out = tempfile::tempdir().unwrap();
    let sweep_dir = out.path().join("sweep");

    let started = Instant::now();
    let output = Command::new(PEAKHOUR)
        .args([
            "sweep",
            "--profile",
            "mmb-medium",
            "--target",
            "lab",
            "--lab-dir",
            &lab.status.dir,
            "--users",
            "3,6,12",
            "--speed",
            "300",
            "--duration",
            "12s",
            "--ramp-up",
            "2s",
            "--drain",
            "4s",
            "--interval",
            "4s",
            "--seed",
            "7",
            // QoS must not stop this short sweep early: the test is about the outputs.
            "--qos-p95-ms",
            "60000",
            "--max-error-ratio",
            "0.5",
            "--out",
        ])
        .arg(&sweep_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "sweep took {:.0} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(output.status.success(), "exit {:?}", output.status);

    // Init ran once, for the largest step; every step's output came through prefixed.
    assert!(stderr.contains("[init] "), "init output not streamed");
    for (i, users) in [3, 6, 12].iter().enumerate() {
        assert!(
            stderr.contains(&format!("[step {}/3 {users}u] ", i + 1)),
            "step {users} output not streamed"
        );
        assert!(
            sweep_dir
                .join(format!("step-{users}u/summary.json"))
                .exists()
        );
    }

    check_capacity_csv(&sweep_dir);
    check_capacity_json(&sweep_dir);

    // capacity.html: self-contained, with the charts.
    let html = std::fs::read_to_string(sweep_dir.join("capacity.html")).unwrap();
    assert!(html.contains("<svg"), "no chart");
    assert!(!html.contains("http"), "the page must not link out");
    assert!(html.contains("id=\"qos-line\"") && html.contains("id=\"peak\""));

    // The text: the analysis and a capacity statement in sentences.
    assert!(stdout.contains("Capacity statement"), "{stdout}");
    assert!(
        stdout.contains("This server carries"),
        "no capacity statement: {stdout}"
    );
    assert!(stdout.contains("USL "), "{stdout}");
    assert!(stdout.contains("Peak "), "{stdout}");
    drop(lab);
}

/// `capacity.csv`: a header and one row per step, the columns as they have always been.
fn check_capacity_csv(sweep_dir: &std::path::Path) {
    // capacity.csv: a header and one row per step, the columns as they
    // have always been: 13 fixed ones, then one p95 column per action in
    // name order.
    let csv = std::fs::read_to_string(sweep_dir.join("capacity.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &header[..13],
        [
            "users",
            "throughput_actions_per_s",
            "weighted_p95_ms",
            "max_action_p95_ms",
            "actions",
            "errors",
            "error_ratio",
            "cpu_busy_pct",
            "bottleneck",
            "client_bound",
            "verdict",
            "interrupted",
            "run_dir"
        ]
    );
    let action_columns = &header[13..];
    assert!(action_columns.contains(&"p95_ms.send"), "{header:?}");
    assert!(
        action_columns.iter().all(|c| c.starts_with("p95_ms.")),
        "{header:?}"
    );
    assert!(action_columns.is_sorted(), "{header:?}");
    for (line, users) in lines[1..].iter().zip(["3", "6", "12"]) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{line}");
        assert_eq!(fields[0], users);
        assert!(
            fields[1].parse::<f64>().unwrap() > 0.0,
            "throughput: {line}"
        );
        let (attempts, errors) = (
            fields[4].parse::<u64>().unwrap(),
            fields[5].parse::<u64>().unwrap(),
        );
        assert!(attempts > 0 && errors <= attempts, "{line}");
        assert!(["pass", "fail"].contains(&fields[10]), "verdict: {line}");
        assert_eq!(fields[11], "false", "interrupted: {line}");
        assert_eq!(fields[12], format!("step-{users}u"));
    }
}

/// `capacity.json`: valid against the committed schema, with the analysis.
fn check_capacity_json(sweep_dir: &std::path::Path) {
    // capacity.json: valid against the committed schema, and the schema is
    // strict enough to notice a missing or a stray field.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sweep_dir.join("capacity.json")).unwrap())
            .unwrap();
    let validator = capacity_validator();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "capacity.json breaks the schema: {errors:#?}"
    );
    let mut missing = json.clone();
    missing["sweep"]
        .as_object_mut()
        .unwrap()
        .remove("steps_run");
    assert!(!validator.is_valid(&missing), "a missing field must fail");
    let mut stray = json.clone();
    stray["peak"]["extra"] = serde_json::json!(1);
    assert!(!validator.is_valid(&stray), "a stray field must fail");

    // capacity.json: the analysis, with the few-points warning of the USL fit.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sweep_dir.join("capacity.json")).unwrap())
            .unwrap();
    assert!(json["peak"]["load"].as_f64().is_some(), "{json}");
    assert!(json["peak"]["throughput"].as_f64().unwrap() > 0.0);
    assert_eq!(json["points"].as_array().unwrap().len(), 3);
    for field in ["alpha", "beta", "gamma"] {
        assert!(json["usl"][field].as_f64().is_some(), "usl.{field}: {json}");
    }
    assert!(json["usl"].get("n_max").is_some());
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("only 3 points"),
        "the USL fit on 3 points must warn: {warnings}"
    );
    assert_eq!(json["sweep"]["p95_basis"], "weighted");
    assert_eq!(json["sweep"]["qos_p95_ms"], 60000.0);
    assert_eq!(json["sweep"]["seed"], 7);
    assert_eq!(json["sweep"]["steps_run"], serde_json::json!([3, 6, 12]));
    assert_eq!(json["sweep"]["speed"], 300.0);
}
