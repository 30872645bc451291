//! The exposition read back by parsers that are not ours: the
//! `prometheus-parse` crate for the Prometheus text format, and the strict
//! OpenMetrics parser of the Python `prometheus_client` (Debian's
//! python3-prometheus-client, scripts/setup.sh) for OpenMetrics.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use peakhour_metrics::catalogue::{FAMILIES, Kind};
use peakhour_metrics::{Ending, Format, LiveMetrics, RunInfo, RunPhase, Tally, encode};
use serde_json::Value;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A run in its steady phase with a bit of everything, including a label
/// value that needs escaping.
fn sample_run() -> LiveMetrics {
    let mut m = LiveMetrics::default();
    let run = RunInfo {
        run_id: "2026-11-23T10-00-00Z-mmb-medium-10u".into(),
        profile: "mmb \"medium\"".into(),
        seed: 42,
        shard: "1/2".into(),
        version: "0.1.0".into(),
    };
    m.start(run, 10, ["read", "send", "move"]);
    m.logged_on(3);
    m.action("read", Ending::Ok, ms(20), false);
    m.error("logon", "imap:no");
    m.enter(RunPhase::Steady);
    m.logged_on(7);
    for latency in [5, 50, 500, 1000, 2000] {
        m.action("read", Ending::Ok, ms(latency), false);
    }
    m.action("read", Ending::Error("imap:timeout"), ms(30_000), true);
    m.action("send", Ending::Error("smtp:reply:550"), ms(40), false);
    m.action("send", Ending::Ok, ms(300), true);
    m.action(
        "read",
        Ending::Skipped("empty_inbox"),
        Duration::ZERO,
        false,
    );
    m.error("session", "imap:closed\nby \\ peer");
    m.command("imap.SELECT");
    m.command("imap.SELECT");
    m.command("smtp.DATA");
    m.tally(Tally::MessagesSubmitted, 1);
    m.tally(Tally::RecipientsSubmitted, 3);
    m.delivered(ms(700));
    m.lag(Duration::from_micros(300));
    m.lag(ms(30));
    m.self_check(Duration::from_secs(12), 0.25, ms(30));
    m
}

fn python_openmetrics(text: &str) -> Vec<Value> {
    // The system interpreter: python3-prometheus-client is a Debian
    // package, which a pyenv or venv python on PATH does not see.
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "unit": f.unit,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]})
print(json.dumps(out))
"#;
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 runs (scripts/setup.sh installs python3-prometheus-client)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the exposition");
    let output = child.wait_with_output().expect("python finishes");
    assert!(
        output.status.success(),
        "the OpenMetrics parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("json")
}

/// The value of the one sample of `families` named `name` with `labels`.
fn om_value(families: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = families
        .iter()
        .flat_map(|f| f["samples"].as_array().into_iter().flatten())
        .filter(|s| s["name"] == name)
        .filter(|s| labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .filter(|s| s["labels"].as_object().map(|l| l.len()) == Some(labels.len()))
        .map(|s| s["value"].as_f64().expect("number"))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    found[0]
}

#[test]
fn openmetrics_parses_strictly_with_every_family_in_catalogue_order() {
    let text = encode(&sample_run(), Some(1.5), Format::OpenMetrics);
    assert!(text.ends_with("# EOF\n"));
    let families = python_openmetrics(&text);
    let names: Vec<&str> = families
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    assert_eq!(names, want);
    for (parsed, family) in families.iter().zip(FAMILIES) {
        assert_eq!(
            parsed["type"],
            family.kind.openmetrics_name(),
            "{}",
            family.name
        );
        assert_eq!(parsed["unit"], family.unit.unwrap_or(""), "{}", family.name);
        for sample in parsed["samples"].as_array().unwrap() {
            let labels: Vec<&str> = sample["labels"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|l| *l != "le")
                .collect();
            let mut declared: Vec<&str> = family.labels.to_vec();
            declared.sort_unstable();
            assert_eq!(labels, declared, "labels of {}", sample["name"]);
        }
    }

    let steady_read_ok = [("action", "read"), ("phase", "steady"), ("outcome", "ok")];
    assert_eq!(
        om_value(&families, "peakhour_actions_total", &steady_read_ok),
        5.0
    );
    let logon_read_ok = [("action", "read"), ("phase", "logon"), ("outcome", "ok")];
    assert_eq!(
        om_value(&families, "peakhour_actions_total", &logon_read_ok),
        1.0
    );
    let move_zero = [("action", "move"), ("phase", "drain"), ("outcome", "error")];
    assert_eq!(
        om_value(&families, "peakhour_actions_total", &move_zero),
        0.0
    );
    let escaped = [
        ("action", "session"),
        ("phase", "steady"),
        ("kind", "imap:closed\nby \\ peer"),
    ];
    assert_eq!(om_value(&families, "peakhour_errors_total", &escaped), 1.0);
    assert_eq!(
        om_value(&families, "peakhour_phase", &[("peakhour_phase", "steady")]),
        1.0
    );
    assert_eq!(
        om_value(&families, "peakhour_phase", &[("peakhour_phase", "logon")]),
        0.0
    );
    let info = [
        ("run_id", "2026-11-23T10-00-00Z-mmb-medium-10u"),
        ("profile", "mmb \"medium\""),
        ("seed", "42"),
        ("shard", "1/2"),
        ("version", "0.1.0"),
    ];
    assert_eq!(om_value(&families, "peakhour_run_info", &info), 1.0);
    assert_eq!(om_value(&families, "peakhour_users_logged_on", &[]), 10.0);
    assert_eq!(
        om_value(&families, "peakhour_generator_cpu_seconds_total", &[]),
        1.5
    );
    assert_eq!(
        om_value(&families, "peakhour_generator_cpu_ratio", &[]),
        0.25
    );
    // The QoS limit (1 s) is a bound: the 1,000 ms read is at or under it.
    let le_1 = [("action", "read"), ("le", "1")];
    assert_eq!(
        om_value(&families, "peakhour_action_latency_seconds_bucket", &le_1),
        5.0
    );
    let le_half = [("action", "read"), ("le", "0.5")];
    assert_eq!(
        om_value(
            &families,
            "peakhour_action_latency_seconds_bucket",
            &le_half
        ),
        4.0
    );
    let read = [("action", "read")];
    assert_eq!(
        om_value(&families, "peakhour_action_latency_seconds_count", &read),
        6.0
    );
    let sum = om_value(&families, "peakhour_action_latency_seconds_sum", &read);
    assert!((sum - 3.575).abs() < 1e-9, "{sum}");
}

#[test]
fn prometheus_text_reads_back_with_the_same_values() {
    let m = sample_run();
    let text = encode(&m, Some(1.5), Format::Prometheus);
    assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("parses");

    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        let found: Vec<_> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .collect();
        assert_eq!(found.len(), 1, "{name} {labels:?}");
        match &found[0].value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => {
                panic!("{name} is not a single value")
            }
        }
    };
    let steady = |action, outcome| {
        [
            ("action", action),
            ("phase", "steady"),
            ("outcome", outcome),
        ]
    };
    assert_eq!(value("peakhour_actions_total", &steady("read", "ok")), 5.0);
    assert_eq!(
        value("peakhour_actions_total", &steady("read", "error")),
        1.0
    );
    assert_eq!(value("peakhour_actions_total", &steady("send", "ok")), 1.0);
    assert_eq!(m.actions_in(RunPhase::Steady, true), 6);
    let late = [("action", "send"), ("phase", "steady")];
    assert_eq!(value("peakhour_late_starts_total", &late), 1.0);
    let skipped = [
        ("action", "read"),
        ("phase", "steady"),
        ("reason", "empty_inbox"),
    ];
    assert_eq!(value("peakhour_actions_skipped_total", &skipped), 1.0);
    assert_eq!(
        value("peakhour_commands_total", &[("command", "imap.SELECT")]),
        2.0
    );
    let steady_phase = [("phase", "steady")];
    assert_eq!(
        value("peakhour_recipients_submitted_total", &steady_phase),
        3.0
    );
    assert_eq!(
        value("peakhour_recipients_delivered_total", &steady_phase),
        1.0
    );
    assert_eq!(
        value("peakhour_phase", &[("peakhour_phase", "steady")]),
        1.0
    );
    assert_eq!(value("peakhour_run_info", &[("seed", "42")]), 1.0);
    assert_eq!(value("peakhour_scheduling_lag_max_seconds", &[]), 0.03);

    // Histograms come back as histograms, their buckets cumulative.
    let lag = scrape
        .samples
        .iter()
        .find(|s| s.metric == "peakhour_scheduling_lag_seconds")
        .expect("the lag histogram");
    let prometheus_parse::Value::Histogram(buckets) = &lag.value else {
        panic!("not a histogram: {:?}", lag.value)
    };
    let counts: BTreeMap<String, f64> = buckets
        .iter()
        .map(|b| (b.less_than.to_string(), b.count))
        .collect();
    assert_eq!(counts["0.0005"], 1.0);
    assert_eq!(counts["0.025"], 1.0);
    assert_eq!(counts["0.05"], 2.0);
    assert_eq!(counts["inf"], 2.0);

    // Every family's type line names what the Prometheus format expects.
    for family in FAMILIES {
        let (sample, kind) = match family.kind {
            Kind::Counter => (format!("{}_total", family.name), "counter"),
            Kind::Info => (format!("{}_info", family.name), "gauge"),
            Kind::Gauge | Kind::StateSet => (family.name.to_owned(), "gauge"),
            Kind::Histogram => (family.name.to_owned(), "histogram"),
        };
        let line = format!("# TYPE {sample} {kind}\n");
        assert!(text.contains(&line), "{line}");
    }
}

#[test]
fn a_run_that_has_not_started_still_serves_every_family() {
    let text = encode(&LiveMetrics::default(), None, Format::OpenMetrics);
    let families = python_openmetrics(&text);
    assert_eq!(families.len(), FAMILIES.len());
    assert_eq!(
        om_value(&families, "peakhour_phase", &[("peakhour_phase", "logon")]),
        1.0
    );
}

/// Issue 31, item 8: a shard waiting for `--start-at` said it was in its
/// logon phase. While it waits the phase is `waiting`; once it starts,
/// `logon`.
#[test]
fn issue_31_item_8_a_shard_waiting_for_its_start_serves_phase_waiting_not_logon() {
    let phase = |m: &LiveMetrics, state: &str| {
        let families = python_openmetrics(&encode(m, None, Format::OpenMetrics));
        om_value(&families, "peakhour_phase", &[("peakhour_phase", state)])
    };
    let mut m = LiveMetrics::default();
    m.waiting();
    assert_eq!(phase(&m, "waiting"), 1.0);
    assert_eq!(phase(&m, "logon"), 0.0);
    let run = RunInfo {
        run_id: "2026-11-23T10-00-00Z-mmb-medium-10u".into(),
        profile: "mmb-medium".into(),
        seed: 1,
        shard: "2/2".into(),
        version: "0.1.0".into(),
    };
    m.start(run, 5, ["read"]);
    assert_eq!(phase(&m, "waiting"), 0.0);
    assert_eq!(phase(&m, "logon"), 1.0);
    // Too late to wait once the run has begun.
    m.waiting();
    assert_eq!(phase(&m, "logon"), 1.0);
}
