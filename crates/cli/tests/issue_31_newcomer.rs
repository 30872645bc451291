//! Issue 31, a new user's first hour: what `--help`, the lab's flags, `profiles`
//! and `lab check` say to someone who has only the binary; and the `{n}` of
//! issue 26 item 9 in `run --help`.
#![allow(clippy::unwrap_used)]

mod common;

use common::{peakhour, start_lab};

fn stdout(args: &[&str]) -> String {
    let out = peakhour(args);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn issue_31_item_1_help_opens_with_the_question_and_the_commands_to_start_with() {
    for flag in ["--help", "-h"] {
        let help = stdout(&[flag]);
        let opening: String = help.lines().take(8).collect::<Vec<_>>().join("\n");
        assert!(
            opening.contains("how many") && opening.contains("peak hour"),
            "{opening}"
        );
        assert!(opening.contains("peakhour lab up"), "{opening}");
        assert!(opening.contains("peakhour run"), "{opening}");
        // Not the internal crate's description.
        assert!(!help.contains("clap definitions"), "{help}");
    }
}

#[test]
fn issue_26_item_9_braces_n_in_run_help_show_as_written() {
    for flag in ["--help", "-h"] {
        let help = stdout(&["run", flag]);
        // The help column wraps: read it as one line of words.
        let words = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("LOGIN may hold {n} (the client's number)"),
            "{help}"
        );
        assert!(words.contains("logs in as user{n}."), "{help}");
        // What clap made of it before: `hold ` at the end of a line.
        assert!(!help.lines().any(|l| l.ends_with("hold ")), "{help}");
    }
}

#[test]
fn issue_31_item_2_lab_help_shows_lab_dir_and_hides_the_old_dir() {
    for command in ["up", "down", "status", "check"] {
        let help = stdout(&["lab", command, "--help"]);
        assert!(help.contains("--lab-dir <DIR>"), "lab {command}: {help}");
        assert!(!help.contains("--dir"), "lab {command}: {help}");
    }
}

#[test]
fn issue_31_item_2_and_5_lab_dir_everywhere_old_dir_noted_check_finds_a_user() {
    let (dir, _lab) = start_lab(3);
    let dir = dir.path().to_str().unwrap();

    let out = peakhour(&["lab", "status", "--lab-dir", dir]);
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("deprecated"));

    // The old spelling still works, and says it is old.
    let out = peakhour(&["lab", "status", "--dir", dir, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--dir` is deprecated") && stderr.contains("--lab-dir"),
        "{stderr}"
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["users"], 3);

    // The command line beats $PEAKHOUR_LAB_DIR, in either spelling.
    let out = std::process::Command::new(common::PEAKHOUR)
        .args(["lab", "status", "--dir", dir])
        .env("PEAKHOUR_LAB_DIR", "/nonexistent/lab")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // Item 5: on a 3-user lab, `lab check` with no --user uses one the lab has.
    let out = peakhour(&["lab", "check", "--lab-dir", dir]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("user1@bench.test"), "{text}");
    assert!(text.contains("arrived identical"), "{text}");
}

#[test]
fn issue_31_item_3_profiles_list_and_show_know_every_profile_run_takes() {
    let list = stdout(&["profiles", "list"]);
    let run_names = [
        "mmb-medium",
        "groupwise-20x3",
        "caldav-office",
        "pop3-user",
        "netbench-disk-mix",
        "netbench-disk-mix-short",
        "nbench",
    ];
    for name in run_names {
        let line = list
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{list}"));
        // Each says how long a run of it takes.
        assert!(
            line.split_whitespace().nth(1).unwrap().ends_with('s') || line.contains("over "),
            "{line}"
        );
        let shown = stdout(&["profiles", "show", name]);
        assert!(shown.contains(name), "{name}: {shown}");
    }
    // The disk mix's own length: 5 s + 5 iterations x 30 pieces x 2 s of think time.
    assert!(list.contains("over 5m5s"), "{list}");
    assert!(list.contains("over 1m1s"), "{list}");

    // `run` takes each name the listing gives: an unknown one lists them all.
    let out = peakhour(&["run", "--profile", "no-such-profile", "--users", "1"]);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in run_names {
        assert!(stderr.contains(name), "{name} missing from: {stderr}");
    }
}
