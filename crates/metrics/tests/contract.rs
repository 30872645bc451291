//! The catalogue is a contract: `docs/live-metrics.md` documents every
//! family exactly as served, and the Grafana dashboard
//! (`docs/grafana/peakhour.json`) asks only for series that are served,
//! with labels they have.

use std::collections::BTreeSet;
use std::path::PathBuf;

use peakhour_metrics::catalogue::{FAMILIES, Family, sample_names};
use serde_json::Value;

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// Every `peakhour_…` name in `text` (Rust paths such as
/// `peakhour_metrics::…` left out).
fn metric_names(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(found) = text[i..].find("peakhour_") {
        let start = i + found;
        let mut end = start;
        while end < bytes.len() && word(bytes[end]) {
            end += 1;
        }
        let preceded = start > 0 && word(bytes[start - 1]);
        if !preceded && !text[end..].starts_with("::") {
            names.push(text[start..end].to_owned());
        }
        i = end;
    }
    names
}

/// The family a sample name belongs to.
fn family_of(sample: &str) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .find(|f| f.kind.sample_names(f.name).iter().any(|s| s == sample))
}

#[test]
fn the_page_documents_every_family_as_served_and_nothing_else() {
    let page = std::fs::read_to_string(docs().join("live-metrics.md")).unwrap();
    let rows: Vec<Vec<String>> = page
        .lines()
        .filter(|l| l.starts_with("| `peakhour_") && l.split('|').count() == 7)
        .map(|l| l.split('|').map(|c| c.trim().to_owned()).collect())
        .collect();
    let documented: Vec<&str> = rows.iter().map(|r| r[1].trim_matches('`')).collect();
    let served: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    assert_eq!(documented, served, "the table of families, in order");
    for (row, family) in rows.iter().zip(FAMILIES) {
        assert_eq!(
            row[2],
            family.kind.openmetrics_name(),
            "type of {}",
            family.name
        );
        assert_eq!(row[3], family.unit.unwrap_or(""), "unit of {}", family.name);
        let labels: Vec<String> = family.labels.iter().map(|l| format!("`{l}`")).collect();
        assert_eq!(row[4], labels.join(", "), "labels of {}", family.name);
    }
    let known: BTreeSet<String> = FAMILIES
        .iter()
        .map(|f| f.name.to_owned())
        .chain(sample_names())
        .collect();
    for name in metric_names(&page) {
        assert!(
            known.contains(&name),
            "the page names {name}, which is not served"
        );
    }
}

/// Every PromQL expression of the dashboard: panel targets and variable
/// queries.
fn expressions(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr" | "definition" | "query", Value::String(text)) => {
                        out.push(text.clone());
                    }
                    _ => expressions(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| expressions(v, out)),
        _ => {}
    }
}

/// The label names of `{…}` selectors right after a metric name in `expr`.
fn selector_labels(expr: &str, name: &str) -> Vec<String> {
    let mut labels = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find(name) {
        rest = &rest[at + name.len()..];
        let Some(inner) = rest.strip_prefix('{') else {
            continue;
        };
        let Some(close) = inner.find('}') else { break };
        for matcher in inner[..close].split(',').filter(|m| !m.trim().is_empty()) {
            let label = matcher.split(['=', '!']).next().unwrap_or("").trim();
            labels.push(label.to_owned());
        }
    }
    labels
}

#[test]
fn the_dashboard_reads_only_served_series_and_their_labels() {
    let text = std::fs::read_to_string(docs().join("grafana/peakhour.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let mut exprs = Vec::new();
    expressions(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "{exprs:?}");
    let served: BTreeSet<String> = sample_names().into_iter().collect();
    let mut used = BTreeSet::new();
    for expr in &exprs {
        let names = metric_names(expr);
        let mut allowed: BTreeSet<&str> = ["instance", "job"].into();
        for name in &names {
            assert!(served.contains(name), "{expr}: {name} is not served");
            let family = family_of(name).unwrap();
            allowed.extend(family.labels.iter().copied());
            if name.ends_with("_bucket") {
                allowed.insert("le");
            }
            for label in selector_labels(expr, name) {
                assert!(
                    family.labels.contains(&label.as_str())
                        || label == "instance"
                        || label == "job",
                    "{expr}: {name} has no label {label}"
                );
            }
            used.insert(name.clone());
        }
        // Aggregations group only by labels the series have.
        for (at, _) in expr.match_indices("by (") {
            let list = &expr[at + 4..];
            let list = &list[..list.find(')').unwrap()];
            for label in list.split(',').map(str::trim) {
                assert!(allowed.contains(label), "{expr}: grouped by {label}");
            }
        }
    }
    // The panels the issue asks for.
    for needed in [
        "peakhour_actions_total",
        "peakhour_errors_total",
        "peakhour_action_latency_seconds_bucket",
        "peakhour_users_logged_on",
        "peakhour_phase",
        "peakhour_generator_cpu_seconds_total",
        "peakhour_scheduling_lag_seconds_bucket",
    ] {
        assert!(used.contains(needed), "no panel reads {needed}");
    }
    assert!(
        exprs
            .iter()
            .any(|e| e.starts_with("histogram_quantile(0.95")
                && e.contains("peakhour_action_latency_seconds_bucket")),
        "a p95 from the latency histogram"
    );
}
