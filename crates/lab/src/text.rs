//! The lab's reports for people: `lab up`'s endpoints, `lab status` and
//! `lab down`, as the commands print them (`--json` prints the types instead).

use std::fmt::Write as _;
use std::path::Path;

use crate::check::CheckLine;
use crate::lifecycle::{DownReport, UpReport};
use crate::state::LabStatus;

impl LabStatus {
    /// Where to connect, the users, the CA, and the namespace and caps if set.
    pub fn endpoints_text(&self) -> String {
        let e = &self.endpoints;
        let mut out = format!(
            "  smtp         {}   (Postfix: STARTTLS, AUTH PLAIN/LOGIN)\n",
            e.smtp
        );
        if let Some(noauth) = &e.smtp_noauth {
            out.push_str(&format!(
                "  smtp_noauth  {noauth}   (Postfix: no AUTH, no STARTTLS; loopback clients only)\n"
            ));
        }
        let store = match self.mail_server {
            crate::MailServer::Dovecot => "Dovecot",
            crate::MailServer::Cyrus => "Cyrus",
        };
        let lines = [
            format!("  submissions  {}   (Postfix: implicit TLS)", e.submissions),
            format!("  imap         {}   ({store}: STARTTLS)", e.imap),
            format!("  imaps        {}   ({store}: implicit TLS)", e.imaps),
            format!("  pop3         {}   ({store}: STLS)", e.pop3),
            format!("  lmtp         {}   ({store})", e.lmtp),
        ];
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(caldav) = &e.caldav {
            let how = if self.mail_server == crate::MailServer::Cyrus {
                "Cyrus: HTTP, Basic auth as userN@domain; schedules invitations"
            } else {
                "Radicale: HTTP, Basic auth as userN; home /userN/"
            };
            let _ = writeln!(out, "  caldav       {caldav}   ({how})");
        }
        if let Some(jmap) = &e.jmap {
            let _ = writeln!(
                out,
                "  jmap         {jmap}   (Cyrus: HTTP, Basic auth as userN@domain; session /.well-known/jmap)"
            );
        }
        if let Some(smb) = &e.smb {
            let _ = writeln!(
                out,
                "  smb          {smb}   (Samba: sign in as userN; a directory per user)"
            );
        }
        let lines = [
            format!(
                "  users        user1 ... user{} @{} ({}); password: peakhour lab status --json",
                self.users,
                self.domain,
                match self.mail_server {
                    crate::MailServer::Dovecot => format!("{} storage", self.storage),
                    crate::MailServer::Cyrus => "Cyrus".to_owned(),
                }
            ),
            format!("  TLS CA       {}", self.ca_file),
        ];
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        if !self.namespace.prefix.is_empty() || self.namespace.separator != '/' {
            out.push_str(&format!(
                "  namespace    prefix {:?}, separator {:?}\n",
                self.namespace.prefix, self.namespace.separator
            ));
        }
        self.limits_text(&mut out);
        out
    }

    /// Health, each server and its processes, each port, and the caps with
    /// what the capped servers have used.
    pub fn status_text(&self) -> String {
        let health = if self.healthy {
            "healthy"
        } else {
            "NOT healthy"
        };
        let mut out = format!("lab {}: {health}\n", self.dir);
        if !self.with.is_empty() {
            let with: Vec<&str> = self.with.iter().map(|s| s.as_str()).collect();
            let _ = writeln!(out, "  with     {}", with.join(", "));
        }
        for server in &self.servers {
            let state = match (server.running, server.master_pid) {
                (true, Some(pid)) => format!("running (master pid {pid})"),
                (false, Some(pid)) => format!("not running (master pid {pid} is gone)"),
                (_, None) => "not started".to_owned(),
            };
            let _ = writeln!(out, "  {:<8} {state}", server.name);
            for process in &server.processes {
                let _ = writeln!(out, "             pid {:<8} {}", process.pid, process.name);
            }
        }
        for port in &self.ports {
            let mark = if port.answers { "ok  " } else { "DOWN" };
            let (service, address) = (&port.service, &port.address);
            let _ = writeln!(out, "  {mark} {service:<12} {address:<16} {}", port.detail);
        }
        self.limits_text(&mut out);
        if let Some(cgroup) = &self.limits.cgroup {
            let cpu = cgroup
                .cpu_usage_ns()
                .map_or_else(|| "?".to_owned(), |ns| format!("{:.2} s", ns as f64 / 1e9));
            let memory = cgroup.memory_usage_bytes().map_or_else(
                || "?".to_owned(),
                |b| format!("{:.1} MiB", b as f64 / 1_048_576.0),
            );
            let _ = writeln!(out, "  used         CPU {cpu} in all, memory {memory} now");
        }
        out
    }

    /// The caps and the cgroup that enforces them, if the lab is shaped.
    fn limits_text(&self, out: &mut String) {
        let limits = &self.limits;
        if limits.cpus.is_none() && limits.memory_bytes.is_none() {
            return;
        }
        let cpus = limits
            .cpus
            .map_or_else(|| "no CPU cap".to_owned(), |c| format!("{c} CPUs"));
        let memory = limits.memory_bytes.map_or_else(
            || "no memory cap".to_owned(),
            |b| format!("{:.0} MiB of memory", b as f64 / 1_048_576.0),
        );
        let _ = writeln!(out, "  limits       {cpus}, {memory}");
        if let Some(cgroup) = &limits.cgroup {
            let dirs = cgroup.dirs.join(", ");
            let _ = writeln!(
                out,
                "  cgroup       {} ({}): {dirs}",
                cgroup.name, cgroup.version
            );
        }
    }
}

impl UpReport {
    /// What `up` did and where to connect (warnings are the caller's to show).
    pub fn text(&self) -> String {
        let mut out = String::new();
        if self.cleaned_up > 0 {
            let _ = writeln!(
                out,
                "cleaned up {} processes left by an earlier lab",
                self.cleaned_up
            );
        }
        let dir = &self.status.dir;
        if self.already_running {
            let _ = writeln!(out, "lab already up in {dir}");
        } else {
            let seconds = self.elapsed.as_secs_f64();
            let _ = writeln!(out, "lab up in {dir} ({seconds:.2} s)");
        }
        out.push_str(&self.status.endpoints_text());
        out
    }
}

/// One line of `lab check` as it is printed: a server, or a step's time in ms.
impl std::fmt::Display for CheckLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckLine::Server(server) => f.write_str(server),
            CheckLine::Step { what, elapsed } => {
                write!(f, "  {:>8.2} ms  {what}", elapsed.as_secs_f64() * 1000.0)
            }
        }
    }
}

impl DownReport {
    /// What `down` stopped, killed, removed and kept in the lab `dir`
    /// (warnings are the caller's to show).
    pub fn text(&self, dir: &Path) -> String {
        let dir = dir.display();
        let mut out = if self.stopped.is_empty() {
            format!("lab in {dir} was not running\n")
        } else {
            format!(
                "stopped {} ({} leftover processes killed)\n",
                self.stopped.join(" and "),
                self.killed
            )
        };
        if let Some(purge) = &self.purge {
            let removed = purge.removed.len();
            let _ = writeln!(
                out,
                "removed what the lab made in {dir} ({removed} entries)"
            );
            if purge.removed_dir {
                let _ = writeln!(out, "removed {dir}");
            }
            for kept in &purge.kept {
                let _ = writeln!(out, "kept {} (not made by the lab)", kept.display());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_check_line_is_a_server_or_a_step_in_milliseconds_right_aligned() {
        let server = CheckLine::Server("SMTP 127.0.0.1:10025".into());
        assert_eq!(server.to_string(), "SMTP 127.0.0.1:10025");
        let step = CheckLine::Step {
            what: "EHLO".into(),
            elapsed: Duration::from_micros(1_234),
        };
        assert_eq!(step.to_string(), "      1.23 ms  EHLO");
    }
}
