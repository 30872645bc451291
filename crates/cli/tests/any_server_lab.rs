//! Issue 12: peakhour against a server laid out as others are. One lab plays
//! a Courier- or Cyrus-like IMAP server (every folder under `INBOX.`, `.` as
//! separator, a top-level `Sent` refused) with an MTA port that takes mail
//! without AUTH. The built-in mmb-medium profile, unchanged, must fill and
//! load it; an independent client (Python's imaplib) must find the folders
//! where that server keeps them; `--smtp-auth none` must deliver through the
//! port without AUTH; `--group` must reach monitor.csv, the summary and the
//! report, and an explicit target without groups must show no lab rows.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;
use std::process::Command;

use common::{peakhour, start_lab_configured};
use peakhour_lab::Namespace;

/// A short run of mmb-medium: every one of its six actions falls due.
const SHORT_RUN: [&str; 14] = [
    "--profile",
    "mmb-medium",
    "--speed",
    "400",
    "--duration",
    "20s",
    "--ramp-up",
    "2s",
    "--drain",
    "10s",
    "--interval",
    "5s",
    "--seed",
    "12",
];

fn summary(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

/// Every action ran, none failed, and every copy sent was seen delivered.
fn assert_all_measured_nothing_lost(summary: &serde_json::Value) {
    for action in [
        "check_inbox",
        "send",
        "read",
        "move",
        "delete",
        "update_calendar",
    ] {
        let measured = &summary["actions"][action];
        assert!(
            measured["count"].as_u64().unwrap() > 0,
            "{action}: {measured}"
        );
        assert_eq!(measured["errors"], 0, "{action}: {measured}");
    }
    let delivery = &summary["delivery"];
    assert!(delivery["submitted_recipients"].as_u64().unwrap() > 0);
    assert_eq!(delivery["lost"], 0, "{delivery}");
    assert_eq!(
        delivery["submitted_recipients"], delivery["delivered_recipients"],
        "{delivery}"
    );
}

/// The folders user1 has, as Python's imaplib lists them.
fn imaplib_folders(imap: &str, login: &str, password: &str) -> Vec<String> {
    let (host, port) = imap.rsplit_once(':').unwrap();
    let script = format!(
        "import imaplib, re\n\
         m = imaplib.IMAP4({host:?}, {port})\n\
         m.login({login:?}, {password:?})\n\
         typ, lines = m.list()\n\
         assert typ == 'OK', typ\n\
         for line in lines:\n    \
             print(re.match(rb'\\(.*?\\) \"(.)\" \"?([^\"]*)\"?', line).group(2).decode())\n\
         m.logout()\n"
    );
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "imaplib: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn issue_12_mmb_medium_unchanged_on_an_inbox_dot_server_with_smtp_auth_none_and_groups() {
    let (_dir, lab) = start_lab_configured(6, |config| {
        config.namespace = Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        };
    });
    let status = lab.status.clone();
    let lab_dir = status.dir.clone();
    let out = tempfile::tempdir().unwrap();

    // init and run on the lab, with the profile's own folder names.
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success(), "init failed");
    let init = String::from_utf8_lossy(&init.stdout);
    assert!(init.contains("0 already there, 1230 added"), "{init}");
    let lab_run = out.path().join("lab");
    let mut args = vec![
        "run",
        "--lab-dir",
        &lab_dir,
        "--out",
        lab_run.to_str().unwrap(),
    ];
    args.extend(SHORT_RUN);
    peakhour(&args);
    assert_all_measured_nothing_lost(&summary(&lab_run));

    // Where an independent client finds them: under INBOX., Sent and Trash
    // being the server's special-use folders.
    let folders = imaplib_folders(&status.endpoints.imap, &status.user(1), &status.password);
    for folder in [
        "INBOX",
        "INBOX.Sent",
        "INBOX.Trash",
        "INBOX.Folder1",
        "INBOX.Folder40",
    ] {
        assert!(
            folders.iter().any(|f| f == folder),
            "{folder} in {folders:?}"
        );
    }
    assert!(
        !folders.iter().any(|f| f == "Sent" || f == "Folder1"),
        "{folders:?}"
    );

    // The MTA's port without AUTH, as an explicit target, with a group for
    // the IMAP server's processes.
    let noauth = status
        .endpoints
        .smtp_noauth
        .clone()
        .expect("a no-AUTH port");
    let imap_url = format!("imap://{}", status.endpoints.imap);
    let smtp_url = format!("smtp://{noauth}");
    let explicit = |dir: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--target",
            "explicit",
            "--imap",
            &imap_url,
            "--smtp",
            &smtp_url,
            "--smtp-auth",
            "none",
            "--users",
            "6",
            "--out",
            dir.to_str().unwrap(),
        ];
        args.extend(SHORT_RUN);
        args.extend(extra);
        Command::new(common::PEAKHOUR)
            .args(&args)
            .env("PEAKHOUR_PASSWORD", &status.password)
            .output()
            .unwrap()
    };
    let grouped = out.path().join("grouped");
    let run = explicit(&grouped, &["--group", "imap_server=^imap$"]);
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    let grouped_summary = summary(&grouped);
    assert_all_measured_nothing_lost(&grouped_summary);
    let monitor = std::fs::read_to_string(grouped.join("monitor.csv")).unwrap();
    let header = monitor.lines().next().unwrap();
    assert!(header.contains("group_imap_server_cpu_pct"), "{header}");
    assert!(!header.contains("group_dovecot"), "{header}");
    assert!(
        grouped_summary
            .to_string()
            .contains("group_imap_server_cpu_pct"),
        "the summary names the group"
    );
    let report = std::fs::read_to_string(grouped.join("report.html")).unwrap();
    assert!(
        report.contains("CPU Time - imap_server"),
        "the report shows the group"
    );
    assert!(
        !report.contains("CPU Time - dovecot"),
        "no lab rows in the report"
    );

    // No group: only peakhour itself, no Dovecot or Postfix rows.
    let bare = out.path().join("bare");
    explicit(&bare, &[]);
    let monitor = std::fs::read_to_string(bare.join("monitor.csv")).unwrap();
    let header = monitor.lines().next().unwrap();
    assert!(!header.contains("group_dovecot"), "{header}");
    assert!(!header.contains("group_postfix"), "{header}");
    let report = std::fs::read_to_string(bare.join("report.html")).unwrap();
    assert!(
        !report.contains("CPU Time - dovecot") && !report.contains("CPU Time - postfix"),
        "no lab rows in the report"
    );
}

/// Dovecot 2.3's own list after login, less MOVE (and the extensions
/// peakhour does not use): what a server without MOVE offers.
const WITHOUT_MOVE: &str = "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT \
     THREAD=REFERENCES MULTIAPPEND UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED \
     I18NLEVEL=1 ESEARCH SEARCHRES LIST-STATUS BINARY LITERAL+ SPECIAL-USE";

/// A run of a few seconds: enough for every user to try to log on.
const QUICK_RUN: [&str; 12] = [
    "--profile",
    "mmb-medium",
    "--speed",
    "400",
    "--duration",
    "6s",
    "--ramp-up",
    "1s",
    "--drain",
    "2s",
    "--interval",
    "2s",
];

/// The one example of the run's errors of `kind` in `action`, checked to
/// read the same in the summary, errors.csv, the terminal and the report.
fn the_example(run_dir: &Path, stdout: &str, action: &str, kind: &str) -> String {
    let summary = summary(run_dir);
    let groups = summary["error_groups"].as_array().unwrap();
    let group = groups
        .iter()
        .find(|g| g["action"] == action && g["kind"] == kind)
        .unwrap_or_else(|| panic!("{action}/{kind} in {groups:?}"));
    let example = group["example"].as_str().unwrap().to_owned();
    let errors = std::fs::read_to_string(run_dir.join("errors.csv")).unwrap();
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        errors.contains(&example.replace('"', "\"\"")),
        "{example} in errors.csv:\n{errors}"
    );
    assert!(
        stdout.contains(&example),
        "{example} on the terminal:\n{stdout}"
    );
    let escaped = example
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    assert!(report.contains(&escaped), "{example} in the report");
    example
}

#[test]
fn issue_12_without_move_the_fallback_is_recorded_and_refusals_name_their_object() {
    let (_dir, lab) = start_lab_configured(6, |config| {
        config.namespace = Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        };
        config.imap_capability = Some(WITHOUT_MOVE.into());
    });
    let status = lab.status.clone();
    let lab_dir = status.dir.clone();
    let out = tempfile::tempdir().unwrap();

    // Moves and deletes on a server without MOVE: COPY, STORE and EXPUNGE,
    // recorded as such, and the server's list says why.
    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success(), "init failed");
    let lab_run = out.path().join("no-move");
    let mut args = vec![
        "run",
        "--lab-dir",
        &lab_dir,
        "--out",
        lab_run.to_str().unwrap(),
    ];
    args.extend(SHORT_RUN);
    peakhour(&args);
    let no_move = summary(&lab_run);
    assert_all_measured_nothing_lost(&no_move);
    let offered = no_move["server_capabilities"]["imap"].as_array().unwrap();
    assert!(offered.iter().all(|c| c != "MOVE"), "{offered:?}");
    assert!(offered.iter().any(|c| c == "UIDPLUS"), "{offered:?}");
    let commands = &no_move["commands"];
    assert!(
        commands["imap.UID COPY+STORE+EXPUNGE"]["count"]
            .as_u64()
            .unwrap()
            >= no_move["actions"]["move"]["count"].as_u64().unwrap(),
        "{commands}"
    );
    assert!(commands.get("imap.UID MOVE").is_none(), "{commands}");

    // The same server refuses a folder outside its namespace, in words
    // that do not name it: the example does, with the login and the
    // server's text once.
    let imap_url = format!("imap://{}", status.endpoints.imap);
    let smtp_url = format!("smtp://{}", status.endpoints.smtp_noauth.clone().unwrap());
    let explicit = |dir: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--target",
            "explicit",
            "--imap",
            &imap_url,
            "--smtp",
            &smtp_url,
            "--smtp-auth",
            "none",
            "--out",
            dir.to_str().unwrap(),
        ];
        args.extend(QUICK_RUN);
        args.extend(extra);
        let output = Command::new(common::PEAKHOUR)
            .args(&args)
            .env("PEAKHOUR_PASSWORD", &status.password)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        stdout
    };
    let top_level = out.path().join("top-level");
    let stdout = explicit(&top_level, &["--users", "2", "--folder-prefix", ""]);
    let example = the_example(&top_level, &stdout, "logon", "imap:no");
    let (login, text) = example
        .strip_prefix("as ")
        .and_then(|e| e.split_once(": CREATE refused: NO "))
        .unwrap_or_else(|| panic!("{example}"));
    assert!(
        login == "user1@bench.test" || login == "user2@bench.test",
        "{example}"
    );
    let server_text = text
        .strip_suffix(" (folder \"Calendar\")")
        .unwrap_or_else(|| panic!("the folder named: {example}"));
    assert!(
        !server_text.is_empty() && !server_text.contains("Calendar"),
        "{example}"
    );

    // A login refused during the run (the first user's passes the check
    // before the run): the login sent and the server's text, once.
    let users = out.path().join("users.csv");
    std::fs::write(
        &users,
        format!(
            "user1@bench.test,{},user1@bench.test\nuser2@bench.test,wrong,user2@bench.test\n",
            status.password
        ),
    )
    .unwrap();
    let refused = out.path().join("refused");
    let stdout = explicit(
        &refused,
        &["--users", "2", "--users-file", users.to_str().unwrap()],
    );
    assert_eq!(
        the_example(&refused, &stdout, "logon", "imap:no"),
        "as user2@bench.test: LOGIN refused: NO Authentication failed."
    );
}
