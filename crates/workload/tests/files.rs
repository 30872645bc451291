//! File profiles, the built-in NetBench disk mix and the per-client scripts.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use peakhour_workload::files::{
    Cleanup, FileOp, FileOverrides, FilePlan, FileProfile, Phase, ScriptOp, Work, file_builtin,
    file_builtins,
};
use peakhour_workload::{PlanError, ProfileError};

fn netbench() -> FileProfile {
    file_builtin("netbench-disk-mix")
        .and_then(|b| Ok(b.profile()?))
        .expect("netbench-disk-mix parses")
}

fn plan(profile: &FileProfile, clients: u32, seed: u64) -> FilePlan {
    FilePlan::resolve(
        profile,
        &FileOverrides {
            clients: Some(clients),
            seed: Some(seed),
            ..FileOverrides::default()
        },
    )
    .expect("resolves")
}

const MINIMAL: &str = r#"
name = "tiny"
description = "one read"
[[script]]
op = "read"
weight = 1
size = "4KB"
"#;

#[test]
fn builtin_is_listed_and_parses() {
    let names: Vec<_> = file_builtins().iter().map(|b| b.name).collect();
    assert_eq!(names, ["netbench-disk-mix", "netbench-disk-mix-short"]);
    let p = netbench();
    assert_eq!(p.name, "netbench-disk-mix");
    assert_eq!(p.description, file_builtins()[0].description);
    assert!(matches!(
        file_builtin("nope"),
        Err(PlanError::UnknownBuiltin(_))
    ));
}

#[test]
fn issue_31_item_3_the_short_disk_mix_runs_the_same_script_in_about_a_minute() {
    let full = netbench();
    let short = file_builtin("netbench-disk-mix-short")
        .unwrap()
        .profile()
        .unwrap();
    // The same operations with the same weights and sizes: only the length differs.
    let script = |p: &FileProfile| {
        let text = p.to_toml().unwrap();
        text[text.find("[[script]]").unwrap()..].to_owned()
    };
    assert_eq!(script(&short), script(&full));
    assert_eq!(
        short.client.think_time.get_ref(),
        full.client.think_time.get_ref()
    );
    // 5 s of start delay and 5 iterations of 30 pieces of work after 2 s of thought.
    assert_eq!(
        full.least_length(),
        std::time::Duration::from_secs(5 + 5 * 30 * 2)
    );
    assert_eq!(
        short.least_length(),
        std::time::Duration::from_secs(1 + 3 * 10 * 2)
    );
}

#[test]
fn netbench_disk_mix_has_seed_004_parameters() {
    let p = netbench();
    let plan = FilePlan::resolve(&p, &FileOverrides::default()).expect("resolves");
    // seed 004, "NetBench Test Suite Configuration Parameters".
    assert_eq!(
        plan.iterations(),
        (1, 3, 1),
        "ramp up 1, length 3, ramp down 1"
    );
    assert_eq!(plan.think_time(), Duration::from_secs(2));
    assert_eq!(p.client.start_delay.get_ref().0, Duration::from_secs(5));
    assert_eq!(p.workspace.size.get_ref().0, 20 * 1024 * 1024);
    assert_eq!(p.workspace.cleanup, Cleanup::LastMix);
    assert!(plan.cleans_up(true) && !plan.cleans_up(false));
    assert_eq!(plan.clients(), 1, "mix 1 uses 1 system");
    let files = plan.workspace_files(1);
    assert_eq!(files.len(), 20);
    assert_eq!(files.iter().map(|f| f.1).sum::<u64>(), 20 * 1024 * 1024);
    // Every operation the issue names is in the script.
    let ops: std::collections::BTreeSet<ScriptOp> =
        plan.script_steps().iter().map(|s| s.op).collect();
    assert_eq!(ops.len(), 14, "{ops:?}");
}

#[test]
fn netbench_disk_mix_calibration_matches_seed_004_one_client_throughput() {
    // The profile says a piece of work moves about 960 KB, i.e. 480 KB/s with the 2 s
    // think time (seed 004: 480,154 bytes/s for one client). Check what the script draws.
    let p = netbench();
    let plan = plan(&p, 1, 42);
    let works: Vec<Work> = plan.script(1).collect();
    assert_eq!(works.len(), 5 * 30);
    let bytes: u64 = works
        .iter()
        .flat_map(|w| &w.ops)
        .map(FileOp::data_bytes)
        .sum();
    let per_work = bytes as f64 / works.len() as f64;
    let per_second = per_work / 2.0;
    assert!(
        (400_000.0..560_000.0).contains(&per_second),
        "{per_second:.0} bytes/s per client"
    );
}

#[test]
fn absent_fields_take_seed_004_defaults() {
    let p = FileProfile::parse("tiny.toml", MINIMAL).expect("parses");
    let plan = FilePlan::resolve(&p, &FileOverrides::default()).expect("resolves");
    assert_eq!(plan.iterations(), (1, 3, 1));
    assert_eq!(plan.think_time(), Duration::from_secs(2));
    assert_eq!(p.client.start_delay.get_ref().0, Duration::from_secs(5));
    assert_eq!(p.workspace.size.get_ref().0, 20 * 1024 * 1024);
    assert_eq!(plan.workspace_dir(3), "clients/client3");
    assert_eq!(plan.shared_dirs(), ["clients"]);
    assert_eq!(plan.seed(), peakhour_workload::DEFAULT_SEED);
}

#[test]
fn profile_round_trips_through_toml() {
    let p = netbench();
    let text = p.to_toml().expect("serializes");
    let again = FileProfile::parse("again.toml", &text).expect("reparses");
    let a = FilePlan::resolve(&p, &FileOverrides::default()).expect("resolves");
    let b = FilePlan::resolve(&again, &FileOverrides::default()).expect("resolves");
    assert_eq!(a, b);
}

fn error(text: &str) -> ProfileError {
    FileProfile::parse("bad.toml", text).expect_err("must fail")
}

#[test]
fn errors_name_line_and_field() {
    let e = error(&format!("{MINIMAL}\n[client]\nthink = \"2s\"\n"));
    assert_eq!(e.field(), "client.think");
    assert_eq!(e.line_column().map(|l| l.0), Some(10));

    let e = error(&MINIMAL.replace("size = \"4KB\"\n", ""));
    assert_eq!(e.field(), "script[0].size");
    assert!(e.to_string().contains("needs a size"), "{e}");
    assert_eq!(e.line_column().map(|l| l.0), Some(6), "points at the entry");

    let e = error(&MINIMAL.replace("op = \"read\"", "op = \"close\""));
    assert_eq!(e.field(), "script[0].size");
    assert!(e.to_string().contains("takes no size"), "{e}");

    let e = error(&MINIMAL.replace("weight = 1", "weight = 0"));
    assert_eq!(e.field(), "script");
    assert!(e.to_string().contains("sum to zero"), "{e}");

    let e = error(&MINIMAL.replace("weight = 1", "weight = -2"));
    assert_eq!(e.field(), "script[0].weight");
    assert_eq!(e.line_column(), Some((6, 10)));

    let e = error(&MINIMAL.replace("op = \"read\"", "op = \"teleport\""));
    assert_eq!(e.field(), "script[0].op");
    assert_eq!(e.line_column().map(|l| l.0), Some(5));

    let e = error(&MINIMAL.replace("\"4KB\"", "\"2MB\""));
    assert_eq!(e.field(), "script[0].size");

    let e = error(&format!("{MINIMAL}\n[workspace]\ndirectory = \"shared\"\n"));
    assert_eq!(e.field(), "workspace.directory");
    assert!(e.to_string().contains("{n}"), "{e}");

    let e = error(&format!(
        "{MINIMAL}\n[workspace]\ndirectory = \"../c{{n}}\"\n"
    ));
    assert_eq!(e.field(), "workspace.directory");

    let e = error(&format!("{MINIMAL}\n[iterations]\nmeasured = 0\n"));
    assert_eq!(e.field(), "iterations.measured");

    let e = error(&format!("{MINIMAL}\n[workspace]\nsize = 3\nfiles = 4\n"));
    assert_eq!(e.field(), "workspace.size");

    let e = error(&format!("{MINIMAL}\n[client]\nthink_time = \"2 days\"\n"));
    assert_eq!(e.field(), "client.think_time");
    assert!(e.to_string().starts_with("bad.toml:10:"), "{e}");
}

#[test]
fn zero_clients_is_an_override_error() {
    let p = netbench();
    let r = FilePlan::resolve(
        &p,
        &FileOverrides {
            clients: Some(0),
            seed: None,
            ..FileOverrides::default()
        },
    );
    assert!(matches!(
        r,
        Err(PlanError::Override {
            option: "users",
            ..
        })
    ));
}

#[test]
fn scripts_are_deterministic_per_client() {
    let p = netbench();
    let small = plan(&p, 8, 7);
    let large = plan(&p, 72, 7);
    let a: Vec<Work> = small.script(7).take(40).collect();
    let b: Vec<Work> = large.script(7).take(40).collect();
    assert_eq!(a, b, "client 7 does not depend on how many clients run");
    assert_eq!(small.start_delay(7), large.start_delay(7));
    let other_seed: Vec<Work> = plan(&p, 8, 8).script(7).take(40).collect();
    assert_ne!(a, other_seed);
    let other_client: Vec<Work> = small.script(6).take(40).collect();
    assert_ne!(a[0].ops.len() + a[1].ops.len(), 0);
    assert_ne!(
        a.iter().map(|w| w.ops.len()).collect::<Vec<_>>(),
        other_client.iter().map(|w| w.ops.len()).collect::<Vec<_>>()
    );
}

#[test]
fn start_delays_stay_within_five_seconds_and_spread() {
    let plan = plan(&netbench(), 72, 1);
    let delays: Vec<Duration> = (1..=72).map(|c| plan.start_delay(c)).collect();
    assert!(delays.iter().all(|d| *d <= Duration::from_secs(5)));
    let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
    assert!(distinct.len() > 60, "staggered: {distinct:?}");
    let mean = delays.iter().map(Duration::as_secs_f64).sum::<f64>() / 72.0;
    assert!(
        (1.5..3.5).contains(&mean),
        "uniform over 0..5 s: mean {mean}"
    );
}

#[test]
fn phases_and_think_times_follow_the_iterations() {
    let text = format!(
        "{MINIMAL}\n[client]\nwork_per_iteration = 2\nthink_time = \"1s\"\n\
         [iterations]\nramp_up = 1\nmeasured = 2\nramp_down = 1\n"
    );
    let p = FileProfile::parse("t.toml", &text).expect("parses");
    let plan = plan(&p, 1, 1);
    let works: Vec<Work> = plan.script(1).collect();
    let shape: Vec<(Phase, u32, u32)> = works
        .iter()
        .map(|w| (w.phase, w.iteration, w.index))
        .collect();
    use Phase::*;
    assert_eq!(
        shape,
        [
            (RampUp, 0, 0),
            (RampUp, 0, 1),
            (Measured, 1, 0),
            (Measured, 1, 1),
            (Measured, 2, 0),
            (Measured, 2, 1),
            (RampDown, 3, 0),
            (RampDown, 3, 1),
        ]
    );
    assert_eq!(
        works[0].think,
        Duration::ZERO,
        "the start delay comes first"
    );
    assert!(works[1..].iter().all(|w| w.think == Duration::from_secs(1)));
}

/// Replays a client's setup, script and cleanup on a model of its files, and fails on
/// any operation a real file system would refuse.
#[derive(Default)]
struct Model {
    dirs: std::collections::BTreeSet<String>,
    files: BTreeMap<String, u64>,
    open: HashMap<u32, String>,
}

impl Model {
    fn apply(&mut self, op: &FileOp, workspace: &str) {
        let inside = |p: &str| {
            assert!(
                p == workspace || p.starts_with(&format!("{workspace}/")),
                "{op} outside {workspace}"
            )
        };
        match op {
            FileOp::MakeDir { path } => {
                inside(path);
                assert!(self.dirs.insert(path.clone()), "{op}: exists");
            }
            FileOp::RemoveDir { path } => {
                assert!(
                    !self.files.keys().any(|f| f.starts_with(path.as_str())),
                    "{op}: not empty"
                );
                assert!(self.dirs.remove(path), "{op}: missing");
            }
            FileOp::Create { handle, path } => {
                inside(path);
                self.files.insert(path.clone(), 0);
                assert!(self.open.insert(*handle, path.clone()).is_none(), "{op}");
            }
            FileOp::Open { handle, path } => {
                assert!(self.files.contains_key(path), "{op}: missing");
                assert!(self.open.insert(*handle, path.clone()).is_none(), "{op}");
            }
            FileOp::Read {
                handle,
                offset,
                len,
            } => {
                let size = self.files[&self.open[handle]];
                assert!(
                    *len > 0 && offset + u64::from(*len) <= size,
                    "{op}: size {size}"
                );
            }
            FileOp::Write {
                handle,
                offset,
                len,
            } => {
                let path = &self.open[handle];
                let size = self.files.get_mut(path).expect("open file exists");
                *size = (*size).max(offset + u64::from(*len));
                assert!(*size <= 1024 * 1024, "{op}: grows past 1 MB");
            }
            FileOp::Seek { handle, offset } => {
                assert!(*offset <= self.files[&self.open[handle]], "{op}");
            }
            FileOp::SetAttributes { handle }
            | FileOp::Flush { handle }
            | FileOp::Lock { handle, .. }
            | FileOp::Unlock { handle, .. } => {
                assert!(self.open.contains_key(handle), "{op}: not open");
            }
            FileOp::Close { handle } => {
                assert!(self.open.remove(handle).is_some(), "{op}: not open");
            }
            FileOp::Delete { path } => {
                assert!(!self.open.values().any(|p| p == path), "{op}: open");
                assert!(self.files.remove(path).is_some(), "{op}: missing");
            }
            FileOp::Rename { from, to } => {
                inside(to);
                assert!(!self.files.contains_key(to), "{op}: target exists");
                let size = self.files.remove(from).expect("rename source exists");
                self.files.insert(to.clone(), size);
            }
            FileOp::List { dir } => assert!(self.dirs.contains(dir), "{op}"),
            FileOp::GetAttributes { path } => assert!(self.files.contains_key(path), "{op}"),
            FileOp::FsInfo => {}
        }
    }
}

#[test]
fn every_operation_is_runnable_and_cleanup_leaves_nothing() {
    let plan = plan(&netbench(), 3, 99);
    for client in 1..=3 {
        let dir = plan.workspace_dir(client);
        let mut model = Model::default();
        for op in plan.setup(client) {
            model.apply(&op, &dir);
        }
        assert_eq!(model.files.len(), 20);
        assert!(model.open.is_empty());
        let mut script = plan.script(client);
        let mut last_iteration = 0;
        for work in script.by_ref() {
            if work.iteration != last_iteration {
                assert!(model.open.is_empty(), "an iteration leaves nothing open");
                last_iteration = work.iteration;
            }
            for op in &work.ops {
                model.apply(op, &dir);
            }
        }
        assert!(model.open.is_empty());
        assert!(model.files.len() <= 20 + 8, "at most 8 scratch files");
        for op in script.cleanup() {
            model.apply(&op, &dir);
        }
        assert!(model.files.is_empty(), "{:?}", model.files);
        assert!(model.dirs.is_empty());
    }
}

#[test]
fn the_drawn_mix_follows_the_weights() {
    let plan = plan(&netbench(), 1, 5);
    let steps = plan.script_steps();
    let total_weight: u64 = steps.iter().map(|s| s.weight).sum();
    let draws = u64::from(plan.operations_per_work() * plan.work_per_iteration() * 5);
    let expected = |op: ScriptOp| {
        let w: u64 = steps.iter().filter(|s| s.op == op).map(|s| s.weight).sum();
        (w * draws) as f64 / total_weight as f64
    };
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for work in plan.script(1) {
        for op in &work.ops {
            *counts.entry(op.name()).or_default() += 1;
        }
    }
    let ratio = |name: &str, op: ScriptOp| counts[name] as f64 / expected(op);
    // Operations on an open file, and path operations, are exactly as drawn.
    for (name, op) in [
        ("read", ScriptOp::Read),
        ("write", ScriptOp::Write),
        ("seek", ScriptOp::Seek),
        ("get_attributes", ScriptOp::GetAttributes),
        ("list", ScriptOp::List),
        ("fs_info", ScriptOp::FsInfo),
    ] {
        let r = ratio(name, op);
        assert!(
            (0.95..1.05).contains(&r),
            "{name}: {r:.3} of the weight, {counts:?}"
        );
    }
    // Opening a file for an operation that finds none open adds sessions; paying them back
    // against later opens keeps them within a third of the trace's.
    let sessions = (counts["open"] + counts["create"]) as f64
        / (expected(ScriptOp::Open) + expected(ScriptOp::Create));
    assert!((1.0..1.33).contains(&sessions), "{sessions:.3}, {counts:?}");
    assert_eq!(counts["lock"], counts["unlock"]);
    assert_eq!(
        counts["close"],
        counts["open"] + counts["create"],
        "every file opened is closed"
    );
}

#[test]
fn setup_writes_each_file_in_full() {
    let plan = plan(&netbench(), 1, 1);
    let written: u64 = plan.setup(1).iter().map(FileOp::data_bytes).sum();
    assert_eq!(written, 20 * 1024 * 1024);
}

/// The command line shortens a mix for tests and trials (issue 15).
#[test]
fn overrides_shorten_the_mix() {
    let p = netbench();
    let plan = FilePlan::resolve(
        &p,
        &FileOverrides {
            clients: Some(3),
            think_time: Some(std::time::Duration::from_millis(20)),
            start_delay: Some(std::time::Duration::ZERO),
            workspace_size: Some(40),
            ramp_up: Some(0),
            measured: Some(1),
            ramp_down: Some(0),
            work_per_iteration: Some(2),
            ..FileOverrides::default()
        },
    )
    .expect("resolves");
    assert_eq!(plan.iterations(), (0, 1, 0));
    assert_eq!(plan.think_time(), std::time::Duration::from_millis(20));
    assert_eq!(plan.start_delay(3), std::time::Duration::ZERO);
    assert_eq!(plan.workspace_size(), 40);
    assert_eq!(plan.workspace_files(1).iter().map(|f| f.1).sum::<u64>(), 40);
    assert_eq!(plan.script(1).count(), 2);
    for bad in [
        FileOverrides {
            measured: Some(0),
            ..FileOverrides::default()
        },
        FileOverrides {
            workspace_size: Some(19),
            ..FileOverrides::default()
        },
    ] {
        assert!(FilePlan::resolve(&p, &bad).is_err(), "{bad:?}");
    }
}
