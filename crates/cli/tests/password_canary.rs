//! Issue 11: credentials never appear in results, logs or reports, and TLS
//! shortcuts are loud. A short run against the lab as an explicit target
//! (the password given only in the environment, SMTP AUTH after STARTTLS
//! with certificate checks skipped), then every file of the run directory,
//! the run's stdout and stderr, `lab status` in both forms, `report`'s
//! output and the debug form of the target are searched for the password
//! and for the base64 forms AUTH PLAIN and AUTH LOGIN send it in.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use common::{PEAKHOUR, peakhour, start_lab};
use peakhour_engine::{Account, Credentials, Endpoint, ServerOptions, Target};
use peakhour_net::{Secret, TlsSettings};

/// Standard base64 with padding (RFC 4648), as SASL sends it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The password and every form it takes on the wire for these logins:
/// AUTH LOGIN's base64 of it, and AUTH PLAIN's (IMAP AUTHENTICATE PLAIN
/// too) with an empty and with a repeated authorization identity.
fn canaries(password: &str, logins: &[String]) -> Vec<String> {
    let mut forms = vec![password.to_owned(), base64(password.as_bytes())];
    for login in logins {
        forms.push(base64(format!("\0{login}\0{password}").as_bytes()));
        forms.push(base64(format!("{login}\0{login}\0{password}").as_bytes()));
    }
    forms
}

fn assert_clean(what: &str, text: &str, canaries: &[String]) {
    for canary in canaries {
        assert!(
            !text.contains(canary.as_str()),
            "{what} holds the password (as {canary:?})"
        );
    }
}

fn assert_clean_output(what: &str, output: &Output, canaries: &[String]) {
    assert_clean(
        &format!("{what}: stdout"),
        &String::from_utf8_lossy(&output.stdout),
        canaries,
    );
    assert_clean(
        &format!("{what}: stderr"),
        &String::from_utf8_lossy(&output.stderr),
        canaries,
    );
}

/// Every file under `dir`, read as bytes (lossy text).
fn assert_clean_tree(dir: &Path, canaries: &[String]) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files += assert_clean_tree(&path, canaries);
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert_clean(&path.display().to_string(), &text, canaries);
            files += 1;
        }
    }
    files
}

#[test]
fn issue_11_the_password_appears_in_no_output_and_skipped_tls_checks_are_loud() {
    let users = 4;
    let (_dir, lab) = start_lab(users);
    let status = &lab.status;
    let password = status.password.clone();
    let logins: Vec<String> = (1..=users)
        .map(|n| format!("user{n}@{}", status.domain))
        .collect();
    let canaries = canaries(&password, &logins);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let imap = format!("imap://{}", status.endpoints.imap);
    let smtp = format!("smtp+starttls://{}", status.endpoints.smtp);
    let run = Command::new(PEAKHOUR)
        .args(["run", "--profile", "mmb-medium", "--target", "explicit"])
        .args([
            "--imap",
            &imap,
            "--smtp",
            &smtp,
            "--insecure-skip-tls-verify",
        ])
        .args([
            "--users",
            "4",
            "--speed",
            "400",
            "--duration",
            "6s",
            "--ramp-up",
            "1s",
        ])
        .args(["--interval", "2s", "--drain", "2s", "--out"])
        .arg(&run_dir)
        .env("PEAKHOUR_PASSWORD", &password)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.code().is_some_and(|c| c <= 1), "{stderr}");

    // Loud: on stderr, in config.toml, summary.json and the report.
    assert!(
        stderr.contains("warning: TLS certificates were not verified"),
        "{stderr}"
    );
    let config = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(config.contains("security_shortcuts"), "{config}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let shortcuts = summary["security_shortcuts"].as_array().unwrap();
    assert_eq!(
        shortcuts.len(),
        1,
        "loopback is not warned about: {shortcuts:?}"
    );
    assert!(
        shortcuts[0]
            .as_str()
            .unwrap()
            .contains("--insecure-skip-tls-verify")
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Security shortcut:"));

    // Quiet about the password: everywhere.
    assert_clean_output("run", &run, &canaries);
    let report = peakhour(&["report", run_dir.to_str().unwrap(), "--format", "json"]);
    assert!(report.status.success());
    assert_clean_output("report", &report, &canaries);
    let files = assert_clean_tree(&run_dir, &canaries);
    assert!(files >= 8, "only {files} files in the run directory");

    let lab_text = peakhour(&["lab", "status", "--lab-dir", &status.dir]);
    assert_clean_output("lab status", &lab_text, &canaries);
    // The JSON form is for scripts on the lab's own machine and names the
    // lab's generated password in its `password` field (schemas/
    // lab-status.schema.json); nowhere else.
    let lab_json = peakhour(&["lab", "status", "--lab-dir", &status.dir, "--json"]);
    let mut json: serde_json::Value = serde_json::from_slice(&lab_json.stdout).unwrap();
    assert_eq!(json["password"], password.as_str());
    json.as_object_mut().unwrap().remove("password");
    assert_clean(
        "lab status --json without `password`",
        &json.to_string(),
        &canaries,
    );
    assert_clean(
        "lab status --json: stderr",
        &String::from_utf8_lossy(&lab_json.stderr),
        &canaries,
    );

    // The debug form of the target, with a shared password and with a users file.
    let tls = TlsSettings::default().client_config().unwrap();
    let mut target = Target {
        imap: Endpoint::parse(&imap, &["imap"]).unwrap(),
        smtp: Endpoint::parse(&smtp, &["smtp"]).unwrap(),
        lmtp: None,
        jmap: None,
        caldav: None,
        pop3: None,
        tls,
        credentials: Credentials::Shared(Secret::new(password.clone())),
        options: ServerOptions::default(),
    };
    assert_clean(
        "the target's debug form",
        &format!("{target:?} {target:#?}"),
        &canaries,
    );
    let file = format!("{},{password},{}\n", logins[0], logins[0]);
    target.credentials = Credentials::PerUser(Account::parse_users(&file).unwrap());
    let target = Arc::new(target);
    assert_clean(
        "the target's debug form (users file)",
        &format!("{target:?} {target:#?}"),
        &canaries,
    );
}
