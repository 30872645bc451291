//! Issue 25, item 1: a peak-hour run and a morning run of `mmb-medium` on the
//! lab, with what summary.json, the terminal and report.html say of them
//! checked against what was configured.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;

use common::{peakhour, start_lab};

const USERS: u32 = 10;

/// summary.json, checked against its committed schema.
fn summary(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "summary.json: {problems:#?}");
    summary
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// mmb-medium's actions per user per day (seed 002, Table 3) and its peak
/// factor, from the built-in profile's own text.
fn mmb_day_and_factor() -> (f64, f64) {
    let profile = peakhour_workload::builtin("mmb-medium")
        .unwrap()
        .profile()
        .unwrap();
    let plan = peakhour_workload::Plan::resolve(&profile, &Default::default()).unwrap();
    let per_day = plan.rates().iter().map(|r| r.per_day).sum();
    (per_day, *profile.day_shape.unwrap().peak_factor.get_ref())
}

#[test]
fn issue_25_item_1_peak_hour_and_morning_runs_of_mmb_medium_on_the_lab() {
    let (_dir, lab) = start_lab(USERS);
    let lab_dir = lab.status.dir.clone();
    let out = tempfile::tempdir().unwrap();
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success());
    check_peak_hour(&lab_dir, out.path());
    check_morning(&lab_dir, out.path());
}

/// A short peak-hour run: its rates against the profile's, the measured
/// count within its Poisson bound, the terminal's and the report's lines.
fn check_peak_hour(lab_dir: &str, out: &Path) {
    // The peak hour, compressed 60 times so that a short run holds enough
    // actions to measure a rate.
    let speed = 60.0;
    let peak_dir = out.join("peak");
    let run = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        lab_dir,
        "--window",
        "peak-hour",
        "--speed",
        "60",
        "--duration",
        "30s",
        "--ramp-up",
        "2s",
        "--drain",
        "10s",
        "--interval",
        "5s",
        "--seed",
        "25",
        "--out",
        peak_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let s = summary(&peak_dir);
    assert_eq!(s["window"], "peak-hour");
    let (per_day, factor) = mmb_day_and_factor();
    // The busiest hour: the 8-hour day's actions × the factor / 8, per real user.
    let peak = per_day * factor / 8.0;
    assert!((number(&s["peak_actions_per_user_hour"]) - peak).abs() < 1e-9);
    assert!((number(&s["peak_actions_per_hour"]) - peak * f64::from(USERS)).abs() < 1e-6);
    let rates = &s["window_rates"];
    let planned = number(&rates["planned_actions_per_hour"]);
    assert!((planned - peak * speed * f64::from(USERS)).abs() < 1e-6);
    // What was measured is a Poisson count: its bound is a multiple of the
    // square root of the count expected, plus one action per user that can
    // straddle the window's end (recorded in the drain when it finishes there).
    let steady_s = number(&s["steady"]["length_s"]);
    let expected = planned * steady_s / 3600.0;
    let counted = number(&rates["actions"]);
    let bound = 4.5 * expected.sqrt() + f64::from(USERS);
    assert!(
        (counted - expected).abs() < bound,
        "{counted} actions measured, {expected:.0} ± {bound:.0} expected"
    );
    let measured_per_user = number(&rates["measured_actions_per_user_hour"]);
    assert!((measured_per_user - counted * 3600.0 / steady_s / f64::from(USERS)).abs() < 1e-6);
    assert!(s.get("logon_storm").is_none());
    assert!(stdout.contains("window: peak-hour"), "{stdout}");
    assert!(stdout.contains("at speed 60"), "{stdout}");
    let report = std::fs::read_to_string(peak_dir.join("report.html")).unwrap();
    assert!(
        report.contains("<p id=\"window\">window: peak-hour"),
        "report"
    );
}

/// A short morning: every user logged on in the measured storm at the
/// planned rate, the logon p95; a compressed morning refused.
fn check_morning(lab_dir: &str, out: &Path) {
    // The morning, with its logons shortened to 10 s so that the storm of
    // 10 users (80% within 10 s: 0.8 logons/s) is short.
    let profile = peakhour_workload::builtin("mmb-medium").unwrap().source;
    assert!(profile.contains("logon_within = \"30m\""));
    let morning_profile = out.join("morning.toml");
    std::fs::write(
        &morning_profile,
        profile.replace("logon_within = \"30m\"", "logon_within = \"10s\""),
    )
    .unwrap();
    let morning_dir = out.join("morning");
    let run = peakhour(&[
        "run",
        "--profile",
        morning_profile.to_str().unwrap(),
        "--lab-dir",
        lab_dir,
        "--window",
        "morning",
        "--duration",
        "10s",
        "--drain",
        "10s",
        "--interval",
        "1s",
        "--seed",
        "25",
        "--out",
        morning_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let s = summary(&morning_dir);
    assert_eq!(s["window"], "morning");
    let storm = &s["logon_storm"];
    let rate = f64::from(USERS) * 0.8 / 10.0;
    assert!((number(&storm["planned_logons_per_second"]) - rate).abs() < 1e-12);
    // Every user logged on once, in the storm, measured.
    assert_eq!(storm["logons"], USERS);
    assert_eq!(storm["errors"], 0);
    // The slots run from 0 to (users - 1) / rate seconds; the intervals that
    // saw them cover that, give or take one 1 s interval at each end.
    let span = f64::from(USERS - 1) / rate;
    let seconds = number(&storm["seconds"]);
    assert!(
        (seconds - span).abs() <= 2.0,
        "{seconds} s, slots over {span} s"
    );
    let measured = number(&storm["logons_per_second"]);
    assert!((measured - f64::from(USERS) / seconds).abs() < 1e-9);
    assert!(number(&storm["p95_ms"]) > 0.0);
    assert_eq!(s["actions"]["logon"]["count"], USERS);
    assert!(
        stdout.contains("logon storm: 10 of 10 users logged on"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(morning_dir.join("report.html")).unwrap();
    assert!(report.contains("logon storm: 10 of 10 users"), "report");

    // A compressed morning is refused before any load, with the reason.
    let refused = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        lab_dir,
        "--window",
        "morning",
        "--speed",
        "4",
        "--out",
        out.join("refused").to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--window morning"), "{stderr}");
}
