//! The search's orchestration against a simulated server (no process, no
//! socket): each step's summary is a real run's summary.json with its
//! weighted p95 set by a server that holds QoS up to a known number of
//! users. Checks the bracket, the morning confirmed at the answer, and a
//! resume after an interruption that repeats no finished step (issue 25, item 4).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use clap::Parser as _;
use peakhour_analysis::{QosFailure, Summary, Verdict};
use peakhour_capacity::{CapacityError, StepRequest, Steps};
use peakhour_command_line::args::{CapacityArgs, Cli, Command};

/// A server that holds QoS up to `capacity` users in the peak hour and up
/// to `morning` users in the morning.
struct SimulatedServer {
    capacity: u32,
    morning: u32,
    /// Steps asked for, in order.
    asked: Vec<(u32, String)>,
    /// Stop (as a signal would) when this many steps were asked for.
    interrupt_at: Option<usize>,
    interrupted: bool,
    /// A lab whose servers die (an OOM kill) in every step above this many
    /// users; `None`: no lab.
    lab_dies_above: Option<u32>,
    /// Its servers are dead now.
    lab_down: bool,
    /// The users of the steps after which it was restarted.
    restarted_after: Vec<u32>,
}

impl SimulatedServer {
    fn new(capacity: u32, morning: u32) -> Self {
        Self {
            capacity,
            morning,
            asked: Vec::new(),
            interrupt_at: None,
            interrupted: false,
            lab_dies_above: None,
            lab_down: false,
            restarted_after: Vec::new(),
        }
    }
}

fn fixture() -> Summary {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../report/tests/fixtures/run-small/summary.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

impl Steps for SimulatedServer {
    fn run_step(&mut self, step: &StepRequest) -> Result<Option<Summary>, CapacityError> {
        self.asked.push((step.users, step.window.to_string()));
        if self.interrupt_at == Some(self.asked.len()) {
            self.interrupted = true;
            return Ok(None);
        }
        if self.lab_down {
            // What the run's preflight does against a dead lab.
            return Err(CapacityError::StepWithoutResults {
                users: step.users,
                window: step.window.to_string(),
                code: Some(1),
            });
        }
        if self.lab_dies_above.is_some_and(|n| step.users > n) {
            self.lab_down = true;
        }
        let limit = if step.window == peakhour_workload::Window::Morning {
            self.morning
        } else {
            self.capacity
        };
        let mut s = fixture();
        s.users = step.users;
        s.meta.qos.p95_ms.clear();
        // The weighted p95 crosses 1000 ms at the server's limit.
        let p95 = 1000.0 * f64::from(step.users) / f64::from(limit);
        s.score.weighted_p95_ms = Some((p95 * 1000.0).round() / 1000.0);
        if p95 > 1000.0 {
            s.verdict = Verdict::Fail;
            s.qos.failures.push(QosFailure {
                subject: "score".into(),
                reason: format!("weighted p95 {p95} ms is above the 1000 ms limit"),
            });
        }
        std::fs::create_dir_all(&step.out).unwrap();
        std::fs::write(
            step.out.join("summary.json"),
            serde_json::to_string(&s).unwrap(),
        )
        .unwrap();
        Ok(Some(s))
    }

    fn init(&mut self, _users: u32, _seed: u64) -> Result<(), CapacityError> {
        Ok(())
    }

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn lab_problems(&mut self) -> Result<Option<Vec<String>>, CapacityError> {
        Ok(self.lab_dies_above.map(|_| {
            if self.lab_down {
                vec!["dovecot is not running".to_owned()]
            } else {
                Vec::new()
            }
        }))
    }

    fn restart_lab(&mut self) -> Result<(), CapacityError> {
        self.lab_down = false;
        let last = self.asked.last().map_or(0, |s| s.0);
        self.restarted_after.push(last);
        Ok(())
    }
}

fn args(out: &Path, users_file: &Path) -> CapacityArgs {
    let cli = Cli::try_parse_from([
        "peakhour",
        "capacity",
        "--target",
        "explicit",
        "--imap",
        "imap://127.0.0.1:1",
        "--smtp",
        "smtp://127.0.0.1:1",
        "--users-file",
        users_file.to_str().unwrap(),
        "--first-users",
        "50",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    match cli.command {
        Command::Capacity(a) => a,
        other => panic!("{other:?}"),
    }
}

fn users_file(dir: &Path, n: u32) -> std::path::PathBuf {
    let path = dir.join("users.csv");
    let lines: Vec<String> = (1..=n).map(|i| format!("user{i},secret{i}")).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn answer(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("answer.json")).unwrap()).unwrap()
}

#[test]
fn issue_25_item_4_the_search_brackets_the_simulated_capacity_and_confirms_the_morning() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let args = args(&out, &users_file(dir.path(), 5000));
    let mut server = SimulatedServer::new(300, 1000);
    assert_eq!(peakhour_capacity::run(&args, &mut server).unwrap(), 0);
    let a = answer(&out);
    let (low, high) = (
        a["users_low"].as_u64().unwrap(),
        a["users_high"].as_u64().unwrap(),
    );
    assert!(low <= 300 && 300 < high, "{a:#}");
    assert!((high - low) as f64 <= 0.1 * low as f64, "{a:#}");
    assert_eq!(a["complete"], true);
    assert_eq!(a["window"], "peak-hour");
    // The morning ran at the answer only.
    let mornings: Vec<u32> = server
        .asked
        .iter()
        .filter(|(_, w)| w == "morning")
        .map(|(u, _)| *u)
        .collect();
    assert_eq!(mornings, vec![u32::try_from(low).unwrap()]);
}

#[test]
fn issue_25_item_4_a_morning_that_fails_at_the_candidate_lowers_the_answer_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let args = args(&out, &users_file(dir.path(), 5000));
    let mut server = SimulatedServer::new(300, 200);
    assert_eq!(peakhour_capacity::run(&args, &mut server).unwrap(), 0);
    let a = answer(&out);
    let low = a["users_low"].as_u64().unwrap();
    assert!(low <= 200 && low as f64 >= 0.9 * 200.0, "{a:#}");
    assert_eq!(a["window"], "morning", "{a:#}");
}

#[test]
fn issue_25_item_4_a_users_file_too_small_for_the_next_step_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let args = args(&out, &users_file(dir.path(), 120));
    let mut server = SimulatedServer::new(1000, 1000);
    assert_eq!(peakhour_capacity::run(&args, &mut server).unwrap(), 0);
    let a = answer(&out);
    assert_eq!(a["users_low"], 120);
    assert!(a["users_high"].is_null());
    assert!(
        a["ended"]
            .as_str()
            .unwrap()
            .contains("the next step would be"),
        "{a:#}"
    );
}

#[test]
fn issue_25_item_4_an_interrupted_search_resumes_without_repeating_a_finished_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let args = args(&out, &users_file(dir.path(), 5000));
    let mut first = SimulatedServer::new(300, 1000);
    first.interrupt_at = Some(3);
    assert_eq!(peakhour_capacity::run(&args, &mut first).unwrap(), 130);
    let finished: Vec<(u32, String)> = first.asked[..2].to_vec();

    let mut second = SimulatedServer::new(300, 1000);
    assert_eq!(peakhour_capacity::run(&args, &mut second).unwrap(), 0);
    for step in &finished {
        assert!(
            !second.asked.contains(step),
            "{step:?} ran again: {:?}",
            second.asked
        );
    }
    // The interrupted step is measured again, in a new directory.
    assert_eq!(second.asked[0], first.asked[2]);
    let a = answer(&out);
    let steps = a["steps"].as_array().unwrap();
    assert_eq!(steps.len(), finished.len() + second.asked.len());

    // Other settings in the same directory are refused as bad usage.
    let other = Cli::try_parse_from([
        "peakhour",
        "capacity",
        "--target",
        "explicit",
        "--imap",
        "imap://127.0.0.1:1",
        "--smtp",
        "smtp://127.0.0.1:1",
        "--users-file",
        dir.path().join("users.csv").to_str().unwrap(),
        "--seed",
        "9",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let Command::Capacity(other) = other.command else {
        panic!()
    };
    assert_eq!(
        peakhour_capacity::run(&other, &mut SimulatedServer::new(300, 1000)).unwrap(),
        peakhour_capacity::EXIT_USAGE
    );
}

/// Issue 25 (a bracket 25% wide): a shaped lab's OOM killed Dovecot in the
/// step that failed, the next step was refused by the run's preflight, and
/// the search stopped. Now a failed step on an unhealthy lab restarts it,
/// and the search bisects on to the precision asked for.
#[test]
fn issue_25_a_lab_left_unhealthy_by_a_failed_step_is_restarted_and_the_bisection_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let args = args(&out, &users_file(dir.path(), 5000));
    let mut server = SimulatedServer::new(300, 1000);
    server.lab_dies_above = Some(300);
    assert_eq!(peakhour_capacity::run(&args, &mut server).unwrap(), 0);
    let a = answer(&out);
    let (low, high) = (
        a["users_low"].as_u64().unwrap(),
        a["users_high"].as_u64().unwrap(),
    );
    assert!(low <= 300 && 300 < high, "{a:#}");
    assert!((high - low) as f64 <= 0.1 * low as f64, "{a:#}");
    assert_eq!(a["complete"], true, "{a:#}");
    let steps = a["steps"].as_array().unwrap();
    let restarted: Vec<u64> = steps
        .iter()
        .filter(|s| s["lab_restarted"] == true)
        .map(|s| s["users"].as_u64().unwrap())
        .collect();
    let killed: Vec<u64> = steps
        .iter()
        .filter(|s| s["users"].as_u64().unwrap() > 300)
        .map(|s| s["users"].as_u64().unwrap())
        .collect();
    assert!(!killed.is_empty());
    assert_eq!(restarted, killed, "{a:#}");
    assert_eq!(
        server.restarted_after,
        killed
            .iter()
            .map(|&u| u32::try_from(u).unwrap())
            .collect::<Vec<_>>()
    );
    for s in steps.iter().filter(|s| s["lab_restarted"] == true) {
        assert_eq!(s["lab_unhealthy"], "dovecot is not running");
    }
    for s in steps.iter().filter(|s| s["lab_restarted"] == false) {
        assert!(s["lab_unhealthy"].is_null());
    }
}
