//! Issue 28 items 2 and 3: each client personality, run against the lab's
//! real Dovecot at a mailbox size other than the recorded one (60 messages
//! in the Inbox where the recordings had 104), sends per action what the
//! recorded client sent: the multiset of commands and FETCH items scores at
//! least 0.9 against the recording (weighted Jaccard), and its connections
//! and logins per idle hour are within 10% of the recording's. A replay
//! would score 1.0 and prove nothing; the personalities compute their
//! commands from the session's state (UID ranges, page of 50, every folder).
//!
//! One lab, one init, the four personalities traced side by side (mbsync
//! twice: against its first run and against `mbsync-synced`, a day that
//! starts with its store in sync): the actions at day speed 10 (10 s of the
//! day apart), the idle hour at speed 200 (18 s). Thunderbird's folder connections fall in one window or
//! another by the draw of its folder order (`thunderbird_seed`): its user is
//! traced at a draw like the recording's, and a second one at the plan's
//! own draw is scored over the day's actions together.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: failing loudly is the point

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use peakhour_engine::init::{InitSettings, Progress, Via};
use peakhour_engine::{
    Credentials, Endpoint, StartDraw, Target, TracedAction, draw_like_recording,
    thunderbird_start_draw, trace_client,
};
use peakhour_imap::fidelity::{
    ActionMeasure, ActionWindow, Line, LineKind, differences, measure, parse_transcript,
    weighted_jaccard,
};
use peakhour_lab::{LabConfig, LabGuard, Ports};
use peakhour_net::{Secret, TlsSettings};
use peakhour_workload::{ActionKind, Overrides, Personality, Plan, Profile, builtin};

/// The Inbox of every traced user; the recordings' had 104.
const INBOX_MESSAGES: u32 = 60;

fn target(lab: &LabGuard) -> Arc<Target> {
    let status = &lab.status;
    let tls = TlsSettings {
        extra_ca_file: Some(status.ca_file.clone().into()),
        ..TlsSettings::default()
    }
    .client_config()
    .expect("TLS config");
    Arc::new(Target {
        imap: Endpoint::parse(&format!("imap://{}", status.endpoints.imap), &["imap"]).unwrap(),
        smtp: Endpoint::parse(&format!("smtp://{}", status.endpoints.smtp), &["smtp"]).unwrap(),
        jmap: None,
        lmtp: Some(
            Endpoint::parse(&format!("lmtp://{}", status.endpoints.lmtp), &["lmtp"]).unwrap(),
        ),
        caldav: None,
        pop3: None,
        tls,
        credentials: Credentials::Shared(Secret::new(status.password.clone())),
        options: peakhour_engine::ServerOptions::default(),
    })
}

/// mmb-medium (40 folders of 5, Trash) with `INBOX_MESSAGES` in the Inbox.
fn profile() -> Profile {
    let source = builtin("mmb-medium").unwrap().source;
    let source = source.replacen(
        "name = \"INBOX\"\n# S62C2: \"Number of messages in Inbox: 4\" (Medium).\nmessages = 4",
        &format!("name = \"INBOX\"\nmessages = {INBOX_MESSAGES}"),
        1,
    );
    assert!(
        source.contains(&format!("messages = {INBOX_MESSAGES}")),
        "the Inbox line moved"
    );
    Profile::parse("fidelity.toml", &source).unwrap()
}

fn plan(client: Personality, speed: f64) -> Arc<Plan> {
    plan_seeded(client, speed, 28)
}

fn plan_seeded(client: Personality, speed: f64, seed: u64) -> Arc<Plan> {
    let overrides = Overrides {
        users: Some(8),
        speed: Some(speed),
        seed: Some(seed),
        client: Some(client),
        ..Overrides::default()
    };
    Arc::new(Plan::resolve(&profile(), &overrides).unwrap())
}

fn fixture_dir(fixture: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/clients")
        .join(fixture)
}

/// The recording's action windows, from its manifest.
fn recorded_windows(fixture: &str) -> Vec<ActionWindow> {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir(fixture).join("manifest.json")).unwrap(),
    )
    .unwrap();
    manifest["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| ActionWindow {
            action: a["action"].as_str().unwrap().to_owned(),
            start: a["start"].as_f64().unwrap(),
            end: a["end"].as_f64().unwrap(),
        })
        .collect()
}

/// The recording's transcript.
fn recording_lines(fixture: &str) -> Vec<Line> {
    let text = std::fs::read_to_string(fixture_dir(fixture).join("transcript.txt")).unwrap();
    parse_transcript(&text).unwrap()
}

/// The recording of `client`: its per-action measures.
fn recorded(fixture: &str) -> BTreeMap<String, ActionMeasure> {
    measure(&recording_lines(fixture), &recorded_windows(fixture))
        .into_iter()
        .map(|m| (m.action.clone(), m))
        .collect()
}

fn measured(trace: &peakhour_engine::ClientTrace) -> BTreeMap<String, ActionMeasure> {
    let lines = parse_transcript(&trace.transcript).unwrap();
    measure(&lines, &trace.actions)
        .into_iter()
        .map(|m| (m.action.clone(), m))
        .collect()
}

/// The recorded day of `fixture`: its actions at their recorded times
/// (from its first action, which our logon stands for), at day speed 10;
/// then an idle hour at speed 200 and a closing mark.
fn day(fixture: &str) -> Vec<TracedAction> {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir(fixture).join("manifest.json")).unwrap(),
    )
    .unwrap();
    let recorded = manifest["actions"].as_array().unwrap();
    // Our logon stands for the recorded first action; Thunderbird's warm
    // `launch` starts before its first connection, which is our logon.
    let first = match recorded[0]["action"].as_str() {
        Some("launch") => 0.0,
        _ => recorded[0]["start"].as_f64().unwrap(),
    };
    let kind = |name: &str| match name {
        "open_inbox" => Some(ActionKind::CheckInbox),
        "read" => Some(ActionKind::Read),
        "move" => Some(ActionKind::Move),
        "delete" => Some(ActionKind::Delete),
        "send" => Some(ActionKind::Send),
        _ => None,
    };
    let mut actions = Vec::new();
    for action in recorded {
        let name = action["action"].as_str().unwrap();
        let at = Duration::from_secs_f64((action["start"].as_f64().unwrap() - first).max(0.0));
        match name {
            "open_inbox" | "read" | "move" | "delete" | "send" | "search" => {
                actions.push(TracedAction {
                    name: name.to_owned(),
                    kind: kind(name),
                    at,
                    speed: None,
                })
            }
            "idle" => {
                actions.push(TracedAction {
                    name: "idle".to_owned(),
                    kind: None,
                    at,
                    speed: Some(200.0),
                });
                actions.push(TracedAction {
                    name: "end".to_owned(),
                    kind: None,
                    at: at + Duration::from_secs(3600),
                    speed: None,
                });
            }
            _ => {}
        }
    }
    actions
}

/// The personality, its recording, the user it traces with, and which
/// recorded window each action is compared with (the recorded name, and how
/// many repetitions of one thing it holds).
struct Case {
    client: Personality,
    fixture: &'static str,
    user: u32,
}

static CASES: [Case; 5] = [
    Case {
        client: Personality::Neomutt,
        fixture: "neomutt",
        user: 0,
    },
    Case {
        client: Personality::Mbsync,
        fixture: "mbsync",
        user: 1,
    },
    // mbsync's usual day: its store in sync before the first action, so the
    // recorded open_inbox is itself a steady sync.
    Case {
        client: Personality::Mbsync,
        fixture: "mbsync-synced",
        user: 5,
    },
    Case {
        client: Personality::Roundcube,
        fixture: "roundcube",
        user: 2,
    },
    Case {
        client: Personality::Thunderbird,
        fixture: "thunderbird-warm",
        user: 3,
    },
];

/// The recorded window a traced action is scored against. The first
/// mbsync recording's open_inbox is its first run (every message downloaded
/// once, an empty local store); a user's check in the day is a sync like the
/// idle hour's, so it is scored against one of those (the idle window
/// divided by its syncs). `mbsync-synced`'s open_inbox is such a sync.
fn reference(
    case: &Case,
    recording: &BTreeMap<String, ActionMeasure>,
    action: &str,
) -> ActionMeasure {
    if case.fixture == "mbsync" && action == "open_inbox" {
        let idle = &recording["idle"];
        return idle.per(idle.logins);
    }
    recording[action].clone()
}

/// The lab of the test, its mailboxes filled by `peakhour init`.
async fn lab_with_mailboxes() -> (tempfile::TempDir, LabGuard, Arc<Target>) {
    let dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .unwrap();
    let config = LabConfig {
        users: 8,
        ports: Ports::free().unwrap(),
        ..LabConfig::new(dir.path())
    };
    let lab = LabGuard::start(&config).expect("the lab (run as root, after scripts/setup.sh)");
    let target = target(&lab);
    let settings = InitSettings {
        via: Via::ImapAppend,
        parallel: 4,
        timeout: Duration::from_secs(120),
        command_timeout: Duration::from_secs(30),
        homes: None,
    };
    peakhour_engine::init::init(
        plan(Personality::Peakhour, 1.0),
        target.clone(),
        settings,
        Arc::new(Progress::default()),
    )
    .await
    .expect("init");
    (dir, lab, target)
}

/// What the test prints, and what fell short.
#[derive(Default)]
struct Report {
    table: Vec<String>,
    failures: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_item_3_each_personality_sends_what_its_recorded_client_sent() {
    let (_dir, _lab, target) = lab_with_mailboxes().await;

    // Every personality's day and idle hour, side by side.
    let traces = CASES.iter().map(|case| {
        let target = target.clone();
        async move {
            let timeout = Duration::from_secs(30);
            let plan = match case.client {
                Personality::Thunderbird => {
                    plan_seeded(case.client, 10.0, thunderbird_seed(case.user))
                }
                client => plan(client, 10.0),
            };
            trace_client(plan, target, case.user, &day(case.fixture), timeout)
                .await
                .unwrap()
        }
    });
    // A Thunderbird user at the plan's own draw, beside the one whose draw
    // is like the recording's (`thunderbird_seed`).
    let any_draw = {
        let target = target.clone();
        tokio::spawn(async move {
            let day = day("thunderbird-warm");
            let plan = plan(Personality::Thunderbird, 10.0);
            trace_client(plan, target, ANY_DRAW_USER, &day, Duration::from_secs(30))
                .await
                .unwrap()
        })
    };
    let traces = futures_join(traces.collect()).await;
    let any_draw = any_draw.await.unwrap();

    let mut report = Report::default();
    for (case, trace) in CASES.iter().zip(traces) {
        score_case(case, &trace, &mut report);
    }
    score_any_draw(&any_draw, &mut report);
    let Report { table, failures } = report;
    println!("{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "below fidelity:\n{}\n\n{}",
        failures.join("\n"),
        table.join("\n")
    );
}

/// Each scored window of one personality's trace at 0.9 or more against
/// its recording, and its connections and logins per idle hour within 10%.
fn score_case(case: &Case, trace: &peakhour_engine::ClientTrace, report: &mut Report) {
    let Report { table, failures } = report;
    let recording = recorded(case.fixture);
    let ours = measured(trace);
    // Named by its recording where a personality has two (mbsync).
    let who = match case.client.to_string() {
        name if name == case.fixture || case.client == Personality::Thunderbird => name,
        name => format!("{name} against {}", case.fixture),
    };
    if case.client == Personality::Thunderbird {
        let seed = thunderbird_seed(case.user);
        let draw = thunderbird_draw(seed, case.user);
        table.push(format!(
            "thunderbird traced with run seed {seed}: its sweep meets Sent at {} and its move \
             target {} at {} of {} (the recording's: Sent at 36, Folder1 at 43 of 43)",
            draw.sent_at + 1,
            draw.target,
            draw.target_at + 1,
            draw.folders
        ));
    }
    for action in ["open_inbox", "read", "move", "delete", "send", "idle"] {
        let mut reference = reference(case, &recording, action);
        let mut candidate = ours[action].clone();
        if action == "idle" {
            // Rates: the recorded idle windows are 480 s to 3,600 s long.
            reference = reference.over(3600.0);
            candidate = candidate.over(3600.0);
        }
        let score = weighted_jaccard(&reference.joint(), &candidate.joint());
        table.push(format!(
            "{who} {action}: {score:.3} (commands {:.3}, items {:.3}) {:?}",
            weighted_jaccard(&reference.commands, &candidate.commands),
            weighted_jaccard(&reference.fetch_items, &candidate.fetch_items),
            differences(&reference.joint(), &candidate.joint()),
        ));
        let floor = 0.9;
        if score < floor {
            failures.push(format!("{who} {action}: {score:.3} (floor {floor})"));
        }
    }
    if case.client == Personality::Neomutt {
        // Parametrised, not replayed: neomutt fetches every header of
        // the Inbox it opens, 60 here against the recording's 104.
        let ratio = ours["open_inbox"].bytes_from_server as f64
            / recording["open_inbox"].bytes_from_server as f64;
        table.push(format!(
            "neomutt open_inbox bytes from the server, ours/recorded: {ratio:.2}"
        ));
        if !(0.4..0.8).contains(&ratio) {
            failures.push(format!(
                "neomutt open_inbox bytes ratio {ratio:.2}, not about 60/104"
            ));
        }
    }
    let (theirs, ours) = (&recording["idle"], &ours["idle"]);
    table.push(format!(
        "{who} idle per hour: connections {:.1} (recorded {:.1}), logins {:.1} (recorded {:.1})",
        ours.connections_per_hour(),
        theirs.connections_per_hour(),
        ours.logins_per_hour(),
        theirs.logins_per_hour()
    ));
    for (what, a, b) in [
        (
            "connections",
            ours.connections_per_hour(),
            theirs.connections_per_hour(),
        ),
        ("logins", ours.logins_per_hour(), theirs.logins_per_hour()),
    ] {
        if (a - b).abs() > 0.1 * b.max(0.0) + 1e-9 {
            failures.push(format!("{who} idle {what}/h: {a:.1} vs {b:.1}"));
        }
    }
}

/// At any draw the day sends the same commands but for the move target's
/// own connection, which it opens only when the sweep reaches the target
/// after the move: scored over the day's actions together, that connection
/// left out on both sides (the recording's Folder1, c4).
fn score_any_draw(any_draw: &peakhour_engine::ClientTrace, report: &mut Report) {
    let Report { table, failures } = report;
    let day_actions = ["open_inbox", "read", "move", "delete", "send"];
    let theirs = day_without_move_target(
        &recording_lines("thunderbird-warm"),
        &recorded_windows("thunderbird-warm"),
        &day_actions,
    );
    let ours = day_without_move_target(
        &parse_transcript(&any_draw.transcript).unwrap(),
        &any_draw.actions,
        &day_actions,
    );
    let score = weighted_jaccard(&theirs, &ours);
    table.push(format!(
        "thunderbird at the plan's draw (user {ANY_DRAW_USER}), the day's actions together \
         without the move target's connection: {score:.3} {:?}",
        differences(&theirs, &ours)
    ));
    if score < 0.9 {
        failures.push(format!(
            "thunderbird at the plan's draw, the day without the move target's connection: {score:.3}"
        ));
    }
}

/// The user traced as Thunderbird at the plan's own folder-order draw.
const ANY_DRAW_USER: u32 = 4;

/// The commands and FETCH items of `actions` together, without the lines of
/// the connection that selected the day's move target (the first `UID MOVE`
/// that does not go to Trash), if there is one.
fn day_without_move_target(
    lines: &[Line],
    windows: &[ActionWindow],
    actions: &[&str],
) -> BTreeMap<String, u64> {
    let words = |line: &Line| match &line.kind {
        LineKind::Client(text) => text.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let target = lines.iter().find_map(|line| {
        let w = words(line);
        (w.len() >= 5 && w[1].eq_ignore_ascii_case("uid") && w[2].eq_ignore_ascii_case("move"))
            .then(|| w[4].trim_matches('"').to_owned())
            .filter(|f| f != "Trash")
    });
    let own = lines.iter().find_map(|line| {
        let w = words(line);
        (w.len() >= 3
            && w[1].eq_ignore_ascii_case("select")
            && Some(w[2].trim_matches('"')) == target.as_deref())
        .then(|| line.connection.clone())
    });
    let kept: Vec<Line> = lines
        .iter()
        .filter(|line| Some(&line.connection) != own.as_ref())
        .cloned()
        .collect();
    let mut all = BTreeMap::new();
    for m in measure(&kept, windows) {
        if actions.contains(&m.action.as_str()) {
            for (name, n) in m.joint() {
                *all.entry(name).or_default() += n;
            }
        }
    }
    all
}

/// Thunderbird's warm start walks its folders in its profile's directory
/// order, one fixed shuffle per profile (`ClientModel::sweep_order`), and
/// opens a connection for a folder that changed when the walk reaches it:
/// which action's window holds Sent's connection and the move target's
/// depends on that draw, not on what the client sends. The recording's draw
/// put Sent 36th and its move target (Folder1) last of the 43 folders, so
/// both connections opened during its move, the second one's IDLE 2 s later
/// in its delete. The test scores the first run seed from 28 whose draw for
/// the traced user puts them about there too (Sent 33rd to 39th, the move
/// target among the last two: from the 41st on, its IDLE falls after the
/// delete begins); another draw moves the same commands from one window to
/// another (docs/clients.md, "Fidelity").
fn thunderbird_seed(user: u32) -> u64 {
    (28..28 + 20_000)
        .find(|&seed| draw_like_recording(&thunderbird_draw(seed, user)))
        .expect("a seed that draws Sent and the move target where the recording's draw put them")
}

/// The draw of `user` at run seed `seed` (the day's move is its third
/// action: sequence number 2).
fn thunderbird_draw(seed: u64, user: u32) -> StartDraw {
    thunderbird_start_draw(&plan_seeded(Personality::Thunderbird, 10.0, seed), user, 2)
}

/// Runs the futures concurrently on this runtime, results in order.
async fn futures_join<F: std::future::Future + Send + 'static>(futures: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}

/// The Rust measure cuts and counts a recording as `measure.py` does: the
/// same commands, FETCH items, connections and logins per action, for
/// every committed recording.
#[test]
fn issue_28_item_3_the_rust_measure_agrees_with_measure_py() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for fixture in [
        "neomutt",
        "mbsync",
        "mbsync-synced",
        "roundcube",
        "thunderbird",
        "thunderbird-warm",
    ] {
        let output = std::process::Command::new("python3")
            .arg(root.join("scripts/record/measure.py"))
            .arg(root.join("tests/fixtures/clients").join(fixture))
            .output()
            .expect("python3 (scripts/setup.sh installs it)");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let python: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let ours = recorded(fixture);
        for action in python["actions"].as_array().unwrap() {
            let name = action["action"].as_str().unwrap();
            let mine = &ours[name];
            let counts = |v: &serde_json::Value| -> BTreeMap<String, u64> {
                v.as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
                    .collect()
            };
            assert_eq!(
                counts(&action["commands"]),
                mine.commands,
                "{fixture} {name}"
            );
            assert_eq!(
                counts(&action["fetch_items"]),
                mine.fetch_items,
                "{fixture} {name}"
            );
            assert_eq!(
                action["connections_opened"].as_u64(),
                Some(mine.connections)
            );
            assert_eq!(
                action["logins"].as_u64(),
                Some(mine.logins),
                "{fixture} {name}"
            );
            assert_eq!(
                action["bytes_from_client"].as_u64(),
                Some(mine.bytes_from_client),
                "{fixture} {name}"
            );
            assert_eq!(
                action["bytes_from_server"].as_u64(),
                Some(mine.bytes_from_server),
                "{fixture} {name}"
            );
        }
    }
}
