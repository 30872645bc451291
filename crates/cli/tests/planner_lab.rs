//! The planner's commands against real labs, kept short: `peakhour tasks`
//! on `mmb-medium` (tasks.json valid against its committed schema),
//! `peakhour plan` on that output, `peakhour matrix` over 2 × 2 shaped labs,
//! and a lab held to half a core (issue 13: "lab up --cpus 0.5 holds the
//! lab's Dovecot to at most about half a core", visible in monitor.csv).
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;

use common::peakhour;
use peakhour_lab::{LabConfig, LabGuard, Limits, Ports};

/// Two actions, small mailboxes: enough to exercise every path quickly.
const TINY_PROFILE: &str = r#"
name = "tiny"
description = "two actions over small mailboxes, for the planner's tests"
day = "8h"
speed = 1.0
mode = "poisson"

[users]
count = 4
name = "user{n}"
domain = "bench.test"

[recipients]
average = 1

[[mailbox.folders]]
name = "INBOX"
messages = 6

[[mailbox.folders]]
name = "Archive"
messages = 4

[actions.check_inbox]
per_day = 40
page_size = 20

[actions.read]
per_day = 80

[[mix]]
weight = 1
body = "1KB"
"#;

fn schema(name: &str) -> jsonschema::Validator {
    let path = format!("{}/../../schemas/{name}", env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_valid(validator: &jsonschema::Validator, value: &serde_json::Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what} breaks its schema: {errors:#?}");
}

/// A directory the lab's servers can reach (0755).
fn open_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .unwrap()
}

/// Issue 13, must show: `peakhour tasks` on the lab ranks the `mmb-medium`
/// actions and the session tasks with their costs, and `peakhour plan
/// --users 1000,5000,10000` prints the sizing table and names the first
/// resource to run out. Every task runs briefly (3 s at 2 workstations).
///
/// Issue 25, item 5, must show, on the same run (a lab capped at this
/// machine's own 2 cores, so unshaped, on a machine shared with other
/// builds and load tests): network per task of `send` and `read` above
/// zero, counted at peakhour's own sockets, and a plan that prints no ±
/// larger than its figure.
#[test]
fn issue_13_and_25_item_5_tasks_rank_mmb_medium_then_an_honest_plan_for_10000_users() {
    // A lab in a cgroup (capped at this machine's 2 cores): its CPU is the
    // cgroup's, read every sample. Without one the CPU comes from the
    // process groups, whose reads the monitor spreads over up to 10 samples
    // when they cost more than 5 ms (a debug build on a loaded machine),
    // too coarse for tasks measured over 3 s.
    let dir = open_dir();
    let config = LabConfig {
        users: 8,
        ports: Ports::free().unwrap(),
        limits: Limits::default().with_cpus(2.0).unwrap(),
        ..LabConfig::new(dir.path())
    };
    let lab = LabGuard::start(&config).unwrap();
    let out = tempfile::tempdir().unwrap();
    let tasks_dir = out.path().join("tasks");
    let output = peakhour(&[
        "tasks",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        &lab.status.dir,
        "--workstations",
        "2",
        "--rate",
        "2",
        "--duration",
        "3s",
        "--ramp-up",
        "1s",
        "--drain",
        "1s",
        "--baseline",
        "3s",
        "--sessions",
        "6",
        "--out",
        tasks_dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "peakhour tasks failed");
    let terminal = String::from_utf8_lossy(&output.stdout);
    let tasks = read_json(&tasks_dir.join("tasks.json"));
    assert_valid(&schema("tasks.schema.json"), &tasks, "tasks.json");
    let list = tasks["tasks"].as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in [
        "check_inbox",
        "send",
        "read",
        "move",
        "delete",
        "update_calendar",
        "logon",
        "deliver",
        "search_unindexed",
        "idle_session",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
        assert!(terminal.contains(name), "{name} not printed:\n{terminal}");
    }
    // Per-task tasks rank first, by CPU per task, each with its costs; the
    // session-hour task last.
    assert_eq!(names.last(), Some(&"idle_session"));
    let per_task = &list[..list.len() - 1];
    let cpu: Vec<f64> = per_task
        .iter()
        .map(|t| t["server_cpu_ms_per_task"].as_f64().unwrap())
        .collect();
    assert!(cpu.windows(2).all(|w| w[0] >= w[1]), "{cpu:?}");
    for (i, t) in per_task.iter().enumerate() {
        assert_eq!(t["rank"].as_u64(), Some(i as u64 + 1), "{t}");
        assert!(t["p95_ms"].as_f64().unwrap() > 0.0, "{t}");
        for cost in [
            "disk_kib_per_task",
            "net_kib_per_task",
            "cpu_high_average_pct",
        ] {
            assert!(t[cost].as_f64().unwrap() >= 0.0, "{cost}: {t}");
        }
    }
    // Issue 25: the network a task costs is the bytes peakhour's clients
    // moved for it, never 0 ± the neighbours' loopback traffic.
    for name in ["send", "read"] {
        let t = &list[names.iter().position(|n| *n == name).unwrap()];
        assert_eq!(t["net_source"], "client", "{t}");
        let net = t["net_kib_per_task"].as_f64().unwrap();
        let sd = t["net_kib_per_task_sd"].as_f64().unwrap();
        assert!(net > 0.0 && net > sd, "{name}: {net} ± {sd} KiB per task");
    }
    let logon = &list[names.iter().position(|n| *n == "logon").unwrap()];
    assert!(logon["server_cpu_ms_per_task"].as_f64().unwrap() > 0.0);
    // The idle sessions gave the memory model its points (0, half, all).
    assert_eq!(tasks["memory"]["points"].as_array().unwrap().len(), 3);
    for file in [
        "tasks.csv",
        "tasks.html",
        "baseline/monitor.csv",
        "task-read/summary.json",
    ] {
        assert!(tasks_dir.join(file).exists(), "{file} was not written");
    }

    plan_for_10000_users(&tasks_dir.join("tasks.json"), out.path());
}

/// `peakhour plan --users 1000,5000,10000` on `tasks_json`: the sizing
/// table and the first resource to run out, printed and in plan.json (valid
/// against its schema).
fn plan_for_10000_users(tasks_json: &Path, out: &Path) {
    let plan_dir = out.join("plan");
    let plan_args = [
        "plan",
        "--tasks",
        tasks_json.to_str().unwrap(),
        "--profile",
        "mmb-medium",
        "--users",
        "1000,5000,10000",
        "--host-cpus",
        "2",
        "--host-memory",
        "4G",
        "--price",
        "1000",
        "--out",
        plan_dir.to_str().unwrap(),
    ];
    let printed = peakhour(&plan_args);
    assert!(printed.status.success(), "peakhour plan failed");
    let printed = String::from_utf8_lossy(&printed.stdout).into_owned();
    let output = peakhour(&[&plan_args[..], &["--json"]].concat());
    assert!(output.status.success(), "peakhour plan --json failed");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_valid(&schema("plan.schema.json"), &plan, "plan.json");
    assert_eq!(plan, read_json(&plan_dir.join("plan.json")));
    let users: Vec<u64> = plan["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["users"].as_u64().unwrap())
        .collect();
    assert_eq!(users, [1000, 5000, 10000]);
    // The sizing table, and the first resource to run out by name.
    assert!(printed.contains("memory to install"), "{printed}");
    for row in ["1,000", "5,000", "10,000"] {
        assert!(printed.contains(row), "no row for {row} users:\n{printed}");
    }
    let first = plan["first_exhausted"]["resource"].as_str().unwrap();
    assert!(
        printed.contains(&format!("first to run out: {first} at")),
        "{printed}"
    );
    // Issue 25: the QoS capacity is modelled only from a CPU per user above
    // its noise. Tasks of 3 s on a busy machine may not give one (6 idle
    // sessions held 3 s cost 30 ± 100 ms per session-hour there); then the
    // plan says so instead of modelling noise.
    if plan["per_user"]["significance"]["cpu_cores"] == "significant" {
        assert!(plan["max_users_at_qos"]["users"].as_u64().unwrap() > 0);
    } else {
        assert!(plan["max_users_at_qos"].is_null(), "{plan}");
        assert!(
            printed.contains("max users at QoS is not modelled"),
            "{printed}"
        );
    }
    let rates: Vec<&str> = plan["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task"].as_str().unwrap())
        .collect();
    // deliver is left out: the send task's window holds its deliveries.
    assert!(
        rates.contains(&"send") && !rates.contains(&"deliver"),
        "{rates:?}"
    );
    assert!(plan_dir.join("plan.html").exists() && plan_dir.join("plan.csv").exists());
    // Issue 25: no figure within its own ±1 standard error is printed as a
    // figure, on the terminal or in plan.html.
    let html = std::fs::read_to_string(plan_dir.join("plan.html")).unwrap();
    for (what, text) in [("terminal", &printed), ("plan.html", &html)] {
        for (value, sd, line) in printed_uncertainties(text) {
            assert!(value > sd, "{what} prints {value} ± {sd}: {line}");
        }
    }
    // The network per user is measured, so it is significant, and grows
    // with the users (it was the idle machine's traffic at every count).
    assert_eq!(
        plan["per_user"]["significance"]["net_kib_per_s"],
        "significant"
    );
    let net: Vec<f64> = plan["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["net_kib_per_s"].as_f64().unwrap())
        .collect();
    assert!(net[0] < net[1] && net[1] < net[2], "{net:?}");
}

/// Every `A ± B` printed in `text`, binary units (B, KiB, MiB, GiB) turned
/// into bytes so that the two sides compare.
fn printed_uncertainties(text: &str) -> Vec<(f64, f64, String)> {
    const UNITS: [(&str, f64); 4] = [
        ("GiB", 1_073_741_824.0),
        ("MiB", 1_048_576.0),
        ("KiB", 1024.0),
        ("B", 1.0),
    ];
    fn number_at_end(s: &str) -> Option<f64> {
        let s = s.trim_end();
        let (s, scale) = UNITS
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
        let scale = UNITS[..3]
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

#[test]
fn issue_13_matrix_over_2x2_shapes_gives_cells_and_relationships() {
    let out = open_dir();
    let profile = out.path().join("tiny.toml");
    std::fs::write(&profile, TINY_PROFILE).unwrap();
    let dir = out.path().join("matrix");
    let output = peakhour(&[
        "matrix",
        "--profile",
        profile.to_str().unwrap(),
        "--cpus",
        "0.5,1",
        "--memory",
        "256M,512M",
        "--users",
        "3",
        "--speed",
        "400",
        "--duration",
        "4s",
        "--ramp-up",
        "1s",
        "--drain",
        "2s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "peakhour matrix failed");
    let matrix = read_json(&dir.join("matrix.json"));
    assert_valid(&schema("matrix.schema.json"), &matrix, "matrix.json");
    let cells = matrix["cells"].as_array().unwrap();
    let shapes: Vec<(f64, u64)> = cells
        .iter()
        .map(|c| {
            let mib = c["memory_bytes"].as_u64().unwrap() / (1024 * 1024);
            (c["cpus"].as_f64().unwrap(), mib)
        })
        .collect();
    assert_eq!(shapes, [(0.5, 256), (0.5, 512), (1.0, 256), (1.0, 512)]);
    for c in cells {
        assert!(c["metrics"]["weighted_p95_ms"].as_f64().is_some(), "{c}");
        // The cgroup's accounting fed the CPU utilization.
        assert!(c["metrics"]["cpu_pct"].as_f64().is_some(), "{c}");
    }
    // Seed 003's Table 3: each metric read along both axes, from two lines
    // of two cells each (one per memory size; one per CPU count).
    let relationships = matrix["relationships"].as_array().unwrap();
    let cpu = relationships
        .iter()
        .find(|r| r["metric"] == "cpu_pct")
        .unwrap_or_else(|| panic!("no cpu_pct row: {relationships:?}"));
    for axis in ["with_more_memory", "with_more_cpus"] {
        assert_eq!(cpu[axis]["lines"].as_array().unwrap().len(), 2, "{cpu}");
        assert!(cpu[axis]["median_change_pct"].is_number(), "{cpu}");
    }
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("resource/performance relationships"),
        "{table}"
    );
    for file in ["matrix.csv", "matrix-relationships.csv", "matrix.html"] {
        assert!(dir.join(file).exists(), "{file} was not written");
    }
    // Every cell's lab was taken down.
    for cell in [
        "cell-0.5cpu-256m",
        "cell-0.5cpu-512m",
        "cell-1cpu-256m",
        "cell-1cpu-512m",
    ] {
        let lab = dir.join("labs").join(cell);
        assert!(
            peakhour_lab::Lab::new(&lab)
                .status()
                .map_or(true, |s| !s.healthy),
            "{cell}'s lab still runs"
        );
    }
}

/// Issue 13, must show: `lab up --cpus 0.5` holds the lab's servers to about
/// half a core under a load that would take more, visible in monitor.csv's
/// cgroup columns, and the run's summary names the limit.
#[test]
fn issue_13_a_half_core_lab_holds_dovecot_to_half_a_core() {
    let dir = open_dir();
    let config = LabConfig {
        users: 20,
        ports: Ports::free().unwrap(),
        limits: Limits::default().with_cpus(0.5).unwrap(),
        ..LabConfig::new(dir.path())
    };
    let lab = LabGuard::start(&config).unwrap();
    // `lab status --json` reports the cap, as its committed schema says.
    let status = peakhour(&["lab", "status", "--json", "--lab-dir", &lab.status.dir]);
    assert!(status.status.success(), "lab status failed");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_valid(
        &schema("lab-status.schema.json"),
        &status,
        "lab status --json",
    );
    assert_eq!(status["limits"]["cpus"], 0.5);
    let out = tempfile::tempdir().unwrap();
    let profile = out.path().join("tiny.toml");
    std::fs::write(&profile, TINY_PROFILE).unwrap();
    let profile = profile.to_str().unwrap();
    let common = [
        "--profile",
        profile,
        "--lab-dir",
        &lab.status.dir,
        "--users",
        "20",
    ];
    assert!(
        peakhour(&[&["init"], &common[..]].concat())
            .status
            .success()
    );
    let run_dir = out.path().join("run");
    // 20 users at speed 40,000: ~3,300 actions/s asked for; half a core
    // serves well under that (measured: 336/s took 23% of a core on a busy
    // host, 1,130/s took 37% on a quiet one, which then never throttled).
    let run: Vec<&str> = [
        &["run"],
        &common[..],
        &[
            "--speed",
            "40000",
            "--duration",
            "12s",
            "--ramp-up",
            "2s",
            "--drain",
            "2s",
            "--out",
            run_dir.to_str().unwrap(),
        ],
    ]
    .concat();
    peakhour(&run);
    let summary = read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["limits"]["cpus"], 0.5);
    let csv = std::fs::read_to_string(run_dir.join("monitor.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (time, cpu, throttled, dovecot) = (
        col("time_s"),
        col("lab_cpu_pct"),
        col("lab_cpu_throttled_pct"),
        col("group_dovecot_cpu_pct"),
    );
    let rows: Vec<(f64, f64, f64, f64)> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter_map(|c| {
            Some((
                c[time].parse().ok()?,
                c[cpu].parse().ok()?,
                c[throttled].parse().unwrap_or(0.0),
                c[dovecot].parse().unwrap_or(0.0),
            ))
        })
        .filter(|r| r.0 > 3.0 && r.0 <= 14.0)
        .collect();
    assert!(rows.len() >= 8, "{rows:?}");
    let mean = rows.iter().map(|r| r.1).sum::<f64>() / rows.len() as f64;
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let dovecot_max = rows.iter().map(|r| r.3).fold(0.0, f64::max);
    // Held to half a core (a sample may straddle two CFS periods: allow 20%),
    // the lab as a whole and Dovecot's processes by their own counters.
    assert!(max <= 60.0, "lab CPU reached {max}% of a core: {rows:?}");
    assert!(
        dovecot_max <= 60.0,
        "Dovecot reached {dovecot_max}% of a core: {rows:?}"
    );
    // And the load really wanted more: the servers ran near the cap, throttled.
    assert!(
        mean >= 30.0,
        "lab CPU averaged only {mean}% of a core: {rows:?}"
    );
    assert!(rows.iter().any(|r| r.2 > 0.0), "never throttled: {rows:?}");
}
