//! A file profile resolved for one run, and each client's deterministic script.
//!
//! The script is drawn from the profile's weighted operations with a random stream per
//! (run seed, client, iteration), so client 7's iteration 2 is the same whether 1 or 72
//! clients run and whatever the other iterations drew. The drawn operations are made
//! runnable by the schedule, which keeps track of what the client has open: a read with
//! no file open first opens one, a delete with no scratch file first creates one. Those
//! added operations are what any real client would have to do. So that they do not skew
//! the mix, each added open or create is paid back: the next open or create drawn is
//! skipped. A close drawn with nothing open is skipped too, since every open file is
//! closed anyway (at the latest when its iteration ends).

use std::collections::VecDeque;
use std::time::Duration;

use crate::error::PlanError;
use crate::files::op::{FileOp, Handle};
use crate::files::profile::{Cleanup, FileProfile, ScriptOp};
use crate::rng::{Rng, domain};

/// Writes that fill a workspace file during setup are at most this large (NetBench's and
/// the trace's largest write, 64 KB).
const SETUP_WRITE: u64 = 64 * 1024;

/// Seeks land on multiples of this, as a sector-aligned application would seek.
const SEEK_ALIGN: u64 = 512;

/// Values from the command line that replace the profile's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileOverrides {
    /// `--users`: the number of clients (test systems).
    pub clients: Option<u32>,
    /// `--seed`: the run's seed ([`crate::DEFAULT_SEED`] if absent).
    pub seed: Option<u64>,
    /// `--think-time`: the wait between pieces of work.
    pub think_time: Option<Duration>,
    /// `--start-delay`: the largest random delay before a client starts.
    pub start_delay: Option<Duration>,
    /// `--workspace`: bytes of data files per client (at least one byte per file).
    pub workspace_size: Option<u64>,
    /// `--ramp-up-iterations`: iterations run before measuring.
    pub ramp_up: Option<u32>,
    /// `--measured-iterations`: iterations measured (at least 1).
    pub measured: Option<u32>,
    /// `--ramp-down-iterations`: iterations run after measuring.
    pub ramp_down: Option<u32>,
    /// `--work-per-iteration`: pieces of work in one iteration (at least 1).
    pub work_per_iteration: Option<u32>,
}

/// Which part of a mix a piece of work belongs to (seed 004: ramp-up and ramp-down
/// iterations are run but "NetBench ignores any file operations that occur").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Run, not measured.
    RampUp,
    /// Measured.
    Measured,
    /// Run, not measured.
    RampDown,
}

/// One script entry, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptStep {
    /// The operation.
    pub op: ScriptOp,
    /// Its weight.
    pub weight: u64,
    /// Bytes for reads, writes and locks; 0 otherwise.
    pub size: u64,
}

/// A file profile plus the overrides, resolved once.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePlan {
    name: String,
    clients: u32,
    seed: u64,
    start_delay: Duration,
    think_time: Duration,
    operations_per_work: u32,
    work_per_iteration: u32,
    ramp_up: u32,
    measured: u32,
    ramp_down: u32,
    workspace_size: u64,
    files: u32,
    directory: String,
    scratch_files: usize,
    cleanup: Cleanup,
    script: Vec<ScriptStep>,
    cumulative: Vec<u64>,
}

/// Profile integers are validated to fit a u32 before a plan is made.
fn small(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl FilePlan {
    /// Resolves a (validated) profile with the command-line overrides.
    pub fn resolve(
        profile: &FileProfile,
        overrides: &FileOverrides,
    ) -> Result<FilePlan, PlanError> {
        let clients = overrides
            .clients
            .unwrap_or_else(|| small(*profile.clients.get_ref()));
        if clients == 0 {
            return Err(PlanError::Override {
                option: "users",
                message: "must be at least 1".into(),
            });
        }
        let at_least_one = |option: &'static str, v: Option<u32>| match v {
            Some(0) => Err(PlanError::Override {
                option,
                message: "must be at least 1".into(),
            }),
            _ => Ok(()),
        };
        at_least_one("measured-iterations", overrides.measured)?;
        at_least_one("work-per-iteration", overrides.work_per_iteration)?;
        let files = small(*profile.workspace.files.get_ref());
        let workspace_size = overrides
            .workspace_size
            .unwrap_or(profile.workspace.size.get_ref().0);
        if workspace_size < u64::from(files) {
            return Err(PlanError::Override {
                option: "workspace",
                message: format!(
                    "{workspace_size} bytes cannot be split into the profile's {files} files"
                ),
            });
        }
        let script: Vec<ScriptStep> = profile
            .script
            .get_ref()
            .iter()
            .map(|e| ScriptStep {
                op: e.op,
                weight: u64::from(small(*e.weight.get_ref())),
                size: e.size.as_ref().map_or(0, |s| s.get_ref().0),
            })
            .collect();
        let cumulative = script
            .iter()
            .scan(0, |sum, s| {
                *sum += s.weight;
                Some(*sum)
            })
            .collect();
        Ok(FilePlan {
            name: profile.name.clone(),
            clients,
            seed: overrides.seed.unwrap_or(crate::DEFAULT_SEED),
            start_delay: overrides
                .start_delay
                .unwrap_or(profile.client.start_delay.get_ref().0),
            think_time: overrides
                .think_time
                .unwrap_or(profile.client.think_time.get_ref().0),
            operations_per_work: small(*profile.client.operations_per_work.get_ref()),
            work_per_iteration: overrides
                .work_per_iteration
                .unwrap_or_else(|| small(*profile.client.work_per_iteration.get_ref())),
            ramp_up: overrides
                .ramp_up
                .unwrap_or_else(|| small(*profile.iterations.ramp_up.get_ref())),
            measured: overrides
                .measured
                .unwrap_or_else(|| small(*profile.iterations.measured.get_ref())),
            ramp_down: overrides
                .ramp_down
                .unwrap_or_else(|| small(*profile.iterations.ramp_down.get_ref())),
            workspace_size,
            files,
            directory: profile.workspace.directory.get_ref().clone(),
            scratch_files: small(*profile.workspace.scratch_files.get_ref()) as usize,
            cleanup: profile.workspace.cleanup,
            script,
            cumulative,
        })
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of clients, numbered from 1.
    pub fn clients(&self) -> u32 {
        self.clients
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The wait before each piece of work but a client's first.
    pub fn think_time(&self) -> Duration {
        self.think_time
    }

    /// (ramp-up, measured, ramp-down) iterations.
    pub fn iterations(&self) -> (u32, u32, u32) {
        (self.ramp_up, self.measured, self.ramp_down)
    }

    /// The largest random delay before a client starts.
    pub fn start_delay_max(&self) -> Duration {
        self.start_delay
    }

    /// Bytes of data files per client.
    pub fn workspace_size(&self) -> u64 {
        self.workspace_size
    }

    /// The resolved script entries.
    pub fn script_steps(&self) -> &[ScriptStep] {
        &self.script
    }

    /// Script operations drawn per piece of work.
    pub fn operations_per_work(&self) -> u32 {
        self.operations_per_work
    }

    /// Pieces of work per iteration.
    pub fn work_per_iteration(&self) -> u32 {
        self.work_per_iteration
    }

    /// How long `client` waits after the start before its first operation: uniform in
    /// [0, start_delay], whole milliseconds (seed 004: "Each test system will pick a
    /// random number less than or equal to this value to stagger the start times").
    pub fn start_delay(&self, client: u32) -> Duration {
        let max_ms = u64::try_from(self.start_delay.as_millis()).unwrap_or(u64::MAX);
        let mut rng = Rng::derive(self.seed, domain::FILE_START, u64::from(client), 0);
        Duration::from_millis(rng.below(max_ms.saturating_add(1)))
    }

    /// Whether the workspaces are deleted at the end of this mix.
    pub fn cleans_up(&self, last_mix: bool) -> bool {
        match self.cleanup {
            Cleanup::LastMix => last_mix,
            Cleanup::EveryMix => true,
            Cleanup::Never => false,
        }
    }

    /// The client's workspace directory, e.g. `clients/client7`.
    pub fn workspace_dir(&self, client: u32) -> String {
        self.directory.replace("{n}", &client.to_string())
    }

    /// Directories above the workspaces that all clients share (`clients` for
    /// `clients/client{n}`), parents first. Make them once before the clients start, and
    /// remove them (children first) after the last client's cleanup.
    pub fn shared_dirs(&self) -> Vec<String> {
        let parts: Vec<&str> = self.directory.split('/').collect();
        let shared = parts.iter().take_while(|p| !p.contains("{n}")).count();
        (1..=shared).map(|n| parts[..n].join("/")).collect()
    }

    /// The client's data files and their sizes: the workspace split as equally as
    /// possible, the first files one byte larger when it does not divide.
    pub fn workspace_files(&self, client: u32) -> Vec<(String, u64)> {
        let dir = self.workspace_dir(client);
        let n = u64::from(self.files);
        let (base, extra) = (self.workspace_size / n, self.workspace_size % n);
        (0..n)
            .map(|i| (format!("{dir}/file{i:03}.dat"), base + u64::from(i < extra)))
            .collect()
    }

    /// Operations that make the client's workspace: its directory (the shared ones must
    /// exist) and its data files, written in full. Not measured.
    pub fn setup(&self, client: u32) -> Vec<FileOp> {
        let mut ops = vec![FileOp::MakeDir {
            path: self.workspace_dir(client),
        }];
        for (path, size) in self.workspace_files(client) {
            ops.push(FileOp::Create { handle: 0, path });
            let mut offset = 0;
            while offset < size {
                let len = (size - offset).min(SETUP_WRITE);
                ops.push(FileOp::Write {
                    handle: 0,
                    offset,
                    len: len as u32,
                });
                offset += len;
            }
            ops.push(FileOp::Close { handle: 0 });
        }
        ops
    }

    /// The client's script, one piece of work at a time, through all iterations.
    pub fn script(&self, client: u32) -> ClientScript<'_> {
        let files = self.workspace_files(client);
        ClientScript {
            plan: self,
            client,
            dir: self.workspace_dir(client),
            files,
            open: None,
            scratch: VecDeque::new(),
            next_scratch: 0,
            next_handle: 1,
            owed_opens: 0,
            owed_creates: 0,
            iteration: 0,
            work: 0,
            rng: None,
        }
    }

    fn draw(&self, rng: &mut Rng) -> ScriptStep {
        let total = self.cumulative.last().copied().unwrap_or(0);
        let x = rng.below(total.max(1));
        let i = self.cumulative.partition_point(|&c| c <= x);
        self.script[i.min(self.script.len() - 1)]
    }
}

/// One piece of work: wait `think`, then perform `ops` in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    /// Ramp-up, measured or ramp-down.
    pub phase: Phase,
    /// Iteration of the script, from 0 over all phases.
    pub iteration: u32,
    /// Index of this piece within its iteration.
    pub index: u32,
    /// The wait before the piece: the think time, except before the client's first.
    pub think: Duration,
    /// The operations.
    pub ops: Vec<FileOp>,
}

#[derive(Debug, Clone)]
struct OpenFile {
    handle: Handle,
    path: String,
    size: u64,
    /// Writes wrap to offset 0 rather than grow the file past this.
    limit: u64,
    pos: u64,
    scratch: bool,
}

/// A client's script: an iterator over its pieces of work. After the last one,
/// [`ClientScript::cleanup`] gives the operations that delete what the client made.
pub struct ClientScript<'a> {
    plan: &'a FilePlan,
    client: u32,
    dir: String,
    files: Vec<(String, u64)>,
    open: Option<OpenFile>,
    /// Closed scratch files, oldest first, with their sizes.
    scratch: VecDeque<(String, u64)>,
    next_scratch: u64,
    next_handle: Handle,
    /// Opens and creates added to make a drawn operation runnable, not yet paid back.
    owed_opens: u32,
    owed_creates: u32,
    iteration: u32,
    work: u32,
    rng: Option<Rng>,
}

impl ClientScript<'_> {
    fn total_iterations(&self) -> u32 {
        let (up, measured, down) = self.plan.iterations();
        up.saturating_add(measured).saturating_add(down)
    }

    fn phase(&self, iteration: u32) -> Phase {
        let (up, measured, _) = self.plan.iterations();
        if iteration < up {
            Phase::RampUp
        } else if iteration < up.saturating_add(measured) {
            Phase::Measured
        } else {
            Phase::RampDown
        }
    }

    /// Operations that delete everything this client made: it closes what is open, then
    /// deletes the scratch files, the data files and the workspace directory.
    pub fn cleanup(&mut self) -> Vec<FileOp> {
        let mut ops = Vec::new();
        self.close(&mut ops);
        for (path, _) in self.scratch.drain(..) {
            ops.push(FileOp::Delete { path });
        }
        for (path, _) in &self.files {
            ops.push(FileOp::Delete { path: path.clone() });
        }
        ops.push(FileOp::RemoveDir {
            path: self.dir.clone(),
        });
        ops
    }

    fn handle(&mut self) -> Handle {
        let h = self.next_handle;
        self.next_handle = self.next_handle.checked_add(1).unwrap_or(1);
        h
    }

    fn close(&mut self, ops: &mut Vec<FileOp>) {
        if let Some(f) = self.open.take() {
            ops.push(FileOp::Close { handle: f.handle });
            if f.scratch {
                self.scratch.push_back((f.path, f.size));
            }
        }
    }

    fn open_workspace_file(&mut self, rng: &mut Rng, ops: &mut Vec<FileOp>) {
        self.close(ops);
        let i = rng.below(self.files.len() as u64) as usize;
        let (path, size) = self.files[i].clone();
        let handle = self.handle();
        ops.push(FileOp::Open {
            handle,
            path: path.clone(),
        });
        self.open = Some(OpenFile {
            handle,
            path,
            size,
            limit: size,
            pos: 0,
            scratch: false,
        });
    }

    fn ensure_open(&mut self, rng: &mut Rng, ops: &mut Vec<FileOp>) -> &mut OpenFile {
        if self.open.is_none() {
            self.open_workspace_file(rng, ops);
            self.owed_opens += 1;
        }
        self.open.as_mut().expect("a file was just opened")
    }

    fn create_scratch(&mut self, ops: &mut Vec<FileOp>) {
        self.close(ops);
        if self.scratch.len() >= self.plan.scratch_files
            && let Some((path, _)) = self.scratch.pop_front()
        {
            ops.push(FileOp::Delete { path });
        }
        let path = format!("{}/scratch{}.tmp", self.dir, self.next_scratch);
        self.next_scratch += 1;
        let handle = self.handle();
        ops.push(FileOp::Create {
            handle,
            path: path.clone(),
        });
        let limit = self.files.first().map_or(1, |f| f.1).max(1);
        self.open = Some(OpenFile {
            handle,
            path,
            size: 0,
            limit,
            pos: 0,
            scratch: true,
        });
    }

    /// The oldest closed scratch file, made first if there is none.
    fn take_scratch(&mut self, ops: &mut Vec<FileOp>) -> (String, u64) {
        if self.scratch.is_empty() {
            if !self.open.as_ref().is_some_and(|f| f.scratch) {
                self.create_scratch(ops);
                self.owed_creates += 1;
            }
            self.close(ops);
        }
        self.scratch
            .pop_front()
            .expect("a scratch file was just closed")
    }

    fn write(&mut self, rng: &mut Rng, size: u64, ops: &mut Vec<FileOp>) {
        let f = self.ensure_open(rng, ops);
        let len = size.min(f.limit);
        let offset = if f.pos + len <= f.limit { f.pos } else { 0 };
        ops.push(FileOp::Write {
            handle: f.handle,
            offset,
            len: len as u32,
        });
        f.pos = offset + len;
        f.size = f.size.max(f.pos);
    }

    fn read(&mut self, rng: &mut Rng, size: u64, ops: &mut Vec<FileOp>) {
        if self.ensure_open(rng, ops).size == 0 {
            // A fresh scratch file has nothing to read yet: write what the read wants.
            self.write(rng, size, ops);
        }
        let f = self.ensure_open(rng, ops);
        let len = size.min(f.size);
        let offset = if f.pos + len <= f.size { f.pos } else { 0 };
        ops.push(FileOp::Read {
            handle: f.handle,
            offset,
            len: len as u32,
        });
        f.pos = offset + len;
    }

    /// Draws one script operation and appends it, with whatever it needs first.
    fn step(&mut self, rng: &mut Rng, ops: &mut Vec<FileOp>) {
        let step = self.plan.draw(rng);
        match step.op {
            ScriptOp::Open if self.owed_opens > 0 => self.owed_opens -= 1,
            ScriptOp::Open => self.open_workspace_file(rng, ops),
            ScriptOp::Create if self.owed_creates > 0 => self.owed_creates -= 1,
            ScriptOp::Create => self.create_scratch(ops),
            ScriptOp::Read => self.read(rng, step.size, ops),
            ScriptOp::Write => self.write(rng, step.size, ops),
            ScriptOp::Seek => {
                let f = self.ensure_open(rng, ops);
                let offset = if f.size == 0 {
                    0
                } else {
                    rng.below(f.size) / SEEK_ALIGN * SEEK_ALIGN
                };
                f.pos = offset;
                ops.push(FileOp::Seek {
                    handle: f.handle,
                    offset,
                });
            }
            ScriptOp::Close => self.close(ops),
            ScriptOp::Delete => {
                let (path, _) = self.take_scratch(ops);
                ops.push(FileOp::Delete { path });
            }
            ScriptOp::Rename => {
                let (from, size) = self.take_scratch(ops);
                let to = format!("{}/scratch{}.tmp", self.dir, self.next_scratch);
                self.next_scratch += 1;
                ops.push(FileOp::Rename {
                    from,
                    to: to.clone(),
                });
                self.scratch.push_back((to, size));
            }
            ScriptOp::List => ops.push(FileOp::List {
                dir: self.dir.clone(),
            }),
            ScriptOp::GetAttributes => {
                let i = rng.below(self.files.len() as u64) as usize;
                ops.push(FileOp::GetAttributes {
                    path: self.files[i].0.clone(),
                });
            }
            ScriptOp::SetAttributes => {
                let handle = self.ensure_open(rng, ops).handle;
                ops.push(FileOp::SetAttributes { handle });
            }
            ScriptOp::Lock => {
                let f = self.ensure_open(rng, ops);
                let (handle, offset, len) = (f.handle, f.pos, step.size);
                ops.push(FileOp::Lock {
                    handle,
                    offset,
                    len,
                });
                ops.push(FileOp::Unlock {
                    handle,
                    offset,
                    len,
                });
            }
            ScriptOp::Flush => {
                let handle = self.ensure_open(rng, ops).handle;
                ops.push(FileOp::Flush { handle });
            }
            ScriptOp::FsInfo => ops.push(FileOp::FsInfo),
        }
    }
}

impl Iterator for ClientScript<'_> {
    type Item = Work;

    fn next(&mut self) -> Option<Work> {
        if self.iteration >= self.total_iterations() {
            return None;
        }
        let (iteration, index) = (self.iteration, self.work);
        let mut rng = self.rng.take().unwrap_or_else(|| {
            Rng::derive(
                self.plan.seed,
                domain::FILE_SCRIPT,
                u64::from(self.client),
                u64::from(iteration),
            )
        });
        let mut ops = Vec::new();
        for _ in 0..self.plan.operations_per_work {
            self.step(&mut rng, &mut ops);
        }
        self.work += 1;
        if self.work >= self.plan.work_per_iteration {
            // An iteration is one complete execution of the script: leave nothing open.
            self.close(&mut ops);
            self.iteration += 1;
            self.work = 0;
        } else {
            self.rng = Some(rng);
        }
        let first = iteration == 0 && index == 0;
        Some(Work {
            phase: self.phase(iteration),
            iteration,
            index,
            think: if first {
                Duration::ZERO
            } else {
                self.plan.think_time
            },
            ops,
        })
    }
}
