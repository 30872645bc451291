//! The committed recordings of real mail clients (issue 28 item 1,
//! `tests/fixtures/clients/<client>/`, made by `scripts/record-clients.sh`
//! against a lab with Dovecot's rawlog on) parse, say what was done, and hold
//! no password. Fast: it reads files only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/clients")
}

/// One transcript line: `<seconds> c<N> open|close` or `<seconds> c<N> C:|S: <text>`.
struct Line<'a> {
    seconds: f64,
    connection: &'a str,
    side: &'a str,
    text: &'a str,
}

fn parse_line<'a>(file: &Path, number: usize, line: &'a str) -> Line<'a> {
    let parsed = (|| {
        let mut parts = line.splitn(4, ' ');
        let seconds: f64 = parts.next()?.parse().ok()?;
        let connection = parts.next().filter(|c| c.starts_with('c'))?;
        let side = parts
            .next()
            .filter(|s| matches!(*s, "open" | "close" | "C:" | "S:"))?;
        let text = parts.next().unwrap_or("");
        Some(Line {
            seconds,
            connection,
            side,
            text,
        })
    })();
    parsed.unwrap_or_else(|| {
        panic!(
            "{}:{number}: not a transcript line: {line:?}",
            file.display()
        )
    })
}

/// The manifest names the client, its packages with versions, and every action with its times.
fn check_manifest(dir: &Path, name: &str) {
    let manifest_path = dir.join("manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&manifest_path).expect("manifest.json is readable"),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", manifest_path.display()));
    assert_eq!(manifest["client"], name, "{}", manifest_path.display());
    let packages = manifest["packages"].as_object().expect("packages");
    assert!(
        packages
            .values()
            .all(|v| v.as_str().is_some_and(|v| !v.is_empty())),
        "{}: every package has its exact Debian version",
        manifest_path.display()
    );
    let actions = manifest["actions"].as_array().expect("actions");
    let done: BTreeSet<&str> = actions
        .iter()
        .map(|a| {
            let (start, end) = (
                a["start"].as_f64().expect("start"),
                a["end"].as_f64().expect("end"),
            );
            assert!(start <= end, "{}: {a}", manifest_path.display());
            a["action"].as_str().expect("action name")
        })
        .collect();
    for action in [
        "open_inbox",
        "read",
        "move",
        "delete",
        "send",
        "search",
        "idle",
    ] {
        assert!(
            done.contains(action),
            "{name}: action {action} was not recorded"
        );
    }
}

/// The transcript parses, runs forward in time, shows logins and commands, and holds no secret.
fn check_transcript(dir: &Path, name: &str) {
    let transcript_path = dir.join("transcript.txt");
    let transcript = std::fs::read_to_string(&transcript_path).expect("transcript.txt is readable");
    let (mut commands, mut logins, mut previous) = (0, 0, f64::MIN);
    let mut in_sasl = BTreeSet::new();
    for (number, raw) in transcript.lines().enumerate() {
        if raw.starts_with('#') {
            continue;
        }
        let line = parse_line(&transcript_path, number + 1, raw);
        assert!(
            line.seconds >= previous,
            "{}:{}: time goes back",
            transcript_path.display(),
            number + 1
        );
        previous = line.seconds;
        let words: Vec<&str> = line.text.split(' ').collect();
        let verb = words
            .get(1)
            .map(|w| w.to_ascii_uppercase())
            .unwrap_or_default();
        let at = || format!("{}:{}", transcript_path.display(), number + 1);
        if line.side == "C:" {
            commands += 1;
            if in_sasl.remove(line.connection) {
                assert_eq!(
                    line.text,
                    "<credentials>",
                    "{}: a SASL response left in",
                    at()
                );
            }
            if verb == "LOGIN" {
                assert_eq!(
                    words.last(),
                    Some(&"<password>"),
                    "{}: a LOGIN password left in",
                    at()
                );
            }
            if verb == "AUTHENTICATE" {
                match words.get(3) {
                    Some(payload) => {
                        assert_eq!(*payload, "<credentials>", "{}: SASL-IR left in", at())
                    }
                    None => {
                        in_sasl.insert(line.connection);
                    }
                }
            }
        } else if line.side == "S:"
            && words.get(1) == Some(&"OK")
            && line.text.ends_with("Logged in")
        {
            logins += 1;
        }
    }
    assert!(
        commands > 0 && logins > 0,
        "{name}: the transcript shows no login or no command"
    );
}

#[test]
fn issue_28_item_1_client_recordings_parse_and_hold_no_password() {
    let mut clients = BTreeSet::new();
    for entry in std::fs::read_dir(fixtures()).expect("tests/fixtures/clients exists") {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        check_manifest(&dir, &name);
        check_transcript(&dir, &name);
        clients.insert(name);
    }
    for client in [
        "mbsync",
        "mbsync-synced",
        "neomutt",
        "roundcube",
        "thunderbird",
    ] {
        assert!(
            clients.contains(client),
            "no recording of {client} in {}",
            fixtures().display()
        );
    }
}

/// `scripts/record/replay.py` turns a recording into commands for a lab user:
/// tags renumbered, the lab user's credentials in LOGIN and AUTHENTICATE
/// PLAIN, recorded UIDs mapped onto the lab folder's, literals of the recorded
/// size, each connection's state at a window's start. Its unit tests run on a
/// short transcript without a server (scripts/record/test_replay.py).
#[test]
fn issue_28_item_3_replay_renumbers_tags_substitutes_logins_and_maps_uids() {
    let script = fixtures().join("../../../scripts/record/test_replay.py");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python3 {} failed:\n{report}",
        script.display()
    );
    // unittest's summary: a run that found no test would also exit 0, so
    // every test the script defines must have run.
    let defined = std::fs::read_to_string(&script)
        .unwrap()
        .matches("\n    def test_")
        .count();
    assert!(defined >= 9, "{defined} tests in {}", script.display());
    assert!(
        report.contains(&format!("Ran {defined} tests")) && report.trim_end().ends_with("OK"),
        "{report}"
    );
}
