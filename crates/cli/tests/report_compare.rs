//! `peakhour report` and `peakhour compare` on run directories recorded
//! against the lab (the report crate's fixtures), end to end: files read,
//! monitor.csv reduced, report.html written, outputs in every format.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PEAKHOUR: &str = env!("CARGO_BIN_EXE_peakhour");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures")
        .join(name)
}

fn peakhour(args: &[&str]) -> Output {
    let out = Command::new(PEAKHOUR).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "peakhour {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A copy of a fixture without its report.html, in a temporary directory.
fn copy(name: &str, into: &Path) -> PathBuf {
    let dir = into.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "report.html" {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    }
    dir
}

#[test]
fn report_writes_a_self_contained_page_with_monitor_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy("run-small", tmp.path());
    let out = peakhour(&["report", dir.to_str().unwrap(), "--format", "markdown"]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("| action | count | p50 ms | p95 ms |"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in peakhour_sections() {
        assert!(html.contains(&format!("<section id=\"{id}\"")), "{id}");
    }
    for chart in [
        "timeline-cpu",
        "timeline-memory",
        "timeline-disk",
        "timeline-network",
        "timeline-queue",
    ] {
        assert!(
            html.contains(&format!("<svg id=\"{chart}\"")),
            "{chart} from monitor.csv"
        );
    }
    for text in [
        "Transaction Queues",
        "Processor Utilization",
        "Logical Drive Utilization",
        "Postfix active queue length",
    ] {
        assert!(html.contains(text), "{text}");
    }
    assert!(!html.contains("http://") && !html.contains("https://"));

    let csv =
        String::from_utf8(peakhour(&["report", dir.to_str().unwrap(), "--format", "csv"]).stdout)
            .unwrap();
    assert!(csv.starts_with("section,item,measure,value,unit\n"));
    assert!(csv.contains("action,read,p95,"));
    let json: serde_json::Value = serde_json::from_slice(
        &peakhour(&["report", dir.to_str().unwrap(), "--format", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(json["profile"], "mmb-medium");
}

fn peakhour_sections() -> [&'static str; 8] {
    [
        "warnings",
        "verdict",
        "actions",
        "throughput",
        "timelines",
        "resources",
        "delivery",
        "disclosure",
    ]
}

#[test]
fn compare_prints_percent_changes_in_text_json_and_writes_html() {
    let tmp = tempfile::tempdir().unwrap();
    let a = copy("run-small", tmp.path());
    let b = copy("run-small-maildir", tmp.path());
    let html = tmp.path().join("compare.html");
    let text = String::from_utf8(
        peakhour(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ])
        .stdout,
    )
    .unwrap();
    assert!(text.contains("run-small (baseline)"), "{text}");
    assert!(text.contains("run-small-maildir: read p95 "), "{text}");
    assert!(text.contains("run-to-run noise"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && !page.contains("http://"));

    let out = peakhour(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/compare.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    assert!(validator.is_valid(&json));
    let read = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "read p95")
        .unwrap();
    assert!(read["changes"][0]["change_pct"].is_number());
    assert!(
        read["changes"][0]["statement"]
            .as_str()
            .unwrap()
            .contains('%')
    );
    let md = String::from_utf8(
        peakhour(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "markdown",
        ])
        .stdout,
    )
    .unwrap();
    assert!(md.contains("| metric | unit |"));
}
