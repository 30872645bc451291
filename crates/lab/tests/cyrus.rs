//! Issue 14 point 4: the lab with Cyrus IMAP as its mail store
//! (`--mail-server cyrus`), against the real packages: one message through
//! Postfix into Cyrus, read back with independent clients (Python's
//! `smtplib`, `imaplib` and JMAP over `urllib`) and with peakhour's own
//! (`check_mail_path`); wrong passwords refused; `down` stops every process
//! and frees every port; `--purge` removes Cyrus's files.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns panic on failure too

mod common;

use std::net::TcpListener;
use std::process::Command;

use common::{assert_matches_schema, config, lab_processes, scratch_dir};
use peakhour_lab::{LabConfig, LabGuard, MailServer, check_mail_path};

/// Python's own clients: submit over SMTP with AUTH, wait for the message
/// over IMAP, find it over JMAP, and try a wrong password on both.
const INDEPENDENT_CLIENTS: &str = r##"
import base64, imaplib, json, smtplib, sys, time, urllib.error, urllib.request
smtp_port, imap_port, jmap_url, password = sys.argv[1:5]
sender, rcpt = "user1@bench.test", "user2@bench.test"
msg = (f"From: {sender}\r\nTo: {rcpt}\r\nSubject: cyrus lab\r\n"
       "Message-ID: <cyrus-lab-test@bench.test>\r\n\r\nhello cyrus\r\n")
with smtplib.SMTP("127.0.0.1", int(smtp_port)) as s:
    s.login(sender, password)
    s.sendmail(sender, [rcpt], msg)
imap = imaplib.IMAP4("127.0.0.1", int(imap_port))
imap.login(rcpt, password)
for _ in range(150):
    imap.select("INBOX")
    found = imap.search(None, "HEADER", "Message-ID", "cyrus-lab-test")[1][0].split()
    if found:
        break
    time.sleep(0.1)
print("imap found", len(found))
imap.logout()
def jmap(path, body=None, pw=password):
    auth = "Basic " + base64.b64encode(f"{rcpt}:{pw}".encode()).decode()
    data = json.dumps(body).encode() if body else None
    req = urllib.request.Request(jmap_url.rstrip("/") + path, data=data,
        headers={"Authorization": auth, "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))
session = jmap("/jmap/")
account = session["primaryAccounts"]["urn:ietf:params:jmap:mail"]
print("jmap submission", "urn:ietf:params:jmap:submission" in session["accounts"][account]["accountCapabilities"])
using = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"]
r = jmap(session["apiUrl"], {"using": using, "methodCalls": [
    ["Email/query", {"accountId": account, "filter": {"header": ["Message-ID", "cyrus-lab-test"]}}, "0"],
    ["Email/get", {"accountId": account, "#ids": {"resultOf": "0", "name": "Email/query", "path": "/ids"},
                   "properties": ["subject"]}, "1"]]})
print("jmap subjects", [e["subject"] for e in r["methodResponses"][1][1]["list"]])
try:
    jmap("/jmap/", pw="wrong")
    print("jmap wrong password accepted")
except urllib.error.HTTPError as e:
    print("jmap wrong password", e.code)
try:
    imaplib.IMAP4("127.0.0.1", int(imap_port)).login(rcpt, "wrong")
    print("imap wrong password accepted")
except imaplib.IMAP4.error:
    print("imap wrong password refused")
"##;

fn cyrus_config(dir: &std::path::Path, users: u32) -> LabConfig {
    LabConfig {
        mail_server: MailServer::Cyrus,
        ..config(dir, users)
    }
}

#[test]
fn issue_14_a_cyrus_lab_serves_imap_pop3_and_jmap_behind_postfix_and_goes_with_down() {
    let dir = scratch_dir();
    let config = cyrus_config(dir.path(), 3);
    let lab = LabGuard::start(&config).unwrap();
    let status = &lab.status;
    assert!(status.healthy, "{status:#?}");
    assert_matches_schema(status);
    let json = serde_json::to_value(status).unwrap();
    assert_eq!(json["mail_server"], "cyrus");
    let jmap = format!("http://127.0.0.1:{}/", config.ports.jmap);
    assert_eq!(status.endpoints.jmap.as_deref(), Some(jmap.as_str()));
    let names: Vec<&str> = status.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cyrus", "postfix"]);
    let cyrus = &status.servers[0];
    for service in ["imapd", "lmtpd", "httpd"] {
        assert!(
            cyrus.processes.iter().any(|p| p.name == service),
            "no {service} among Cyrus's processes: {cyrus:?}"
        );
    }

    let said = Command::new("python3")
        .args(["-c", INDEPENDENT_CLIENTS])
        .arg(config.ports.smtp.to_string())
        .arg(config.ports.imap.to_string())
        .arg(&jmap)
        .arg(&status.password)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&said.stderr)
    );
    assert!(out.contains("imap found 1"), "{out}");
    assert!(out.contains("jmap submission True"), "{out}");
    assert!(out.contains("jmap subjects ['cyrus lab']"), "{out}");
    assert!(out.contains("jmap wrong password 401"), "{out}");
    assert!(out.contains("imap wrong password refused"), "{out}");

    // peakhour's own clients: SMTP in (with STARTTLS), IMAP and POP3 out.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut steps = 0;
    let size = runtime
        .block_on(check_mail_path(status, 3, true, &mut |_| steps += 1))
        .unwrap();
    assert!(size > 0 && steps > 5, "{size} bytes, {steps} steps");

    let pids = lab_processes(&lab.lab().status().unwrap());
    let report = lab.lab().down(false).unwrap();
    assert_eq!(report.stopped, ["postfix", "cyrus"]);
    assert!(report.remaining.is_empty(), "{report:?}");
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z "),
            "lab process {pid} survived `down`"
        );
    }
    for (service, port) in config.services() {
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "{service} port {port} still taken after down"
        );
    }
    let purged = lab.lab().down(true).unwrap().purge.unwrap();
    assert!(
        purged
            .removed
            .contains(&dir.path().canonicalize().unwrap().join("cyrus")),
        "{purged:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn issue_14_cyrus_refuses_a_namespace_it_cannot_play() {
    let mut config = cyrus_config(std::path::Path::new("/nonexistent"), 1);
    config.namespace.prefix = "INBOX/".into();
    let error = config.validate().unwrap_err();
    assert!(error.contains("Cyrus offers"), "{error}");
}
