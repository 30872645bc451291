//! A scripted session (`fixed.script`): every user does the listed actions in
//! the listed order at the listed offsets, as a recorded user did them.

use std::time::Duration;

use peakhour_workload::{ActionKind, Mode, Overrides, Plan, Profile, ProfileError};

/// Three actions whose script order (check, read, send) is not the counts'
/// order ([`ActionKind::ALL`] puts send second), so the script's order shows.
const SCRIPTED: &str = r#"name = "scripted"
description = "a recorded session's steps"
day = "8h"
mode = "fixed"

[fixed]
script = [
  { action = "check_inbox", at = "3.5s" },
  { action = "read", at = "7.5s" },
  { action = "send", at = "12s" },
  { action = "read", at = "12s" },
]

[users]
count = 4

[recipients]
average = 1

[actions.check_inbox]
count = 1

[actions.read]
count = 2

[actions.send]
count = 1

[[mix]]
weight = 1
body = "1KB"
"#;

fn parse_err(src: &str) -> ProfileError {
    Profile::parse("script.toml", src).expect_err("must not parse")
}

#[test]
fn a_scripted_session_runs_its_steps_in_order_at_their_offsets() {
    let profile = Profile::parse("script.toml", SCRIPTED).expect("parses");
    let plan = Plan::resolve(&profile, &Overrides::default()).expect("resolves");
    assert_eq!(plan.mode(), Mode::Fixed);
    let schedule = plan.schedule(2);
    assert!(
        !schedule.is_closed_loop(),
        "steps keep their own times, as a recorded user's clicks did"
    );
    assert!(schedule.is_finite());
    let steps: Vec<_> = schedule
        .map(|a| (a.at, a.kind, a.seq, a.nth))
        .collect::<Vec<_>>();
    let ms = Duration::from_millis;
    assert_eq!(
        steps,
        [
            (ms(3_500), ActionKind::CheckInbox, 0, 0),
            (ms(7_500), ActionKind::Read, 1, 0),
            (ms(12_000), ActionKind::Send, 2, 0),
            (ms(12_000), ActionKind::Read, 3, 1),
        ]
    );
    // Every user follows the same script: the same step falls at the same time.
    let other: Vec<_> = plan.schedule(3).map(|a| (a.at, a.kind)).collect();
    assert_eq!(other, steps.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>());
    // The counts the results report are the script's tally.
    let counts = plan.fixed_counts();
    assert!(counts.contains(&(ActionKind::Read, 2)), "{counts:?}");
    assert!(counts.contains(&(ActionKind::Send, 1)), "{counts:?}");
}

#[test]
fn a_profile_without_a_script_keeps_the_closed_loop() {
    let start = SCRIPTED.find("script = [").expect("script");
    let end = SCRIPTED.find("\n\n[users]").expect("users");
    let src = format!("{}pause = \"1s\"{}", &SCRIPTED[..start], &SCRIPTED[end..]);
    let profile = Profile::parse("pause.toml", &src).expect("parses");
    let plan = Plan::resolve(&profile, &Overrides::default()).expect("resolves");
    let schedule = plan.schedule(0);
    assert!(schedule.is_closed_loop());
    assert!(schedule.is_finite());
    let kinds: Vec<_> = schedule.map(|a| a.kind).collect();
    assert_eq!(
        kinds,
        [
            ActionKind::CheckInbox,
            ActionKind::Send,
            ActionKind::Read,
            ActionKind::Read
        ],
        "without a script, the counts run in ActionKind::ALL order"
    );
}

#[test]
fn a_step_before_the_one_above_it_is_refused_at_its_line() {
    let src = SCRIPTED.replace(
        "{ action = \"send\", at = \"12s\" }",
        "{ action = \"send\", at = \"5s\" }",
    );
    let e = parse_err(&src);
    assert_eq!(e.field(), "fixed.script[2]");
    assert_eq!(e.line_column().map(|(line, _)| line), Some(10), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("at 5s comes before the step above it (7500ms)"),
        "{text}"
    );
}

#[test]
fn a_count_that_is_not_the_scripts_tally_is_refused() {
    let src = SCRIPTED.replace("[actions.read]\ncount = 2", "[actions.read]\ncount = 3");
    let e = parse_err(&src);
    assert_eq!(e.field(), "actions.read.count");
    assert!(
        e.to_string()
            .contains("is 3, but fixed.script names `read` 2 times"),
        "{e}"
    );
}

#[test]
fn a_step_of_an_action_the_profile_does_not_configure_is_refused() {
    let src = SCRIPTED.replace(
        "{ action = \"read\", at = \"7.5s\" }",
        "{ action = \"move\", at = \"7.5s\" }",
    );
    let e = parse_err(&src);
    assert_eq!(e.field(), "fixed.script[1]");
    assert!(
        e.to_string()
            .contains("`move` is not among the profile's [actions.*]"),
        "{e}"
    );
}

#[test]
fn a_script_with_a_pause_is_refused() {
    let src = SCRIPTED.replace("[fixed]\n", "[fixed]\npause = \"2s\"\n");
    let e = parse_err(&src);
    assert_eq!(e.field(), "fixed.pause");
    assert!(e.to_string().contains("not both"), "{e}");
}

#[test]
fn an_unknown_action_name_in_a_step_names_the_field() {
    let src = SCRIPTED.replace("\"check_inbox\", at", "\"check_mail\", at");
    let e = parse_err(&src);
    assert!(e.field().starts_with("fixed.script"), "{}", e.field());
    assert!(e.to_string().contains("check_mail"), "{e}");
}

/// `scripts/record/scripted.py` turns a recording's actions into mmb-medium
/// with a `fixed.script` (docs/clients.md, "The same position in the
/// session"): the profile it writes parses, and every user does neomutt's
/// recorded actions in their recorded order, the first one the script's lead
/// after the logon.
#[test]
fn issue_28_item_3_a_recording_scripted_by_scripted_py_is_a_profile_that_replays_its_order() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = "import sys\n\
        sys.path.insert(0, 'scripts/record')\n\
        import replay, scripted\n\
        recording = replay.Recording('tests/fixtures/clients/neomutt')\n\
        steps = scripted.script_of(recording, ['open_inbox', 'read', 'move', 'delete', 'send'], 1.5)\n\
        sys.stdout.write(scripted.scripted_profile(sys.stdin.read(), steps))\n";
    let mut child = Command::new("python3")
        .args(["-c", program])
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let source = peakhour_workload::builtin("mmb-medium")
        .expect("builtin")
        .source;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(source.as_bytes())
        .expect("writes");
    let output = child.wait_with_output().expect("waits");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let profile = Profile::parse("scripted.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let plan = Plan::resolve(&profile, &Overrides::default()).expect("resolves");
    let steps: Vec<_> = plan.schedule(0).map(|a| (a.kind, a.at)).collect();
    assert_eq!(
        steps.iter().map(|s| s.0).collect::<Vec<_>>(),
        [
            ActionKind::CheckInbox,
            ActionKind::Read,
            ActionKind::Move,
            ActionKind::Delete,
            ActionKind::Send
        ],
        "the recording's order, not the counts' order"
    );
    // neomutt's start is its open_inbox: the first step comes the lead (1.5 s)
    // after the logon, less half the 0.2 s ramp-up.
    assert_eq!(steps[0].1, Duration::from_millis(1_400));
    // The recording's read began 3.58 s after its open_inbox.
    assert_eq!(steps[1].1 - steps[0].1, Duration::from_millis(3_578));
    assert!(steps.windows(2).all(|w| w[0].1 < w[1].1), "{steps:?}");
    assert_eq!(plan.fixed_counts().iter().map(|c| c.1).sum::<u64>(), 5);
}
