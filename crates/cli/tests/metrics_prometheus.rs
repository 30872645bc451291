//! `peakhour run --metrics-listen` scraped by a real Prometheus (Debian's
//! `prometheus` package, scripts/setup.sh): a private Prometheus on a free
//! loopback port scrapes the run every second, and its HTTP API then answers
//! with the run's own counters, equal to what `summary.json` reports.
//!
//! The exporter listens on port 0; the test learns the port from the run's
//! announcement and hands it to Prometheus through a file_sd target file,
//! so no port is guessed free and then taken by someone else.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly by design

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{PEAKHOUR, peakhour, start_lab};
use serde_json::Value;

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A private Prometheus, stopped (SIGTERM, then SIGKILL) when dropped.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    /// Starts Prometheus with `config` and storage in `dir`, on a free
    /// loopback port, and waits until it is ready.
    fn start(dir: &Path, config: &Path) -> Self {
        for _attempt in 0..3 {
            let port = free_port();
            let child = Command::new(PROMETHEUS)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("prometheus starts (scripts/setup.sh installs Debian's package)");
            let mut prometheus = Prometheus { child, port };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if prometheus.child.try_wait().unwrap().is_some() {
                    break; // the port was taken after all: try another
                }
                if http_get(port, "/-/ready").is_some_and(|(status, _)| status == 200) {
                    return prometheus;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        panic!("prometheus did not become ready");
    }

    /// The result vector of an instant query, as (labels, value) pairs.
    fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let (status, body) = http_get(self.port, &path).expect("prometheus answers");
        assert_eq!(status, 200, "{promql}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["status"], "success", "{promql}: {body}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }

    /// The single value of `promql`, if the result has one series.
    fn scalar(&self, promql: &str) -> Option<f64> {
        match self.query(promql).as_slice() {
            [(_, value)] => Some(*value),
            _ => None,
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A GET over HTTP/1.0 (no chunked answer), its status and body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Starts `peakhour ARGS` with its stderr read line by line: the address of
/// its metrics comes out of `address` once announced, and every line is
/// echoed into the test's log.
fn spawn_run(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(PEAKHOUR)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (address, announced) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("peakhour: {line}");
            if let Some(rest) = line.strip_prefix("live metrics at http://") {
                let _ = address.send(rest.split('/').next().unwrap_or("").to_owned());
            }
        }
    });
    (child, announced)
}

/// Waits for the run to end, at most `limit`; kills it (by its PID) past that.
fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Polls `read` until it returns `want`, at most `limit`; the last value read.
fn eventually(limit: Duration, want: f64, read: impl Fn() -> Option<f64>) -> Option<f64> {
    let deadline = Instant::now() + limit;
    loop {
        let value = read();
        if value == Some(want) || Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn prometheus_scrapes_a_run_and_its_counters_equal_the_summary() {
    let (_lab_dir, lab) = start_lab(6);
    let lab_dir = lab.status.dir.clone();
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success());

    let work = tempfile::tempdir().unwrap();
    let targets = work.path().join("targets.json");
    std::fs::write(&targets, "[]").unwrap();
    let config = work.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: peakhour\n    file_sd_configs:\n      \
             - files: ['{}']\n        refresh_interval: 1s\n",
            targets.display()
        ),
    )
    .unwrap();
    let prometheus = Prometheus::start(work.path(), &config);

    let run_dir = work.path().join("run");
    let (mut run, announced) = spawn_run(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        &lab_dir,
        "--speed",
        "600",
        "--ramp-up",
        "3s",
        "--duration",
        "12s",
        "--drain",
        "5s",
        "--interval",
        "3s",
        "--seed",
        "17",
        "--metrics-listen",
        "127.0.0.1:0",
        // Several scrapes a second apart see the final figures.
        "--metrics-linger",
        "5s",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let address = announced
        .recv_timeout(Duration::from_secs(60))
        .expect("the run announces where its metrics are");
    // Written whole and renamed into place: Prometheus watches the file and
    // would read a half-written one.
    let staged = work.path().join("targets.json.new");
    std::fs::write(&staged, format!("[{{\"targets\": [\"{address}\"]}}]")).unwrap();
    std::fs::rename(&staged, &targets).unwrap();
    let status = wait_bounded(&mut run, Duration::from_secs(180));
    assert!(status.success(), "the run failed: {status}");

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    served_figures_equal_the_summary(&prometheus, &summary);

    // Every query of the Grafana dashboard is PromQL this Prometheus accepts
    // (the metrics crate's tests check that it names only served series).
    for expr in dashboard_queries() {
        let expr = expr
            .replace("$__rate_interval", "1m")
            .replace("$instance", ".*");
        prometheus.query(&expr);
    }
    drop(prometheus);
}

/// What Prometheus scraped from the run against what the run wrote: the
/// steady phase's actions (in all and by action) and errors exactly, the
/// users and phases seen while it ran, and the run's identity.
fn served_figures_equal_the_summary(prometheus: &Prometheus, summary: &Value) {
    let actions = summary["actions"].as_object().unwrap();
    let steady_ok: u64 = actions.values().map(|a| a["count"].as_u64().unwrap()).sum();
    let steady_errors: u64 = actions
        .values()
        .map(|a| a["errors"].as_u64().unwrap())
        .sum();
    assert!(steady_ok > 0, "the run measured no actions");

    // The exporter has stopped, so its series are marked stale: ask for
    // the last value each had (range selectors skip staleness markers).
    let last = |selector: &str| format!("sum(last_over_time({selector}[10m]))");
    let ok_query = last("peakhour_actions_total{phase=\"steady\",outcome=\"ok\"}");
    let served = eventually(Duration::from_secs(20), steady_ok as f64, || {
        prometheus.scalar(&ok_query)
    });
    assert_eq!(
        served,
        Some(steady_ok as f64),
        "Prometheus's {ok_query} against summary.json's steady actions"
    );
    // Action by action, too.
    let by_action = prometheus.query(
        "sum by (action) (last_over_time(peakhour_actions_total{phase=\"steady\",outcome=\"ok\"}[10m]))",
    );
    let served_by_action: std::collections::BTreeMap<&str, u64> = by_action
        .iter()
        .map(|(labels, value)| (labels["action"].as_str().unwrap(), *value as u64))
        .filter(|(_, count)| *count > 0)
        .collect();
    let summary_by_action: std::collections::BTreeMap<&str, u64> = actions
        .iter()
        .map(|(action, a)| (action.as_str(), a["count"].as_u64().unwrap()))
        .filter(|(_, count)| *count > 0)
        .collect();
    assert_eq!(
        served_by_action, summary_by_action,
        "steady actions by action"
    );
    let errors = prometheus
        .scalar(&last("peakhour_errors_total{phase=\"steady\"}"))
        .unwrap_or(0.0);
    assert_eq!(errors, steady_errors as f64, "steady errors");

    // It was scraped while the run went on, not only at the end.
    let logged_on = prometheus.scalar("max(max_over_time(peakhour_users_logged_on[10m]))");
    assert_eq!(logged_on, Some(6.0), "every user was seen logged on");
    let steady_seen =
        prometheus.scalar("max(max_over_time(peakhour_phase{peakhour_phase=\"steady\"}[10m]))");
    assert_eq!(steady_seen, Some(1.0), "a scrape fell in the steady phase");
    let finished = prometheus.scalar(&last("peakhour_phase{peakhour_phase=\"finished\"}"));
    assert_eq!(finished, Some(1.0), "the last scrape saw the run finished");
    let run_id = summary["run_id"].as_str().unwrap();
    let info = prometheus.query(&format!(
        "last_over_time(peakhour_run_info{{run_id=\"{run_id}\"}}[10m])"
    ));
    assert_eq!(info.len(), 1, "the run's identity: {info:?}");
    assert_eq!(info[0].0["seed"], "17");
    assert_eq!(info[0].0["shard"], "1/1");
    // The latency histogram counts at least the steady phase's successful actions.
    let histogram_count = prometheus
        .scalar(&last("peakhour_action_latency_seconds_count"))
        .unwrap();
    assert!(
        histogram_count >= steady_ok as f64,
        "{histogram_count} < {steady_ok}"
    );
}

/// The `expr` of every panel target of docs/grafana/peakhour.json.
fn dashboard_queries() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/peakhour.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let queries: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().unwrap().clone())
        .map(|target| target["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(queries.len() >= 10, "{queries:?}");
    queries
}
