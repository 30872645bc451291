//! The planner's outputs: JSON checked against the committed schemas, CSV,
//! terminal and HTML, from values built through the analysis crate's own
//! functions (task runs → costs → task set → plan; cells → matrix).
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::collections::BTreeMap;

use peakhour_analysis::plan::{
    HighAverageValue, HostCapacity, LatencyMeasurement, Matrix, MatrixCell, MemoryPoint, Plan,
    PlanRequest, Price, QosModel, Series, SweepCapacity, TaskRun, TaskSet, TaskUnit,
    WindowMeasurement, derive_task_cost, fit_memory,
};
use peakhour_analysis::plan::{NetSource, Significance};
use peakhour_report::plan::{
    MATRIX_SCHEMA, PLAN_CSV_HEADER, PLAN_SCHEMA, RELATIONSHIPS_CSV_HEADER, TASKS_CSV_HEADER,
    TASKS_SCHEMA, matrix_json, plan_json, render_matrix_html, render_matrix_terminal,
    render_plan_html, render_plan_terminal, render_tasks_html, render_tasks_terminal,
    tasks_from_json, tasks_json, write_matrix_csv, write_plan_csv, write_relationships_csv,
    write_tasks_csv,
};
use serde_json::Value;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn series(values: &[f64]) -> Series {
    Series {
        times_s: (0..values.len()).map(|i| i as f64).collect(),
        values: values.to_vec(),
    }
}

/// A flat series of `n` one-second samples with a little wobble.
fn wobble(level: f64, n: usize) -> Series {
    series(
        &(0..n)
            .map(|i| level * if i % 2 == 0 { 0.95 } else { 1.05 })
            .collect::<Vec<_>>(),
    )
}

/// The whole series as its own high average (the monitor's definition has
/// its own tests; here only the plumbing matters).
fn whole(_t: &[f64], v: &[f64], min_window_s: f64) -> Option<HighAverageValue> {
    let (mean, std_dev, samples) = series(v).mean_sd()?;
    Some(HighAverageValue {
        mean,
        std_dev,
        window_s: samples as f64,
        samples,
        shorter_than_window: (samples as f64) < min_window_s,
    })
}

fn run(
    name: &str,
    unit: TaskUnit,
    tasks: f64,
    cpu_s: f64,
    disk_kib: f64,
    net_kib: f64,
    p95: Option<f64>,
) -> TaskRun {
    TaskRun {
        name: name.to_owned(),
        unit,
        workstations: 10,
        tasks_completed: tasks,
        latency: p95.map(|p95_ms| LatencyMeasurement {
            p50_ms: p95_ms / 3.0,
            p95_ms,
            samples: tasks as u64,
        }),
        measured: WindowMeasurement {
            window_s: 60.0,
            server_cpu_s: cpu_s,
            disk_read_kib: disk_kib * 0.2,
            disk_write_kib: disk_kib * 0.8,
            disk_read_ios: disk_kib / 16.0,
            disk_write_ios: disk_kib / 8.0,
            net_kib,
            net_source: NetSource::Client,
            cpu_pct: wobble(cpu_s / 60.0 * 100.0, 60),
            disk_kib_per_s: wobble(disk_kib / 60.0, 60),
            net_kib_per_s: wobble(net_kib / 60.0, 60),
        },
        memory_per_session_bytes: None,
    }
}

fn task_set() -> TaskSet {
    let idle = WindowMeasurement {
        window_s: 60.0,
        server_cpu_s: 0.6,
        cpu_pct: wobble(1.0, 60),
        ..WindowMeasurement::default()
    };
    let memory = fit_memory(
        &[(0.0, 40.0), (50.0, 190.0), (100.0, 345.0), (200.0, 640.0)]
            .iter()
            .map(|&(sessions, mib)| MemoryPoint {
                sessions,
                bytes: mib * 1024.0 * 1024.0,
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut idle_session = run(
        "idle_session",
        TaskUnit::SessionHour,
        100.0 / 60.0,
        0.9,
        0.0,
        300.0,
        None,
    );
    idle_session.memory_per_session_bytes = Some(memory.per_session_bytes);
    let runs = [
        run(
            "read",
            TaskUnit::Task,
            1200.0,
            3.0,
            2400.0,
            36_000.0,
            Some(40.0),
        ),
        run(
            "send",
            TaskUnit::Task,
            240.0,
            4.2,
            9600.0,
            24_000.0,
            Some(180.0),
        ),
        run(
            "check_inbox",
            TaskUnit::Task,
            600.0,
            1.8,
            600.0,
            6000.0,
            Some(25.0),
        ),
        run(
            "search_unindexed",
            TaskUnit::Task,
            60.0,
            30.6,
            60_000.0,
            600.0,
            Some(900.0),
        ),
        run(
            "logon, imap",
            TaskUnit::Task,
            300.0,
            3.6,
            300.0,
            1500.0,
            Some(30.0),
        ),
        idle_session,
    ];
    let costs = runs
        .iter()
        .map(|r| derive_task_cost(r, &idle, 2.0, &whole).unwrap())
        .collect();
    TaskSet::build("mmb-medium", costs, &idle, 2.0, Some(8 << 30), Some(memory))
}

fn request(host: bool) -> PlanRequest {
    let rates: BTreeMap<String, f64> = [
        ("read", 10.16),
        ("send", 1.77),
        ("check_inbox", 1.5),
        ("search_unindexed", 0.05),
        ("logon, imap", 0.125),
        ("idle_session", 1.0),
        ("calendar", 0.5),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), *v))
    .collect();
    PlanRequest {
        profile: "mmb-medium".to_owned(),
        rates_per_user_hour: rates,
        sessions_per_user: 1.0,
        users: vec![1000, 5000, 10_000],
        headroom: 0.7,
        host: host.then(|| HostCapacity {
            label: "lab --cpus 2 --memory 8G".to_owned(),
            cores: 2.0,
            memory_bytes: 8.0 * GIB,
            disk_iops: Some(2000.0),
            disk_kib_per_s: Some(200_000.0),
            net_kib_per_s: None,
        }),
        qos: QosModel::default(),
        price: Some(Price {
            amount: 5000.0,
            currency: "USD".to_owned(),
        }),
    }
}

fn matrix() -> Matrix {
    let cell = |cpus: f64, gib: u64, p95: f64, cpu: f64, reads: f64| MatrixCell {
        cpus,
        memory_bytes: gib << 30,
        metrics: [
            ("weighted_p95_ms", p95),
            ("cpu_pct", cpu),
            ("disk_read_share_pct", reads),
            ("p95_ms.read", p95 * 0.8),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect(),
        bottleneck: Some(if cpu > 90.0 { "cpu" } else { "none" }.to_owned()),
        run_dir: Some(format!("runs/matrix/cpus{cpus}-mem{gib}g")),
        spread: [("weighted_p95_ms".to_owned(), 5.0)].into_iter().collect(),
    };
    Matrix::build(
        "mmb-medium",
        500,
        vec![
            cell(0.5, 1, 1400.0, 99.0, 30.0),
            cell(0.5, 4, 1300.0, 98.0, 4.0),
            cell(1.0, 1, 420.0, 71.0, 28.0),
            cell(1.0, 4, 450.0, 70.0, 3.0),
        ],
        10.0,
    )
    .unwrap()
}

fn validate(schema: &str, doc: &str) -> Vec<String> {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let doc: Value = serde_json::from_str(doc).unwrap();
    validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn committed_schema_files_are_the_ones_compiled_in() {
    for (file, compiled) in [
        ("tasks.schema.json", TASKS_SCHEMA),
        ("plan.schema.json", PLAN_SCHEMA),
        ("matrix.schema.json", MATRIX_SCHEMA),
    ] {
        let on_disk = std::fs::read_to_string(format!(
            "{}/../../schemas/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(on_disk, compiled, "{file}");
    }
}

#[test]
fn tasks_json_satisfies_its_schema_and_reads_back() {
    let set = task_set();
    let json = tasks_json(&set).unwrap();
    assert_eq!(validate(TASKS_SCHEMA, &json), Vec::<String>::new());
    let doc: Value = serde_json::from_str(&json).unwrap();
    for field in [
        "name",
        "server_cpu_ms_per_task",
        "cpu_high_average_pct",
        "cpu_high_average_sd",
        "disk_kib_per_task",
        "net_kib_per_task",
        "p95_ms",
    ] {
        assert!(doc["tasks"][0].get(field).is_some(), "{field}");
    }
    // search: (30.6 − 0.6) s / 60 = 500 ms, ranked first and stressful.
    assert_eq!(doc["tasks"][0]["name"], "search_unindexed");
    assert_eq!(doc["tasks"][0]["server_cpu_ms_per_task"], 500.0);
    assert_eq!(doc["tasks"][0]["stressful"], true);
    assert_eq!(tasks_from_json(&json).unwrap(), set);
}

#[test]
fn the_tasks_schema_rejects_a_task_without_p95() {
    let json = tasks_json(&task_set()).unwrap();
    let mut doc: Value = serde_json::from_str(&json).unwrap();
    doc["tasks"][0].as_object_mut().unwrap().remove("p95_ms");
    assert!(!validate(TASKS_SCHEMA, &doc.to_string()).is_empty());
}

#[test]
fn plan_json_satisfies_its_schema_with_and_without_a_host() {
    let set = task_set();
    for host in [true, false] {
        let plan = Plan::compute(&set, &request(host)).unwrap();
        let json = plan_json(&plan).unwrap();
        assert_eq!(
            validate(PLAN_SCHEMA, &json),
            Vec::<String>::new(),
            "host {host}"
        );
        let doc: Value = serde_json::from_str(&json).unwrap();
        if host {
            assert!(doc["first_exhausted"]["resource"].is_string());
            assert!(doc["first_exhausted"]["users"].as_u64().unwrap() > 0);
            assert!(doc["max_users_at_qos"]["users"].as_u64().unwrap() > 0);
            assert!(doc["price_performance"]["per_supported_user"].is_number());
        } else {
            assert!(doc["first_exhausted"].is_null());
            assert!(doc["max_users_at_qos"].is_null());
        }
    }
    let mut with_sweep = request(true);
    with_sweep.qos.sweep = Some(SweepCapacity {
        users: 4000.0,
        source: "sweep qos capacity".to_owned(),
        lower_bound: false,
    });
    let json = plan_json(&Plan::compute(&set, &with_sweep).unwrap()).unwrap();
    assert_eq!(validate(PLAN_SCHEMA, &json), Vec::<String>::new());
}

#[test]
fn matrix_json_satisfies_its_schema() {
    let json = matrix_json(&matrix()).unwrap();
    assert_eq!(validate(MATRIX_SCHEMA, &json), Vec::<String>::new());
    let doc: Value = serde_json::from_str(&json).unwrap();
    let rel = doc["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "weighted_p95_ms")
        .unwrap();
    assert_eq!(rel["with_more_cpus"]["direction"], "falls");
}

#[test]
fn csv_files_have_their_headers_and_one_row_per_item() {
    let set = task_set();
    let mut out = Vec::new();
    write_tasks_csv(&set, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], TASKS_CSV_HEADER);
    assert_eq!(lines.len(), 1 + set.tasks.len());
    let columns = TASKS_CSV_HEADER.split(',').count();
    // The name with a comma is quoted, so it still splits into one cell.
    let logon = lines.iter().find(|l| l.contains("logon")).unwrap();
    assert!(logon.contains("\"logon, imap\""));
    assert_eq!(lines[1].split(',').count(), columns);

    let plan = Plan::compute(&set, &request(true)).unwrap();
    let mut out = Vec::new();
    write_plan_csv(&plan, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().next().unwrap(), PLAN_CSV_HEADER);
    assert_eq!(text.lines().count(), 4);
    assert!(
        text.lines()
            .skip(1)
            .all(|l| l.split(',').count() == PLAN_CSV_HEADER.split(',').count())
    );

    let m = matrix();
    let mut out = Vec::new();
    write_matrix_csv(&m, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "cpus,memory_bytes,bottleneck,run_dir,cpu_pct,disk_read_share_pct,p95_ms.read,weighted_p95_ms"
    );
    assert_eq!(text.lines().count(), 5);
    let mut out = Vec::new();
    write_relationships_csv(&m, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().next().unwrap(), RELATIONSHIPS_CSV_HEADER);
    assert!(text.contains("weighted_p95_ms,cpus,falls,"));
    assert_eq!(text.lines().count(), 1 + 2 * 4);
}

#[test]
fn terminal_tables_name_the_answers() {
    let set = task_set();
    let t = render_tasks_terminal(&set);
    assert!(t.contains("search_unindexed *"), "{t}");
    assert!(t.contains("stressful"));
    assert!(t.contains("memory: "));
    let plan = Plan::compute(&set, &request(true)).unwrap();
    let p = render_plan_terminal(&plan);
    let first = plan.first_exhausted.as_ref().unwrap();
    assert!(
        p.contains(&format!("first to run out: {}", first.resource.as_str())),
        "{p}"
    );
    assert!(p.contains("memory to install"));
    assert!(p.contains("max users at QoS"));
    assert!(p.contains("price/performance"));
    assert!(p.contains("calendar"), "the unknown rate is warned about");
    let m = render_matrix_terminal(&matrix());
    assert!(m.contains("0.5 CPUs"), "{m}");
    assert!(m.contains("weighted_p95_ms"));
}

fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn tasks_html_draws_seed_001s_paired_bars_in_rank_order() {
    let set = task_set();
    let html = render_tasks_html(&set);
    assert_self_contained(&html);
    for id in [
        "ranking",
        "bars",
        "memory",
        "warnings",
        "tasks-cpu",
        "tasks-disk",
        "tasks-net",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    // Two bars (high average, sd) per task in each of the three charts.
    let bars = html.matches("<rect class=\"bar\"").count();
    assert_eq!(bars, 3 * 2 * set.tasks.len());
    let cpu_chart =
        &html[html.find("id=\"tasks-cpu\"").unwrap()..html.find("id=\"tasks-disk\"").unwrap()];
    let first = cpu_chart.find(">search_unindexed<").unwrap();
    let second = cpu_chart.find(&format!(">{}<", set.tasks[1].name)).unwrap();
    assert!(first < second);
}

#[test]
fn plan_html_has_the_sizing_table_and_the_exhaustion_point() {
    let plan = Plan::compute(&task_set(), &request(true)).unwrap();
    let html = render_plan_html(&plan);
    assert_self_contained(&html);
    for id in [
        "sizing",
        "resources",
        "plan-resources",
        "exhaustion",
        "qos",
        "price",
        "assumptions",
        "warnings",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    let e = plan.first_exhausted.as_ref().unwrap();
    assert!(html.contains(&format!("{} runs out at", e.resource.as_str())));
    assert!(html.contains("headroom 70%"));
    assert!(html.contains("memory used at peak"));
    let no_host = render_plan_html(&Plan::compute(&task_set(), &request(false)).unwrap());
    assert!(no_host.contains("No host given"));
    assert!(no_host.contains("id=\"plan-resources\""));
}

#[test]
fn matrix_html_is_laid_out_as_seed_003() {
    let html = render_matrix_html(&matrix());
    assert_self_contained(&html);
    for id in ["grid", "relationships", "cells", "warnings"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("<td>More memory</td>"));
    assert!(html.contains("<td>More CPUs</td>"));
    // p95 falls with CPUs (1400 → 420, 1300 → 450); disk reads fall with memory.
    let cpus_row = html.split("<td>More CPUs</td>").nth(1).unwrap();
    let decreases = cpus_row.split("</tr>").next().unwrap();
    assert!(decreases.contains("weighted_p95_ms"), "{decreases}");
    assert!(html.contains("runs/matrix/cpus0.5-mem1g"));
}

#[test]
fn issue_31_item_9_matrix_html_draws_its_grids_as_charts() {
    let html = render_matrix_html(&matrix());
    // Weighted p95 and CPU, each against CPUs and against memory.
    for id in [
        "matrix-weighted_p95_ms-by-cpus",
        "matrix-weighted_p95_ms-by-memory",
        "matrix-cpu_pct-by-cpus",
        "matrix-cpu_pct-by-memory",
    ] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id} missing");
    }
    // Against CPUs, one line per memory size, each through its two cells.
    let start = html
        .find("<svg id=\"matrix-weighted_p95_ms-by-cpus\"")
        .unwrap();
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    assert_eq!(
        svg.matches("<polyline class=\"series\"").count(),
        2,
        "{svg}"
    );
    for line in svg.split("<polyline class=\"series\"").skip(1) {
        let points = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(points.split(' ').count(), 2, "{points}");
    }
    assert!(
        svg.contains(">1 GiB</text>") && svg.contains(">4 GiB</text>"),
        "{svg}"
    );
    assert_self_contained(&html);
}

/// Every `A ± B` printed in `text`, with binary units (B, KiB, MiB, GiB)
/// turned into bytes, so that the two sides compare.
fn printed_uncertainties(text: &str) -> Vec<(f64, f64, String)> {
    fn number_at_end(s: &str) -> Option<f64> {
        let s = s.trim_end();
        let (s, scale) = [
            ("GiB", 1024f64.powi(3)),
            ("MiB", 1024f64.powi(2)),
            ("KiB", 1024.0),
            ("B", 1.0),
        ]
        .iter()
        .find_map(|(u, k)| s.strip_suffix(u).map(|r| (r.trim_end(), *k)))
        .unwrap_or((s, 1.0));
        let start = s
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-'))
            .map_or(0, |i| i + 1);
        s[start..]
            .replace(',', "")
            .parse::<f64>()
            .ok()
            .map(|v| v * scale)
    }
    fn number_at_start(s: &str) -> Option<f64> {
        let s = s.trim_start();
        let end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .unwrap_or(s.len());
        let v: f64 = s[..end].replace(',', "").parse().ok()?;
        let rest = s[end..].trim_start();
        let scale = [
            ("GiB", 1024f64.powi(3)),
            ("MiB", 1024f64.powi(2)),
            ("KiB", 1024.0),
        ]
        .iter()
        .find_map(|(u, k)| rest.starts_with(u).then_some(*k))
        .unwrap_or(1.0);
        Some(v * scale)
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split('±').collect();
        for pair in parts.windows(2) {
            if let (Some(a), Some(b)) = (number_at_end(pair[0]), number_at_start(pair[1])) {
                out.push((a, b, line.to_owned()));
            }
        }
    }
    out
}

/// A plan from tasks whose network and memory are noise (as on a busy,
/// shared machine: network counted on its interfaces, memory fitted with
/// R² well under 0.5).
fn noisy_plan() -> Plan {
    let mut set = task_set();
    for t in &mut set.tasks {
        t.net_kib_per_task = 0.0;
        t.net_kib_per_task_sd = 55_492.0;
    }
    set.memory = Some(
        fit_memory(
            &[(0.0, 200.0), (30.0, 215.0), (60.0, 203.0)]
                .iter()
                .map(|&(sessions, mib)| MemoryPoint {
                    sessions,
                    bytes: mib * 1024.0 * 1024.0,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap(),
    );
    Plan::compute(&set, &request(true)).unwrap()
}

#[test]
fn issue_25_item_5_no_printed_plus_minus_exceeds_its_figure_in_any_output() {
    let plan = noisy_plan();
    assert_eq!(
        plan.per_user.significance.net_kib_per_s,
        Significance::NotSignificant
    );
    let terminal = render_plan_terminal(&plan);
    let html = render_plan_html(&plan);
    for (what, text) in [("terminal", &terminal), ("html", &html)] {
        let pairs = printed_uncertainties(text);
        assert!(!pairs.is_empty(), "{what}: no ± at all:\n{text}");
        for (value, sd, line) in pairs {
            assert!(value > sd, "{what} prints {value} ± {sd}: {line}");
        }
        assert!(text.contains("not significant"), "{what}:\n{text}");
    }
    // The headline comes first: the first resource, which only a
    // significant estimate may name, and the memory model set aside.
    let lines: Vec<&str> = terminal.lines().collect();
    assert!(
        lines[1].starts_with("» first to run out: cpu at"),
        "{terminal}"
    );
    assert!(
        terminal.contains("memory per session is not used"),
        "{terminal}"
    );
    assert!(html.contains("<section id=\"headline\">"), "{html}");
    // plan.json: the numbers stay, typed as not significant, and valid.
    let json = plan_json(&plan).unwrap();
    assert_eq!(validate(PLAN_SCHEMA, &json), Vec::<String>::new());
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        doc["per_user"]["significance"]["net_kib_per_s"],
        "not_significant"
    );
    assert_eq!(
        doc["rows"][0]["significance"]["memory_bytes"],
        "not_significant"
    );
    assert_eq!(doc["rows"][0]["memory_to_install_bytes"], Value::Null);
    assert_eq!(doc["memory_model_used"], false);
    // plan.csv: a significance column per figure.
    let mut csv = Vec::new();
    write_plan_csv(&plan, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("net_kib_per_s_significant"), "false");
    assert_eq!(col("cpu_cores_significant"), "true");
}

#[test]
fn issue_25_item_5_a_matrix_with_changes_within_noise_says_so_and_satisfies_its_schema() {
    let m = matrix();
    let noisy: Vec<MatrixCell> = m
        .cells
        .iter()
        .cloned()
        .map(|mut c| {
            c.spread.insert("weighted_p95_ms".to_owned(), 1e6);
            c
        })
        .collect();
    let m = Matrix::build(&m.profile, m.users, noisy, m.threshold_pct).unwrap();
    let json = matrix_json(&m).unwrap();
    assert!(json.contains("\"not_significant\""), "{json}");
    assert_eq!(validate(MATRIX_SCHEMA, &json), Vec::<String>::new());
    let terminal = render_matrix_terminal(&m);
    assert!(terminal.contains("no significant change"), "{terminal}");
}
