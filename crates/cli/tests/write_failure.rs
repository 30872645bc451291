//! Issue 26, item 9: a run whose disk fills up. Its run directory is on a
//! small tmpfs that the test fills while the run measures (root only, as
//! the lab tests). The run must print what it measured, say that its
//! results were not written, and say each error once; a later `report`,
//! once there is room, rebuilds it and says its writing failed, not that
//! it was killed.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{PEAKHOUR, peakhour, run_bounded};

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "cannot mount a tmpfs (this test needs root)"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the disk is full.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        while file.write_all(&[0u8; 4096]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn journaled_intervals(run_dir: &Path) -> usize {
    std::fs::read_to_string(run_dir.join("intervals.jsonl"))
        .map_or(0, |t| t.lines().count().saturating_sub(1))
}

#[test]
fn issue_26_item_9_a_run_on_a_full_disk_prints_its_figures_and_its_rebuild_says_writing_failed() {
    let disk = SmallDisk::mount("8m");
    let workspace = tempfile::tempdir().unwrap();
    let run_dir = disk.path().join("run");
    let mut command = Command::new(PEAKHOUR);
    command
        .args(["run", "--profile", "netbench-disk-mix", "--users", "2"])
        .args(["--workspace", "256KB", "--start-delay", "300ms"])
        .args(["--work-per-iteration", "4", "--measured-iterations", "40"])
        .args(["--think-time", "50ms", "--interval", "1s", "--seed", "5"])
        .arg("--dir")
        .arg(workspace.path())
        .arg("--out")
        .arg(&run_dir);
    // Fill the disk once the run has journaled an interval, from a thread,
    // while the child runs under the bounded runner.
    let watched = run_dir.clone();
    let filler = std::thread::spawn(move || {
        let give_up = Instant::now() + Duration::from_secs(60);
        while journaled_intervals(&watched) < 2 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let running = std::thread::spawn(move || run_bounded(&mut command, Duration::from_secs(120)));
    filler.join().unwrap();
    let filled = disk.fill();
    let run = running.join().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    // What it measured is on the terminal, and where it is not on disk.
    assert!(run.stdout.contains("steady state:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("results: NOT written to"),
        "{}",
        run.stdout
    );
    let full = std::io::Error::from_raw_os_error(28).to_string();
    assert!(run.stderr.contains(&full), "{}", run.stderr);
    for line in run.stdout.lines().chain(run.stderr.lines()) {
        assert!(line.matches(&full).count() <= 1, "said twice: {line}");
    }
    assert!(!run_dir.join("summary.json").exists());

    // With room again, the rebuild says why the run is unfinished.
    std::fs::remove_file(filled).unwrap();
    let report = peakhour(&["report", run_dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&report.stderr);
    assert!(report.status.success(), "{stderr}");
    assert!(stderr.contains("could not write its results"), "{stderr}");
    assert!(!stderr.contains("killed"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    // The error itself: the run kept room on the disk to write it down.
    let why = summary["recovered"]["write_failed"].as_str().unwrap();
    assert!(why.contains(&full), "{why}");
    assert!(stderr.contains(&full), "{stderr}");
}
