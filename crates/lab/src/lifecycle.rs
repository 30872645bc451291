//! `up`, `down` and `status`: the lab's lifecycle.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::Rng as _;
use rand::distr::Alphanumeric;

use crate::probe::{self, PortProbe};
use crate::process::spawn_in_new_session;
use crate::state::{ComponentStatus, Endpoints, LabState, LabStatus};
use crate::{LabConfig, LabError, Layout, MAIL_UID, prerequisites, render, tls};

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
        prerequisites::check()?;
        if let Some(port) = config.ports.duplicate() {
            return Err(LabError::DuplicatePort(port));
        }
        std::fs::create_dir_all(&config.dir).map_err(|e| LabError::io(&config.dir, e))?;
        // The servers are configured with absolute paths.
        let dir = config
            .dir
            .canonicalize()
            .map_err(|e| LabError::io(&config.dir, e))?;
        let config = LabConfig {
            dir: dir.clone(),
            ..config.clone()
        };
        let lab = Lab::new(&dir);
        let layout = lab.layout.clone();
        let previous = LabState::load(&layout.state_file())?;

        let mut cleaned_up = 0;
        if let Some(state) = &previous {
            let all_running = state.dovecot.is_some_and(|p| p.is_alive())
                && state.postfix.is_some_and(|p| p.is_alive());
            if all_running {
                if state.config != config {
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
            cleaned_up = lab.stop_masters(state).killed
                + state.masters().filter(|(_, p)| p.is_alive()).count();
        }

        for (service, port) in config.ports.named() {
            if !probe::port_is_free(port) {
                return Err(LabError::PortInUse { service, port });
            }
        }

        let password = previous
            .map(|state| state.password)
            .unwrap_or_else(generate_password);
        prepare_directories(&config, &layout)?;
        let warnings = ensure_inotify_instances(config.users).into_iter().collect();
        tls::ensure_certificates(&layout)?;
        write_configuration(&config, &layout, &password)?;
        create_postfix_queue(&layout)?;

        let mut state = LabState {
            config: config.clone(),
            password,
            dovecot: None,
            postfix: None,
        };
        if let Err(error) = lab.start_servers(&mut state) {
            // A lab that did not come up leaves nothing running behind it.
            lab.stop_masters(&state);
            state.dovecot = None;
            state.postfix = None;
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

    /// Stops every process the lab started and checks that none is left.
    /// With `purge`, also deletes the lab directory (mail, queue, password).
    pub fn down(&self, purge: bool) -> Result<DownReport, LabError> {
        let state_file = self.layout.state_file();
        let Some(mut state) = LabState::load(&state_file)? else {
            return Err(LabError::NoLab(self.layout.root().to_owned()));
        };
        let report = self.stop_masters(&state);
        state.dovecot = None;
        state.postfix = None;
        if purge && report.remaining.is_empty() {
            let root = self.layout.root();
            std::fs::remove_dir_all(root).map_err(|e| LabError::io(root, e))?;
        } else {
            state.save(&state_file)?;
        }
        Ok(report)
    }

    /// Starts Dovecot, then Postfix, each in its own session, and waits until
    /// every endpoint answers. The state is saved after each start, so that
    /// `down` can stop whatever did start even if this process dies.
    fn start_servers(&self, state: &mut LabState) -> Result<(), LabError> {
        let layout = &self.layout;
        let dovecot_conf = layout.dovecot_conf().display().to_string();
        state.dovecot = Some(spawn_in_new_session(
            "/usr/sbin/dovecot",
            &["-F", "-c", &dovecot_conf],
            &layout.dovecot_console(),
        )?);
        state.save(&layout.state_file())?;
        let postfix_dir = layout.postfix_dir().display().to_string();
        state.postfix = Some(spawn_in_new_session(
            "/usr/lib/postfix/sbin/master",
            &["-c", &postfix_dir, "-d"],
            &layout.postfix_console(),
        )?);
        state.save(&layout.state_file())?;
        self.wait_until_ready(state)
    }

    fn stop_masters(&self, state: &LabState) -> DownReport {
        let mut report = DownReport {
            stopped: Vec::new(),
            killed: 0,
            remaining: Vec::new(),
        };
        // Postfix first: it stops accepting mail before its delivery target goes.
        for (name, master) in state.masters() {
            if master.is_alive() {
                report.stopped.push(name.to_owned());
            }
            report.killed += master.stop_session(STOP_GRACE);
            report
                .remaining
                .extend(master.session_members().iter().map(|p| p.pid));
        }
        report
    }

    /// Reports every server process and probes every endpoint.
    pub fn status(&self) -> Result<LabStatus, LabError> {
        let Some(state) = LabState::load(&self.layout.state_file())? else {
            return Err(LabError::NoLab(self.layout.root().to_owned()));
        };
        let config = &state.config;
        let servers: Vec<ComponentStatus> =
            [("dovecot", state.dovecot), ("postfix", state.postfix)]
                .into_iter()
                .map(|(name, master)| ComponentStatus {
                    name: name.to_owned(),
                    master_pid: master.map(|p| p.pid),
                    running: master.is_some_and(|p| p.is_alive()),
                    processes: master.map(|p| p.session_members()).unwrap_or_default(),
                })
                .collect();
        let ports = probe_all(config, Duration::from_secs(2));
        let healthy = servers.iter().all(|s| s.running) && ports.iter().all(|p| p.answers);
        Ok(LabStatus {
            healthy,
            dir: self.layout.root().display().to_string(),
            domain: config.domain.clone(),
            users: config.users,
            password: state.password.clone(),
            storage: config.storage,
            endpoints: Endpoints::of(config),
            ca_file: self.layout.ca_cert().display().to_string(),
            servers,
            ports,
        })
    }

    fn wait_until_ready(&self, state: &LabState) -> Result<(), LabError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            for (name, master) in state.masters() {
                if !master.is_alive() {
                    return Err(self.server_failed(name));
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

    fn server_failed(&self, name: &str) -> LabError {
        let (server, console, log) = if name == "dovecot" {
            (
                "Dovecot",
                self.layout.dovecot_console(),
                self.layout.dovecot_log(),
            )
        } else {
            (
                "Postfix",
                self.layout.postfix_console(),
                self.layout.postfix_log(),
            )
        };
        let reason = [tail(&console), tail(&log)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        LabError::ServerFailed {
            server,
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

fn probe_all(config: &LabConfig, timeout: Duration) -> Vec<PortProbe> {
    config
        .ports
        .named()
        .into_iter()
        .map(|(service, port)| {
            let implicit_tls = matches!(service, "imaps" | "submissions");
            probe::probe(service, port, implicit_tls, timeout)
        })
        .collect()
}

fn describe(config: &LabConfig) -> String {
    format!(
        "{} users, {} storage, imap port {}, smtp port {}, {} IMAP connections per process",
        config.users,
        config.storage,
        config.ports.imap,
        config.ports.smtp,
        config.imap_client_limit
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

fn mkdir(path: &Path, mode: u32) -> Result<(), LabError> {
    std::fs::create_dir_all(path).map_err(|e| LabError::io(path, e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| LabError::io(path, e))
}

fn prepare_directories(config: &LabConfig, layout: &Layout) -> Result<(), LabError> {
    // Postfix's and Dovecot's unprivileged processes must traverse the lab
    // directory to reach their queue, sockets and mail store.
    check_traversable(layout.root())?;
    mkdir(layout.root(), 0o755)?;
    mkdir(&layout.dovecot_dir(), 0o755)?;
    mkdir(&layout.dovecot_base_dir(), 0o755)?;
    mkdir(&layout.dovecot_state_dir(), 0o750)?;
    mkdir(&layout.postfix_dir(), 0o755)?;
    // A fresh queue on every start: mail left over from an earlier run would
    // otherwise be delivered during the next measurement.
    let queue = layout.postfix_queue();
    if queue.exists() {
        std::fs::remove_dir_all(&queue).map_err(|e| LabError::io(&queue, e))?;
    }
    mkdir(&queue, 0o755)?;
    mkdir(&layout.postfix_data(), 0o755)?;
    let mail = layout.mail_dir();
    let domain_dir = mail.join(&config.domain);
    for dir in [&mail, &domain_dir] {
        mkdir(dir, 0o750)?;
        std::os::unix::fs::chown(dir, Some(MAIL_UID), Some(MAIL_UID))
            .map_err(|e| LabError::io(dir, e))?;
    }
    Ok(())
}

/// Every ancestor of the lab directory must be searchable by others, or
/// Postfix (as user postfix) cannot reach its queue.
fn check_traversable(dir: &Path) -> Result<(), LabError> {
    for ancestor in dir.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        if meta.permissions().mode() & 0o001 == 0 {
            return Err(LabError::io(
                ancestor,
                std::io::Error::other(
                    "not searchable by other users, so Postfix and Dovecot cannot reach the lab; \
                     choose a lab directory elsewhere with --dir (e.g. under /var/tmp)",
                ),
            ));
        }
    }
    Ok(())
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<(), LabError> {
    std::fs::write(path, contents).map_err(|e| LabError::io(path, e))?;
    // Postfix will not load a table or main.cf modified within the last
    // second ("being modified"); it polls every 0.3 s until the file is older,
    // which added 1.5 s to every start. Our files are complete once written.
    let settled = std::time::SystemTime::now() - Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(settled))
        .map_err(|e| LabError::io(path, e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| LabError::io(path, e))
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
    write_file(
        &users,
        &render::dovecot_users(config, layout, password),
        0o640,
    )?;
    let dovecot_group = nix::unistd::Group::from_name("dovecot")
        .ok()
        .flatten()
        .map(|g| g.gid.as_raw());
    std::os::unix::fs::chown(&users, Some(0), dovecot_group)
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
    )
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
    for (dir, uid, gid, mode) in dirs {
        mkdir(&dir, mode)?;
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| LabError::io(&dir, e))?;
    }
    Ok(())
}

/// The last lines of a log file, if it has any.
fn tail(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(8);
    let tail = lines[start..].join("\n");
    (!tail.trim().is_empty()).then_some(tail)
}
