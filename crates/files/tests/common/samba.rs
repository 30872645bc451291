//! A private Samba for one test: `smbd` on a free loopback port, with its own state, one
//! share and one user, stopped (with the `samba-dcerpcd` it may have started) on drop.
//!
//! The settings are the ones FACTS.md found to work here and the lab should adopt:
//! `smb ports` on 127.0.0.1 only, no NetBIOS, every state directory private, a tdbsam
//! password database in the private directory, and a `username map` that maps the
//! client's user names onto one Unix account, so no system user has to be created.
//! `--no-process-group` keeps smbd from calling setsid, but it still signals its process
//! group when it stops, so it is started in a group of its own.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The share's name.
pub const SHARE: &str = "bench";
/// The user the client signs in as (mapped onto the Unix user `nobody`).
pub const USER: &str = "peakhour1";
/// The test user's password: the test's own, thrown away with the server.
pub const PASSWORD: &str = "peakhour-test-pw";

pub struct Samba {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

fn need(binary: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(binary).is_file()));
    assert!(
        found,
        "`{binary}` not found: install Debian's samba and smbclient (scripts/setup.sh)"
    );
}

impl Samba {
    pub fn start() -> Samba {
        for binary in ["smbd", "smbpasswd", "smbclient"] {
            need(binary);
        }
        let dir = tempfile::Builder::new()
            .prefix("peakhour-smb-")
            .tempdir()
            .expect("temp dir");
        // smbd reaches the share as `nobody`, so the path must be traversable and the
        // share writable by it (a mktemp directory is 0700).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        for sub in ["private", "state", "cache", "lock", "run", "log", "share"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        let share = dir.path().join("share");
        std::fs::set_permissions(&share, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let port = free_port();
        let d = dir.path().display();
        let conf = format!(
            "[global]\n\
             \tserver role = standalone server\n\
             \tsmb ports = {port}\n\
             \tinterfaces = 127.0.0.1\n\
             \tbind interfaces only = yes\n\
             \tdisable netbios = yes\n\
             \tprivate dir = {d}/private\n\
             \tstate directory = {d}/state\n\
             \tcache directory = {d}/cache\n\
             \tlock directory = {d}/lock\n\
             \tpid directory = {d}/run\n\
             \tncalrpc dir = {d}/run/ncalrpc\n\
             \tpassdb backend = tdbsam:{d}/private/passdb.tdb\n\
             \tusername map = {d}/users.map\n\
             \tmap to guest = never\n\
             \tserver min protocol = SMB2_02\n\
             \tlog file = {d}/log/smbd.log\n\
             \tlog level = 1\n\
             \tload printers = no\n\
             \tprinting = bsd\n\
             \tprintcap name = /dev/null\n\
             \tdisable spoolss = yes\n\
             [{SHARE}]\n\
             \tpath = {share}\n\
             \tread only = no\n",
            share = share.display(),
        );
        std::fs::write(dir.path().join("smb.conf"), conf).expect("smb.conf");
        std::fs::write(dir.path().join("users.map"), format!("nobody = {USER}\n"))
            .expect("users.map");
        let samba = Samba {
            dir,
            port,
            child: None,
        };
        samba.add_user();
        samba.spawn()
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("smb.conf")
    }

    fn add_user(&self) {
        let mut child = Command::new("smbpasswd")
            .arg("-c")
            .arg(self.conf())
            .args(["-a", "-s", "nobody"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run smbpasswd");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{PASSWORD}\n{PASSWORD}").expect("password");
        drop(stdin);
        let out = child.wait_with_output().expect("smbpasswd");
        assert!(out.status.success(), "smbpasswd: {out:?}");
    }

    fn spawn(mut self) -> Samba {
        let log = std::fs::File::create(self.dir.path().join("log/stdout")).expect("log");
        let child = Command::new("smbd")
            .args(["--foreground", "--no-process-group", "-s"])
            .arg(self.conf())
            // Its own process group: smbd signals its whole group (kill(0, SIGTERM)) when
            // it stops, which would otherwise reach the test itself.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start smbd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("smbd exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "smbd not listening: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self
    }

    fn log(&self) -> String {
        ["log/stdout", "log/smbd.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn url(&self) -> String {
        format!("smb://127.0.0.1:{}/{SHARE}", self.port)
    }

    pub fn share_dir(&self) -> PathBuf {
        self.dir.path().join("share")
    }

    /// Runs an `smbclient` command on the share, independently of the backend under test.
    pub fn smbclient(&self, command: &str) -> String {
        let auth = self.dir.path().join("auth");
        std::fs::write(&auth, format!("username = {USER}\npassword = {PASSWORD}\n"))
            .expect("auth file");
        let out = Command::new("smbclient")
            .arg("-p")
            .arg(self.port.to_string())
            .arg(format!("//127.0.0.1/{SHARE}"))
            .arg("-A")
            .arg(&auth)
            .args(["-c", command])
            .output()
            .expect("run smbclient");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "smbclient -c '{command}': {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }
}

fn stop(pid: i32) {
    let pid = Pid::from_raw(pid);
    if kill(pid, Signal::SIGTERM).is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while kill(pid, None).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill(pid, Signal::SIGKILL);
}

/// The pid in `file`, if that process was started with our configuration (so a stale pid
/// file never makes us signal someone else's process).
fn our_pid(file: &Path, conf: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&cmdline)
        .contains(&*conf.to_string_lossy())
        .then_some(pid)
}

impl Drop for Samba {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(child.id() as i32);
            let _ = child.wait();
        }
        // smbd starts samba-dcerpcd on demand (share listings, for one); it outlives smbd.
        let pid_file = self.dir.path().join("run/samba-dcerpcd.pid");
        if let Some(pid) = our_pid(&pid_file, &self.conf()) {
            stop(pid);
        }
    }
}
