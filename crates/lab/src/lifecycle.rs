//! `up`, `down` and `status`: the lab's lifecycle.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::Rng as _;
use rand::distr::Alphanumeric;

use crate::cgroup::{LabCgroup, group_name};
use crate::dir::{self, PurgeReport};
use crate::probe::{self, PortProbe};
use crate::process::{ProcessId, ProcessInfo, Recognised, spawn_in_new_session};
use crate::server::Server;
use crate::state::{ComponentStatus, Endpoints, LabState, LabStatus, LimitsStatus};
use crate::{
    LabConfig, LabError, Layout, MAIL_UID, MailServer, OptionalServer, cyrus, prerequisites,
    radicale, render, samba, tls,
};

/// How long `up` waits for every endpoint to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `down` lets a server stop by itself before killing what is left.
/// Dovecot's master takes about a second to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What `up` did.
#[derive(Debug, Clone)]
pub struct UpReport {
    /// The lab as it is now.
    pub status: LabStatus,
    /// True if it was already up and nothing was started.
    pub already_running: bool,
    /// Processes left over from a crashed lab that were stopped first.
    pub cleaned_up: usize,
    /// Wall time of the whole `up`.
    pub elapsed: Duration,
    /// Things that work but will distort measurements, for the user to read.
    pub warnings: Vec<String>,
}

/// What `down` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownReport {
    /// Masters that were running and were stopped.
    pub stopped: Vec<String>,
    /// Processes that ignored SIGTERM (or outlived a crashed master) and were killed.
    pub killed: usize,
    /// Lab processes still alive afterwards (should be empty).
    pub remaining: Vec<i32>,
    /// Processes `state.json` named that are not the lab's (another command
    /// line, or not a server's executable): left alone, and said why.
    pub not_ours: Vec<String>,
    /// Things that did not go as they should but did not stop `down`.
    pub warnings: Vec<String>,
    /// What `--purge` removed and kept, if it ran.
    pub purge: Option<PurgeReport>,
}

/// The lab in one directory.
#[derive(Debug, Clone)]
pub struct Lab {
    layout: Layout,
}

impl Lab {
    /// The lab in `dir` (which need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Lab {
            layout: Layout::new(dir),
        }
    }

    /// Where its files are.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Starts the lab as `config` describes (its `dir` is ignored in favour of
    /// this lab's). Harmless if the lab is already up with the same settings.
    pub fn up(config: &LabConfig) -> Result<UpReport, LabError> {
        let started = Instant::now();
        prerequisites::check(config.mail_server, &config.with)?;
        config.validate().map_err(LabError::BadConfig)?;
        if let Some(port) = config.ports.duplicate() {
            return Err(LabError::DuplicatePort(port));
        }
        // A new, empty or lab-made directory only, never a link; and the
        // servers are configured with its absolute path.
        let dir = dir::claim(&config.dir)?;
        let config = LabConfig {
            dir: dir.clone(),
            ..config.clone()
        };
        let lab = Lab::new(&dir);
        let layout = lab.layout.clone();
        let previous = LabState::load(&layout.state_file())?;

        let mut cleaned_up = 0;
        let mut warnings = Vec::new();
        if let Some(state) = &previous {
            let all_running = state.masters().count() == servers(&state.config).len()
                && state
                    .masters()
                    .all(|(server, p)| p.recognise(&lab.command(server)) == Recognised::Running);
            if all_running {
                if settings(&state.config) != settings(&config) {
                    return Err(LabError::RunningWithOtherSettings {
                        dir,
                        running: describe(&state.config),
                    });
                }
                let status = lab.status()?;
                if status.healthy {
                    return Ok(UpReport {
                        status,
                        already_running: true,
                        cleaned_up: 0,
                        elapsed: started.elapsed(),
                        warnings: Vec::new(),
                    });
                }
            }
            // A half-running or crashed lab: stop what is left, then start afresh.
            let stopped = lab.stop_masters(state);
            cleaned_up = stopped.killed + stopped.stopped.len();
            warnings.extend(stopped.not_ours);
            if let Err(e) = lab.remove_cgroup(state) {
                warnings.push(e.to_string());
            }
        }

        for (service, port) in config.services() {
            if !probe::port_is_free(port) {
                return Err(LabError::PortInUse { service, port });
            }
        }

        let password = previous
            .map(|state| state.password)
            .unwrap_or_else(generate_password);
        prepare_directories(&config, &layout)?;
        warnings.extend(ensure_inotify_instances(config.users));
        tls::ensure_certificates(&layout)?;
        write_configuration(&config, &layout, &password)?;
        create_postfix_queue(&layout)?;
        if config.mail_server == MailServer::Cyrus {
            cyrus::prepare(&config, &layout, &password)?;
        }
        // A Cyrus lab's CalDAV is Cyrus's own httpd; Radicale serves a Dovecot lab.
        if config.runs_radicale() {
            radicale::prepare(&config, &layout, &password)?;
        }
        if config.runs(OptionalServer::Smb) {
            samba::prepare(&config, &layout, &password)?;
        }

        let mut state = LabState {
            config: config.clone(),
            password,
            dovecot: None,
            postfix: None,
            cyrus: None,
            radicale: None,
            samba: None,
            cgroup: None,
        };
        if !config.limits.is_unlimited() {
            let cgroup = LabCgroup::locate(&group_name(&dir))?;
            // Saved before it is made, so that `down` removes it whatever happens next.
            state.cgroup = Some(cgroup.clone());
            state.save(&layout.state_file())?;
            cgroup.create(&config.limits)?;
        }
        if let Err(error) = lab.start_servers(&mut state) {
            // A lab that did not come up leaves nothing running behind it.
            lab.stop_masters(&state);
            let _ = lab.remove_cgroup(&state);
            state.forget_masters();
            state.cgroup = None;
            let _ = state.save(&layout.state_file());
            return Err(error);
        }
        Ok(UpReport {
            status: lab.status()?,
            already_running: false,
            cleaned_up,
            elapsed: started.elapsed(),
            warnings,
        })
    }

    /// Stops every process the lab started and checks that none is left,
    /// then removes the lab's cgroup. With `purge`, also deletes what the lab
    /// made in its directory (mail, queue, password; see [`PurgeReport`]).
    ///
    /// Only processes the lab recognises as its own are signalled: a
    /// `state.json` naming other processes gets them listed in
    /// [`DownReport::not_ours`], never killed.
    pub fn down(&self, purge: bool) -> Result<DownReport, LabError> {
        let lab = self.resolved()?;
        let state_file = lab.layout.state_file();
        let Some(mut state) = LabState::load(&state_file)? else {
            return Err(LabError::NoLab(lab.layout.root().to_owned()));
        };
        let mut report = lab.stop_masters(&state);
        if report.remaining.is_empty() {
            match lab.remove_cgroup(&state) {
                Ok(()) => state.cgroup = None,
                Err(e) => report.warnings.push(e.to_string()),
            }
        }
        state.forget_masters();
        if purge && report.remaining.is_empty() && state.cgroup.is_none() {
            report.purge = Some(dir::purge(lab.layout.root())?);
        } else {
            state.save(&state_file)?;
        }
        Ok(report)
    }

    /// This lab with its directory checked (a real directory, owned by root,
    /// writable by nobody else) and its path made absolute, as `up` wrote it
    /// into the servers' command lines.
    fn resolved(&self) -> Result<Lab, LabError> {
        let root = self.layout.root();
        dir::check_existing(root)?;
        let root = root.canonicalize().map_err(|e| LabError::io(root, e))?;
        Ok(Lab::new(root))
    }

    /// The command line the lab runs `server` with, from this directory.
    fn command(&self, server: Server) -> crate::process::ServerCommand {
        server.command(&self.layout)
    }

    /// Starts Dovecot, then Postfix, then the optional servers, each in its
    /// own session (and in the lab's cgroup, if it has one), and waits until
    /// every endpoint answers.
    /// The state is saved after each start, so that `down` can stop whatever
    /// did start even if this process dies.
    fn start_servers(&self, state: &mut LabState) -> Result<(), LabError> {
        let layout = &self.layout;
        let cgroup_procs = state
            .cgroup
            .as_ref()
            .map(LabCgroup::procs_files)
            .unwrap_or_default();
        for server in servers(&state.config) {
            let launch = self.command(server).launch_argv();
            let Some((program, args)) = launch.split_first() else {
                continue;
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let console = server.console(layout);
            let started = spawn_in_new_session(program, &args, &console, &cgroup_procs)?;
            state.set_master(server, Some(started));
            state.save(&layout.state_file())?;
        }
        self.wait_until_ready(state)?;
        if state.config.mail_server == MailServer::Cyrus {
            cyrus::provision(&state.config, layout, &state.password)?;
        }
        Ok(())
    }

    fn stop_masters(&self, state: &LabState) -> DownReport {
        let mut report = DownReport {
            stopped: Vec::new(),
            killed: 0,
            remaining: Vec::new(),
            not_ours: Vec::new(),
            warnings: Vec::new(),
            purge: None,
        };
        // Postfix first: it stops accepting mail before its delivery target goes.
        for (server, master) in state.masters() {
            let name = server.name();
            let command = self.command(server);
            match master.recognise(&command) {
                Recognised::Foreign(why) => {
                    report.not_ours.push(format!(
                        "{name}: state.json names {why}; it was not started by this lab and was \
                         left alone"
                    ));
                    continue;
                }
                Recognised::Running => report.stopped.push(name.to_owned()),
                Recognised::Gone => {}
            }
            report.killed += master.stop_server(&command, STOP_GRACE);
            report
                .remaining
                .extend(master.server_processes(&command).iter().map(|p| p.pid));
            if server == Server::Samba {
                self.stop_samba_dcerpcd(master, &mut report);
            }
        }
        report
    }

    /// Stops the `samba-dcerpcd` this lab's smbd (`smbd_master`) started,
    /// which lives in a session of its own and outlives smbd.
    fn stop_samba_dcerpcd(&self, smbd_master: ProcessId, report: &mut DownReport) {
        let Some((helper, command)) = samba::dcerpcd(&self.layout, smbd_master) else {
            return;
        };
        report.stopped.push("samba-dcerpcd".to_owned());
        report.killed += helper.stop_server(&command, STOP_GRACE);
        report
            .remaining
            .extend(helper.server_processes(&command).iter().map(|p| p.pid));
    }

    /// Removes the lab's cgroup, if the state names one and it is this lab's.
    fn remove_cgroup(&self, state: &LabState) -> Result<(), LabError> {
        let Some(cgroup) = &state.cgroup else {
            return Ok(());
        };
        let name = group_name(self.layout.root());
        if !cgroup.is_named(&name) {
            return Err(LabError::Cgroup(format!(
                "state.json names the cgroup {:?}, which is not this lab's ({name}); left alone",
                cgroup.dirs()
            )));
        }
        cgroup.remove()
    }

    /// Reports every server process and probes every endpoint.
    pub fn status(&self) -> Result<LabStatus, LabError> {
        let lab = self.resolved()?;
        let Some(state) = LabState::load(&lab.layout.state_file())? else {
            return Err(LabError::NoLab(lab.layout.root().to_owned()));
        };
        let config = &state.config;
        let servers: Vec<ComponentStatus> = servers(config)
            .into_iter()
            .map(|server| lab.component_status(server, state.master(server)))
            .collect();
        let ports = probe_all(config, Duration::from_secs(2));
        let healthy = servers.iter().all(|s| s.running) && ports.iter().all(|p| p.answers);
        let name = group_name(lab.layout.root());
        let cgroup = state
            .cgroup
            .as_ref()
            .filter(|c| c.is_named(&name))
            .map(|c| c.status(&name));
        Ok(LabStatus {
            healthy,
            dir: lab.layout.root().display().to_string(),
            domain: config.domain.clone(),
            users: config.users,
            password: state.password.clone(),
            mail_server: config.mail_server,
            storage: config.storage,
            namespace: config.namespace.clone(),
            limits: LimitsStatus {
                cpus: config.limits.cpus(),
                memory_bytes: config.limits.memory_bytes,
                cgroup,
            },
            with: config.with.clone(),
            endpoints: Endpoints::of(config),
            ca_file: lab.layout.ca_cert().display().to_string(),
            servers,
            ports,
        })
    }

    /// One server's master and processes; Samba's include the
    /// `samba-dcerpcd` its smbd started, which runs in a session of its own.
    fn component_status(&self, server: Server, master: Option<ProcessId>) -> ComponentStatus {
        let command = self.command(server);
        let mut processes: Vec<ProcessInfo> = master
            .map(|p| p.server_processes(&command))
            .unwrap_or_default();
        if server == Server::Samba
            && let Some((helper, helper_command)) =
                master.and_then(|m| samba::dcerpcd(&self.layout, m))
        {
            processes.extend(helper.server_processes(&helper_command));
        }
        ComponentStatus {
            name: server.name().to_owned(),
            master_pid: master.map(|p| p.pid),
            running: master.is_some_and(|p| p.recognise(&command) == Recognised::Running),
            processes,
        }
    }

    fn wait_until_ready(&self, state: &LabState) -> Result<(), LabError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            for (server, master) in state.masters() {
                if !master.is_alive() {
                    return Err(self.server_failed(server));
                }
            }
            let probes = probe_all(&state.config, Duration::from_millis(500));
            if probes.iter().all(|p| p.answers) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let detail = probes
                    .iter()
                    .filter(|p| !p.answers)
                    .map(|p| format!("{} {} ({})", p.service, p.address, p.detail))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(LabError::NotReady {
                    seconds: READY_TIMEOUT.as_secs(),
                    detail,
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn server_failed(&self, server: Server) -> LabError {
        let console = server.console(&self.layout);
        let log = server.log(&self.layout);
        let logs = if console == log {
            vec![tail(&log)]
        } else {
            vec![tail(&console), tail(&log)]
        };
        let reason = logs.into_iter().flatten().collect::<Vec<_>>().join("\n");
        LabError::ServerFailed {
            server: server.title(),
            reason: if reason.is_empty() {
                "it exited at once".into()
            } else {
                reason
            },
            log,
        }
    }
}

/// A running lab that is stopped when dropped: for tests and benchmarks.
#[derive(Debug)]
pub struct LabGuard {
    lab: Lab,
    /// The lab as it was once up.
    pub status: LabStatus,
}

impl LabGuard {
    /// Starts a lab as `config` says.
    pub fn start(config: &LabConfig) -> Result<LabGuard, LabError> {
        let report = Lab::up(config)?;
        Ok(LabGuard {
            lab: Lab::new(&report.status.dir),
            status: report.status,
        })
    }

    /// The lab handle.
    pub fn lab(&self) -> &Lab {
        &self.lab
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = self.lab.down(false);
    }
}

/// The masters a lab with `config` runs, in the order they are started.
fn servers(config: &LabConfig) -> Vec<Server> {
    // A Cyrus lab's CalDAV is its own httpd: no Radicale there.
    let optional = config
        .with
        .iter()
        .filter(|s| **s != OptionalServer::Caldav || config.runs_radicale())
        .map(|s| Server::optional(*s));
    let store = match config.mail_server {
        MailServer::Dovecot => Server::Dovecot,
        MailServer::Cyrus => Server::Cyrus,
    };
    [store, Server::Postfix]
        .into_iter()
        .chain(optional)
        .collect()
}

fn probe_all(config: &LabConfig, timeout: Duration) -> Vec<PortProbe> {
    config
        .services()
        .into_iter()
        .map(|(service, port)| probe::probe(service, port, probe::speaks(service), timeout))
        .collect()
}

/// What makes a running lab the one asked for: an optional server's port
/// matters only if the lab runs it (a lab started before Radicale and Samba
/// existed has no port for them in its state).
fn settings(config: &LabConfig) -> LabConfig {
    let mut settings = config.clone();
    if !settings.runs_radicale() {
        settings.ports.caldav = 0;
    }
    if !settings.runs(OptionalServer::Smb) {
        settings.ports.smb = 0;
    }
    if settings.mail_server != MailServer::Cyrus {
        settings.ports.jmap = 0;
    }
    settings
}

fn describe(config: &LabConfig) -> String {
    let cpus = config
        .limits
        .cpus()
        .map_or_else(|| "no CPU cap".to_owned(), |c| format!("{c} CPUs"));
    let memory = config.limits.memory_bytes.map_or_else(
        || "no memory cap".to_owned(),
        |b| format!("{b} bytes of memory"),
    );
    let with = if config.with.is_empty() {
        "no optional servers".to_owned()
    } else {
        let names: Vec<&str> = config.with.iter().map(|s| s.as_str()).collect();
        format!("with {}", names.join(","))
    };
    format!(
        "{} users, {} mail server, {} storage, imap port {}, smtp port {}, {} IMAP connections per process, \
         namespace prefix {:?} separator {:?}, {cpus}, {memory}, {with}",
        config.users,
        config.mail_server,
        config.storage,
        config.ports.imap,
        config.ports.smtp,
        config.imap_client_limit,
        config.namespace.prefix,
        config.namespace.separator,
    )
}

/// Where the kernel caps inotify instances per user.
const INOTIFY_INSTANCES: &str = "/proc/sys/fs/inotify/max_user_instances";

/// Every IMAP session Dovecot runs for the mail uid watches its mailbox with
/// an inotify instance, all under one uid. Past the kernel's cap (128 by
/// default) Dovecot silently falls back to polling every 30 s, and IDLE
/// reports new mail up to 30 s late: measured here as delivery p95 of 5.8 s
/// with 200 users. Raise the cap to cover two sessions per user, or say why not.
fn ensure_inotify_instances(users: u32) -> Option<String> {
    let needed = u64::from(users) * 2 + 128;
    let current: u64 = std::fs::read_to_string(INOTIFY_INSTANCES)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if current >= needed {
        return None;
    }
    match std::fs::write(INOTIFY_INSTANCES, needed.to_string()) {
        Ok(()) => Some(format!(
            "raised {INOTIFY_INSTANCES} from {current} to {needed} so that every Dovecot session can watch its mailbox (IDLE)"
        )),
        Err(e) => Some(format!(
            "{INOTIFY_INSTANCES} is {current} and could not be raised to {needed} ({e}): beyond {current} sessions Dovecot polls every 30 s, and IDLE reports new mail late"
        )),
    }
}

fn generate_password() -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(20)
        .map(char::from)
        .collect()
}

/// The lab's directories inside its (already claimed) root. Every one is
/// the lab's own, so its mode is set; a symbolic link in the place of one is
/// refused, never followed.
fn prepare_directories(config: &LabConfig, layout: &Layout) -> Result<(), LabError> {
    // Postfix's and Dovecot's unprivileged processes must traverse these to
    // reach their queue, sockets and mail store.
    dir::ensure_dir(&layout.dovecot_dir(), 0o755, None)?;
    dir::ensure_dir(&layout.dovecot_base_dir(), 0o755, None)?;
    dir::ensure_dir(&layout.dovecot_state_dir(), 0o750, None)?;
    dir::ensure_dir(&layout.postfix_dir(), 0o755, None)?;
    // A fresh queue on every start: mail left over from an earlier run would
    // otherwise be delivered during the next measurement.
    let queue = layout.postfix_queue();
    dir::remove_if_present(&queue)?;
    dir::ensure_dir(&queue, 0o755, None)?;
    let mail = layout.mail_dir();
    let domain_dir = mail.join(&config.domain);
    for path in [&mail, &domain_dir] {
        dir::ensure_dir(path, 0o750, Some((MAIL_UID, MAIL_UID)))?;
    }
    Ok(())
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<std::fs::File, LabError> {
    let file = dir::write_file(path, contents.as_bytes(), mode)?;
    // Postfix will not load a table or main.cf modified within the last
    // second ("being modified"); it polls every 0.3 s until the file is older,
    // which added 1.5 s to every start. Our files are complete once written.
    let settled = std::time::SystemTime::now() - Duration::from_secs(2);
    file.set_modified(settled)
        .map_err(|e| LabError::io(path, e))?;
    Ok(file)
}

fn write_configuration(
    config: &LabConfig,
    layout: &Layout,
    password: &str,
) -> Result<(), LabError> {
    write_file(
        &layout.dovecot_conf(),
        &render::dovecot_conf(config, layout),
        0o644,
    )?;
    // Read by Dovecot's auth process, which runs as user dovecot.
    let users = layout.dovecot_users();
    let users_file = write_file(
        &users,
        &render::dovecot_users(config, layout, password),
        0o640,
    )?;
    let dovecot_group = nix::unistd::Group::from_name("dovecot")
        .ok()
        .flatten()
        .map(|g| g.gid.as_raw());
    std::os::unix::fs::fchown(&users_file, Some(0), dovecot_group)
        .map_err(|e| LabError::io(&users, e))?;
    let postfix = layout.postfix_dir();
    write_file(
        &postfix.join("main.cf"),
        &render::postfix_main_cf(config, layout),
        0o644,
    )?;
    write_file(
        &postfix.join("master.cf"),
        &render::postfix_master_cf(config),
        0o644,
    )?;
    write_file(
        &layout.postfix_recipients(),
        &render::postfix_recipients(config),
        0o644,
    )?;
    Ok(())
}

/// Creates Postfix's queue directories with the owners and modes Debian's
/// `post-install create-missing` gives them. Doing it here instead of running
/// `postfix check` saves about 3.5 s per start on this machine, and `check`'s
/// ownership warnings are noise for a private instance.
fn create_postfix_queue(layout: &Layout) -> Result<(), LabError> {
    let user = |name: &str| {
        nix::unistd::User::from_name(name)
            .ok()
            .flatten()
            .map(|u| u.uid.as_raw())
    };
    let group = |name: &str| {
        nix::unistd::Group::from_name(name)
            .ok()
            .flatten()
            .map(|g| g.gid.as_raw())
    };
    let missing = || LabError::MissingPackage {
        what: "the postfix user and postdrop group",
        path: "/etc/passwd",
        package: "postfix",
    };
    let postfix = user("postfix").ok_or_else(missing)?;
    let postdrop = group("postdrop").ok_or_else(missing)?;
    let queue = layout.postfix_queue();
    let private = [
        "active", "bounce", "corrupt", "defer", "deferred", "flush", "hold", "incoming", "private",
        "saved", "trace",
    ];
    let mut dirs: Vec<(PathBuf, u32, u32, u32)> = private
        .iter()
        .map(|name| (queue.join(name), postfix, 0, 0o700))
        .collect();
    dirs.push((queue.join("maildrop"), postfix, postdrop, 0o1730));
    dirs.push((queue.join("public"), postfix, postdrop, 0o2710));
    dirs.push((queue.join("pid"), 0, 0, 0o755));
    dirs.push((layout.postfix_data(), postfix, 0, 0o700));
    for (path, uid, gid, mode) in dirs {
        dir::ensure_dir(&path, mode, Some((uid, gid)))?;
    }
    Ok(())
}

/// The last lines of a log file, if it has any.
fn tail(path: &Path) -> Option<String> {
    let text = dir::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(8);
    let tail = lines[start..].join("\n");
    (!tail.trim().is_empty()).then_some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ports;

    #[test]
    fn an_unused_optional_servers_port_does_not_change_a_labs_settings() {
        let before_radicale = LabConfig {
            ports: Ports {
                caldav: 0,
                smb: 0,
                jmap: 0,
                ..Ports::default()
            },
            ..LabConfig::new("/srv/lab")
        };
        let now = LabConfig::new("/srv/lab");
        assert_eq!(settings(&before_radicale), settings(&now));
        let with_smb = LabConfig {
            with: [OptionalServer::Smb].into_iter().collect(),
            ..now.clone()
        };
        assert_ne!(settings(&with_smb), settings(&now));
        assert!(
            describe(&with_smb).ends_with("with smb"),
            "{}",
            describe(&with_smb)
        );
    }
}
