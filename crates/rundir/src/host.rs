//! Facts about the client host and the server software, for the report's
//! full disclosure: collected once per run directory into `host.json`.
//!
//! Everything here is best effort: a fact that cannot be read is left out
//! and the report says "not recorded". Nothing here reads credentials.

use std::time::Duration;

use peakhour_analysis::Redactor;
use peakhour_report::{HostFacts, ServerSoftware};

use crate::config::TargetSection;
use crate::probe::{BoundedConnection, Deadline, ProbeStop, announces_literal};

/// How long the probe of every server of a run may take, all together
/// (connecting, writing and every read): a hostile server holds it no
/// longer than this.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(5);

/// Collects the client host's CPU, memory, kernel and OS, and the server
/// software: greetings and IMAP ID of the run's targets (`[target]` of
/// config.toml), read through the bounded probe ([`crate::probe`]) within
/// [`PROBE_DEADLINE`] all together, with the run's passwords taken out by
/// `redactor`, and, when the target is a lab, the Debian packages of its
/// servers installed here. Only `peakhour run` calls it, once its results
/// are on disk: a report never connects to a server.
pub fn collect(target: Option<&TargetSection>, redactor: &Redactor) -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mut facts = HostFacts {
        collected_at: Some(crate::names::rfc3339(std::time::SystemTime::now())),
        cpu_model: cpu_model(&cpuinfo),
        cpu_cores: cpu_cores(&cpuinfo),
        memory_kb: mem_total_kb(&meminfo),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty()),
        os: std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| os_name(&t)),
        servers: Vec::new(),
    };
    if let Some(target) = target {
        let deadline = Deadline::after(PROBE_DEADLINE);
        facts
            .servers
            .extend(imap_greeting(&target.imap, deadline, redactor));
        facts
            .servers
            .extend(smtp_greeting(&target.smtp, deadline, redactor));
    }
    // A package installed here is the target's software only when the
    // target is a lab on this host and its greeting names the package: a
    // lab beside a run against another server is not that server, even
    // when both greet as Dovecot.
    if target.is_some_and(|t| t.lab.is_some()) {
        let greetings: String = facts
            .servers
            .iter()
            .map(|s| s.software.to_ascii_lowercase())
            .collect();
        facts.servers.extend(
            packages()
                .into_iter()
                .filter(|p| names_package(&greetings, &p.software)),
        );
    }
    facts
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_owned())
        })
        .filter(|s| !s.is_empty())
}

fn cpu_cores(cpuinfo: &str) -> Option<u32> {
    let n = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    u32::try_from(n).ok().filter(|n| *n > 0)
}

fn mem_total_kb(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemTotal:")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn os_name(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|l| {
        l.strip_prefix("PRETTY_NAME=")
            .map(|v| v.trim().trim_matches('"').to_owned())
    })
}

/// `host:port` of a plain-text endpoint as config.toml records it
/// (`127.0.0.1:10143`, `... (STARTTLS)`); `None` for implicit TLS, whose
/// greeting is only readable after a handshake.
fn plain_endpoint(recorded: &str) -> Option<&str> {
    let (addr, mode) = match recorded.split_once(' ') {
        Some((a, m)) => (a, m),
        None => (recorded, ""),
    };
    (!mode.contains("(TLS)")).then_some(addr)
}

/// Keeps only printable text, at most 200 characters, with the run's
/// passwords taken out (a server may say anything in its greeting).
fn clean(line: &str, redactor: &Redactor) -> String {
    let text: String = line
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    redactor.redact(&text)
}

/// The IMAP greeting, and the server's ID (RFC 2971) when it answers one;
/// what was read before the probe stopped (its deadline, a cap, a literal).
fn imap_greeting(recorded: &str, deadline: Deadline, redactor: &Redactor) -> Vec<ServerSoftware> {
    let mut found = Vec::new();
    let Some(addr) = plain_endpoint(recorded) else {
        return found;
    };
    let _stopped = imap_probe(addr, deadline, redactor, &mut found);
    found
}

fn imap_probe(
    addr: &str,
    deadline: Deadline,
    redactor: &Redactor,
    found: &mut Vec<ServerSoftware>,
) -> Result<(), ProbeStop> {
    let mut server = BoundedConnection::connect(addr, deadline)?;
    server.start_reply();
    let line = server.line()?;
    // The greeting's text after the response code: "* OK [CAPABILITY ...] Dovecot (Debian) ready."
    let greeting = clean(&line, redactor);
    let text = greeting
        .rsplit_once(']')
        .map_or(greeting.as_str(), |(_, t)| t)
        .trim()
        .to_owned();
    found.push(ServerSoftware {
        service: format!("imap {addr}"),
        software: text,
        source: "greeting".into(),
    });
    if announces_literal(&line) {
        return Ok(());
    }
    server.send(b"ph1 ID NIL\r\n")?;
    server.start_reply();
    loop {
        let line = server.line()?;
        // A literal is never read: what it holds is not worth its size.
        let literal = announces_literal(&line);
        if let Some(id) = line.strip_prefix("* ID ").filter(|_| !literal) {
            found.push(ServerSoftware {
                service: format!("imap {addr}"),
                software: clean(id, redactor),
                source: "IMAP ID".into(),
            });
        }
        if literal || line.starts_with("ph1 ") {
            break;
        }
    }
    server.send(b"ph2 LOGOUT\r\n")
}

/// The SMTP greeting's first line, e.g. `220 host ESMTP Postfix (Debian/GNU)`.
fn smtp_greeting(recorded: &str, deadline: Deadline, redactor: &Redactor) -> Vec<ServerSoftware> {
    let Some(addr) = plain_endpoint(recorded) else {
        return Vec::new();
    };
    let Ok(mut server) = BoundedConnection::connect(addr, deadline) else {
        return Vec::new();
    };
    server.start_reply();
    let Ok(line) = server.line() else {
        return Vec::new();
    };
    // Read the rest of a multi-line greeting before saying goodbye, as far
    // as the reply's caps and the deadline allow.
    let mut rest = line.clone();
    while rest.as_bytes().get(3) == Some(&b'-') {
        match server.line() {
            Ok(next) => rest = next,
            Err(_) => break,
        }
    }
    let _ = server.send(b"QUIT\r\n");
    let text = clean(&line, redactor);
    let text = text.get(4..).unwrap_or(&text).to_owned();
    vec![ServerSoftware {
        service: format!("smtp {addr}"),
        software: text,
        source: "greeting".into(),
    }]
}

/// Whether the greetings (lower-cased) name the package `software`
/// (`dovecot-core 1:2.3.19.1` is named by `Dovecot ready.`).
fn names_package(greetings: &str, software: &str) -> bool {
    let name = software.split([' ', '-']).next().unwrap_or_default();
    !name.is_empty() && greetings.contains(&name.to_ascii_lowercase())
}

/// Versions of the lab's server packages installed on this host.
fn packages() -> Vec<ServerSoftware> {
    let output = std::process::Command::new("dpkg-query")
        .args([
            "-W",
            "-f=${Package} ${Version}\\n",
            "dovecot-core",
            "postfix",
        ])
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| l.split_whitespace().count() == 2)
        .map(|l| ServerSoftware {
            service: "package (this host)".into(),
            software: clean(l, &Redactor::default()),
            source: "dpkg-query".into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_packages_count_only_when_the_target_greets_with_their_name() {
        let greetings = "* ok dovecot ready. mx.example esmtp exim 4.96";
        assert!(names_package(greetings, "dovecot-core 1:2.3.19.1"));
        assert!(!names_package(greetings, "postfix 3.7.11"));
        assert!(!names_package("", "postfix 3.7.11"));
    }

    #[test]
    fn proc_facts_parse() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_cores(cpuinfo), Some(2));
        assert_eq!(
            mem_total_kb("MemTotal:       24589112 kB\nMemFree: 1 kB\n"),
            Some(24_589_112)
        );
        assert_eq!(
            os_name("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }

    #[test]
    fn implicit_tls_endpoints_are_not_greeted() {
        assert_eq!(plain_endpoint("127.0.0.1:10143"), Some("127.0.0.1:10143"));
        assert_eq!(
            plain_endpoint("127.0.0.1:10143 (STARTTLS)"),
            Some("127.0.0.1:10143")
        );
        assert_eq!(plain_endpoint("127.0.0.1:10993 (TLS)"), None);
    }
}
