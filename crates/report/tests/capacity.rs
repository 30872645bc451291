//! The sweep's files from a synthetic sweep: capacity.json against the
//! committed schema (and read back), capacity.csv's columns and quoting,
//! capacity.html's charts in the shared chart kit and style sheet. The live
//! sweep test (crates/cli/tests/sweep.rs) checks the same on a real sweep.
#![allow(clippy::unwrap_used)]

use peakhour_analysis::Verdict;
use peakhour_analysis::capacity::sweep::{
    P95Basis, SweepAnalysis, SweepOutcome, SweepSettings, SweepStep, ThroughputUnit,
};
use peakhour_report::capacity::{
    CAPACITY_CSV_COLUMNS, CAPACITY_SCHEMA, CapacityJson, SweepJson, capacity_json,
    render_sweep_html, render_sweep_text, write_capacity_csv,
};

fn step(users: u32, throughput: f64, p95: f64) -> SweepStep {
    SweepStep {
        users,
        run_dir: format!("step-{users}u"),
        verdict: if p95 > 1000.0 {
            Verdict::Fail
        } else {
            Verdict::Pass
        },
        interrupted: false,
        client_bound: false,
        throughput,
        unit: ThroughputUnit::ActionsPerSecond,
        weighted_p95_ms: Some(p95),
        action_p95_ms: [
            ("send".to_string(), Some(p95 * 1.5)),
            ("read".to_string(), None),
        ]
        .into(),
        action_p95_limits_ms: vec![1000.0],
        attempts: 1000,
        errors: 3,
        cpu_busy_pct: Some(40.0),
        bottleneck: Some("cpu, \"user\" time".into()),
        bottleneck_evidence: Some("CPU busy 97%".into()),
        speed: 300.0,
        seed: 7,
    }
}

fn sweep() -> (SweepOutcome, SweepAnalysis) {
    let outcome = SweepOutcome {
        steps: [
            (10, 5.0, 120.0),
            (20, 9.5, 300.0),
            (40, 16.0, 800.0),
            (80, 17.0, 2500.0),
        ]
        .iter()
        .map(|&(u, x, p)| step(u, x, p))
        .collect(),
        ..SweepOutcome::default()
    };
    let settings = SweepSettings {
        profile: "mmb-medium".into(),
        basis: P95Basis::Weighted,
        qos_p95_ms: None,
    };
    let analysis = SweepAnalysis::compute(&settings, &outcome)
        .unwrap()
        .unwrap();
    (outcome, analysis)
}

fn document(outcome: &SweepOutcome, sweep: &SweepAnalysis) -> CapacityJson {
    CapacityJson {
        analysis: sweep.analysis.clone(),
        sweep: SweepJson {
            dir: "runs/sweep".into(),
            profile: "mmb-medium".into(),
            seed: 7,
            speed: outcome.speed(),
            steps_planned: vec![10, 20, 40, 80, 160],
            steps_run: outcome.steps.iter().map(|s| s.users).collect(),
            load: "users".into(),
            throughput: "actions_per_second".into(),
            p95_basis: P95Basis::Weighted,
            p95_source: P95Basis::Weighted.source().into(),
            qos_p95_ms: sweep.qos.limit_ms,
            max_error_ratio: 0.05,
            stopped_early: Some("QoS failed in two consecutive steps".into()),
            failed: None,
            interrupted: false,
            statement: sweep.statement.clone(),
            price_performance: None,
        },
    }
}

#[test]
fn capacity_json_matches_the_committed_schema_and_reads_back() {
    let (outcome, sweep) = sweep();
    let doc = document(&outcome, &sweep);
    let text = capacity_json(&doc).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(CAPACITY_SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(value["sweep"]["p95_basis"], "weighted");
    assert_eq!(value["qos"]["bound"], "interpolated");
    let back: CapacityJson = serde_json::from_str(&text).unwrap();
    assert_eq!(back, doc);
    // The schema notices a wrong value, not only a missing field.
    let mut wrong = value.clone();
    wrong["sweep"]["p95_basis"] = "p99".into();
    assert!(!validator.is_valid(&wrong));
    // The file under schemas/ is the one compiled in.
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/capacity.schema.json"
    ))
    .unwrap();
    assert_eq!(committed, CAPACITY_SCHEMA);
}

#[test]
fn capacity_csv_keeps_its_columns_and_quotes_free_text() {
    let (outcome, _) = sweep();
    let mut out = Vec::new();
    write_capacity_csv(&outcome.steps, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let mut expected: Vec<String> = CAPACITY_CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    expected.extend(["p95_ms.read".to_string(), "p95_ms.send".to_string()]);
    assert_eq!(header, expected);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(&rows[0][0], "10");
    assert_eq!(&rows[0][1], "5");
    assert_eq!(&rows[0][6], "0.0030");
    assert_eq!(&rows[0][7], "40.0");
    assert_eq!(&rows[0][8], "cpu, \"user\" time", "quoted and read back");
    assert_eq!(&rows[3][10], "fail");
    assert_eq!(&rows[0][13], "", "no p95 for read");
    assert_eq!(&rows[0][14], "180");
    assert!(text.contains("\"cpu, \"\"user\"\" time\""), "{text}");
}

#[test]
fn capacity_html_uses_the_shared_charts_and_style() {
    let (outcome, sweep) = sweep();
    let html = render_sweep_html(
        "peakhour sweep: mmb-medium",
        "users 10, 20",
        &sweep,
        P95Basis::Weighted,
        &outcome.steps,
    );
    // The report's style sheet, not one of its own.
    assert!(html.contains(":root { --fg:#1b1f24;"));
    assert!(html.contains("svg .series.fit"));
    assert_eq!(html.matches("<svg id=\"capacity-").count(), 2);
    assert_eq!(html.matches("class=\"chart\"").count(), 2);
    for id in [
        "peak",
        "qos-line",
        "statement",
        "conclusions",
        "parameters",
        "steps",
        "notes",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
    assert!(html.contains("This server carries about"));
    assert!(!html.contains("http"), "the page links out");
    let text = render_sweep_text(&sweep, P95Basis::Weighted, "runs/sweep");
    assert!(
        text.contains("Capacity statement\n  This server carries about"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "results: runs/sweep (capacity.csv, capacity.json, capacity.html, step-*u/)\n"
        )
    );
}

#[test]
fn issue_31_item_9_capacity_html_draws_a_lower_bound_as_one_and_its_steps_fit() {
    // Every step within QoS: the capacity is only known to be at least 40.
    let outcome = SweepOutcome {
        steps: [(10, 5.0, 120.0), (20, 9.5, 300.0), (40, 16.0, 800.0)]
            .iter()
            .map(|&(u, x, p)| step(u, x, p))
            .collect(),
        ..SweepOutcome::default()
    };
    let settings = SweepSettings {
        profile: "mmb-medium".into(),
        basis: P95Basis::Weighted,
        qos_p95_ms: None,
    };
    let all_passed = SweepAnalysis::compute(&settings, &outcome)
        .unwrap()
        .unwrap();
    let html = render_sweep_html("t", "s", &all_passed, P95Basis::Weighted, &outcome.steps);
    // Drawn as a bound, with an arrow, in both charts; never as a capacity line.
    assert_eq!(
        html.matches("<g id=\"qos-lower-bound\"").count(),
        2,
        "{html}"
    );
    assert_eq!(html.matches("class=\"boundhead\"").count(), 2);
    assert!(html.contains("QoS capacity ≥ 40"), "{html}");
    assert!(!html.contains(">QoS capacity 40<"), "{html}");

    // Found between two steps, it is a line at its value.
    let (outcome, sweep) = sweep();
    let html = render_sweep_html("t", "s", &sweep, P95Basis::Weighted, &outcome.steps);
    assert!(!html.contains("qos-lower-bound"));
    assert!(html.contains(">QoS capacity "));

    // The steps table speaks words and fits the page: no capacity.csv column
    // names, no scrolling box, each action's p95 in a table of its own.
    let steps = &html[html.find("<section id=\"steps\"").unwrap()..];
    let steps = &steps[..steps.find("</section>").unwrap()];
    for raw in [
        "cpu_busy_pct",
        "throughput_actions_per_s",
        "max_action_p95_ms",
        "run_dir",
        "p95_ms.",
    ] {
        assert!(!steps.contains(raw), "{raw} in {steps}");
    }
    for words in [
        "server CPU busy (%)",
        "throughput (actions/s)",
        "run directory",
    ] {
        assert!(
            steps.contains(&format!("{words}</th>")),
            "{words} missing: {steps}"
        );
    }
    assert!(!steps.contains("overflow") && !steps.contains("class=\"wide\""));
    assert!(steps.contains("<h3>p95 of each action (ms)</h3>"));
    assert!(steps.contains("<th>send</th>"));
}
