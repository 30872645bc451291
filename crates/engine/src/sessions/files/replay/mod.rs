//! One client replaying a dbench/NBENCH load file (`client.txt`): every line's operation
//! with its arguments, paths rewritten for the client, its file numbers mapped to open
//! handles, and the answer compared with the status the trace expects.
//!
//! The file is replayed from the top again when it ends, as dbench does, until the end
//! of the steady phase. How each line maps onto the backend's operations (the backends
//! speak SMB2 and POSIX, the trace SMB1):
//!
//! | line | operation |
//! |---|---|
//! | `NTCreateX` of a file, disposition 1 (open) | open |
//! | ... disposition 2 (create), 0, 4, 5 (supersede, overwrite) | create (or truncate) |
//! | ... disposition 3 (open-if) | open, and create when it is missing |
//! | ... of a directory (`create_options` 0x1), or options 0 naming one | mkdir for disposition 2, else get attributes; the handle is only remembered |
//! | `Close` | close (of a directory handle: nothing to send, status OK) |
//! | `ReadX`, `WriteX`, `LockX`, `UnlockX`, `Flush`, `SET_FILE_INFORMATION` | the same on the handle |
//! | `QUERY_PATH_INFORMATION`, `QUERY_FILE_INFORMATION` | get attributes of the path (of the handle's path) |
//! | `QUERY_FS_INFORMATION` | file-system information |
//! | `FIND_FIRST` | list the directory and match the pattern; no match is `NO_SUCH_FILE`, as the trace's server answered |
//! | `Unlink`, `Rename`, `Mkdir`, `Rmdir` | delete, rename, mkdir, rmdir |
//! | `Deltree` | a recursive delete (list, delete, rmdir) |
//! | `Sleep` | a wait, not an operation |
//!
//! Every client runs the same file with `client1` rewritten to its own number, so the
//! trace's `Mkdir "\clients"`, made by whichever client comes first, answers the others
//! `OBJECT_NAME_COLLISION`; that answer counts as the expected `OK`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use peakhour_files::{FileBackend, NtStatus, Outcome, delete_tree};
use peakhour_workload::files::{Fnum, LoadLine, LoadOp, LoadPath};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::files::events::{FileEvent, OpOutcome};
use crate::sessions::files::client::{Client, Shared, Stop, guard};
use crate::sessions::files::ops::{replay_action, under};

/// A parsed load file, shared by every client.
#[derive(Debug, Clone)]
pub struct LoadFile {
    /// Where it came from, for results.
    pub source: String,
    /// Its operation lines, in order.
    pub lines: Vec<LoadLine>,
}

impl LoadFile {
    /// The directory a client's operations live in: the first `Deltree` line's path
    /// (`clients/client1` in client.txt), else `clients/client1`.
    pub fn client_dir(&self) -> LoadPath {
        self.lines
            .iter()
            .find_map(|l| match &l.op {
                LoadOp::Deltree { path } => Some(path.clone()),
                _ => None,
            })
            .unwrap_or_else(|| {
                LoadPath::from_trace("\\clients\\client1").expect("a fixed path normalizes")
            })
    }

    /// The directories above the client directories that clients share (`clients`).
    pub fn shared_dirs(&self) -> Vec<String> {
        let dir = self.client_dir();
        let parts: Vec<&str> = dir.as_str().split('/').collect();
        (1..parts.len()).map(|n| parts[..n].join("/")).collect()
    }
}

/// What a file number of the trace stands for in this client.
#[derive(Debug, Clone)]
enum Opened {
    File { handle: u32, path: String },
    Dir { path: String },
}

/// One replaying client's state.
struct Replayer {
    client: Client,
    open: HashMap<Fnum, Opened>,
    next_handle: u32,
}

/// What a line got: its status and the data it moved, or a failure that is not a status.
type Answer = Result<(NtStatus, u64, u64), &'static str>;

/// Runs client `n` from now until `end`: the load file over and over.
pub(crate) async fn run_replay_client(
    n: u32,
    load: Arc<LoadFile>,
    shared: Arc<Shared>,
    end: Instant,
    stop: watch::Receiver<bool>,
) {
    let Some(client) = Client::connect(n, shared, stop).await else {
        return;
    };
    let mut r = Replayer {
        client,
        open: HashMap::new(),
        next_handle: 1,
    };
    let result = r.replay(&load, end).await;
    if let Err(Stop::Failed(error)) = &result {
        r.client.failed(error.clone());
        return;
    }
    if r.client.shared.cleanup {
        r.cleanup(&load).await;
    }
    let _ = r.client.backend.disconnect().await;
}

fn path_for(n: u32, home: &str, path: &LoadPath) -> String {
    under(home, &path.for_client(n)).into_owned()
}

/// Whether `name` matches a DOS wildcard pattern (`*` any run, `?` one character),
/// case-insensitively as Windows matches.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let n: Vec<char> = name.to_lowercase().chars().collect();
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

impl Replayer {
    fn handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle = self.next_handle.checked_add(1).unwrap_or(1);
        h
    }

    async fn replay(&mut self, load: &LoadFile, end: Instant) -> Result<(), Stop> {
        if load.lines.is_empty() {
            return Ok(());
        }
        self.client.make_dirs(&load.shared_dirs()).await?;
        loop {
            let pass_start = Instant::now();
            let mut intended = pass_start;
            for line in &load.lines {
                if let Some(at) = line.at {
                    intended = pass_start + Duration::from_secs_f64(at);
                    self.client.wait_until(intended.min(end)).await?;
                }
                if Instant::now() >= end {
                    return Ok(());
                }
                if let LoadOp::Sleep { micros } = line.op {
                    intended = Instant::now().max(intended) + Duration::from_micros(micros);
                    self.client.wait_until(intended.min(end)).await?;
                    continue;
                }
                if self.client.stopped() {
                    return Err(Stop::Requested);
                }
                let started = Instant::now();
                let answer = self.line(&line.op).await?;
                let (outcome, read, written) = judge(&line.op, line.expect.0, answer);
                intended = self.client.report(
                    replay_action(&line.op),
                    true,
                    intended,
                    started,
                    outcome,
                    (read, written),
                );
            }
            // The trace leaves files open at its end; start the next pass clean.
            self.close_all().await?;
        }
    }

    async fn close_all(&mut self) -> Result<(), Stop> {
        self.open.clear();
        let timeout = self.client.shared.op_timeout;
        match tokio::time::timeout(timeout, self.client.backend.close_all()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Stop::Failed(e.to_string())),
            Err(_) => Err(Stop::Failed("closing files had no answer".into())),
        }
    }

    /// Deletes the client's directory, then the shared ones when they are its own.
    async fn cleanup(&mut self, load: &LoadFile) {
        if self.close_all().await.is_err() {
            return;
        }
        let dir = path_for(self.client.n, &self.client.home, &load.client_dir());
        match guard(
            self.client.shared.op_timeout,
            delete_tree(&mut self.client.backend, &dir),
        )
        .await
        {
            Ok(Ok(o)) if o.status.is_success() || o.status == NtStatus::OBJECT_NAME_NOT_FOUND => {
                self.client.untimed("cleanup_operations", "", true);
            }
            Ok(Ok(o)) => self.client.shared.events.file(FileEvent::Leftover {
                path: dir,
                status: o.status.to_string(),
            }),
            Ok(Err(kind)) => self.client.shared.events.file(FileEvent::Leftover {
                path: dir,
                status: kind.to_owned(),
            }),
            Err(_) => return,
        }
        self.client.remove_own_dirs(&load.shared_dirs()).await;
    }

    fn path(&self, path: &LoadPath) -> String {
        path_for(self.client.n, &self.client.home, path)
    }

    fn file(&self, fnum: Fnum) -> Option<u32> {
        match self.open.get(&fnum) {
            Some(Opened::File { handle, .. }) => Some(*handle),
            _ => None,
        }
    }

    /// Performs one line.
    async fn line(&mut self, op: &LoadOp) -> Result<Answer, Stop> {
        match op {
            LoadOp::NtCreateX {
                path,
                create_options,
                create_disposition,
                fnum,
            } => {
                let path = self.path(path);
                self.create(path, *create_options, *create_disposition, *fnum)
                    .await
            }
            LoadOp::FindFirst { pattern, .. } => self.find(pattern).await,
            LoadOp::Sleep { .. } => Ok(Ok((NtStatus::OK, 0, 0))),
            LoadOp::Close { .. }
            | LoadOp::QueryFileInformation { .. }
            | LoadOp::SetFileInformation { .. }
            | LoadOp::WriteX { .. }
            | LoadOp::ReadX { .. }
            | LoadOp::LockX { .. }
            | LoadOp::UnlockX { .. }
            | LoadOp::Flush { .. } => self.handle_line(op).await,
            _ => self.path_line(op).await,
        }
    }

    /// A line that names its file by path.
    async fn path_line(&mut self, op: &LoadOp) -> Result<Answer, Stop> {
        let status = |r: Result<Outcome, &'static str>| r.map(|o| (o.status, 0, 0));
        Ok(match op {
            LoadOp::Rename { from, to } => {
                let (from, to) = (self.path(from), self.path(to));
                status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.rename(&from, &to),
                    )
                    .await?,
                )
            }
            LoadOp::Unlink { path, .. } => {
                let path = self.path(path);
                status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.delete(&path),
                    )
                    .await?,
                )
            }
            LoadOp::Deltree { path } => {
                let path = self.path(path);
                status(
                    guard(
                        self.client.shared.op_timeout,
                        delete_tree(&mut self.client.backend, &path),
                    )
                    .await?,
                )
            }
            LoadOp::Rmdir { path } => {
                let path = self.path(path);
                status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.remove_dir(&path),
                    )
                    .await?,
                )
            }
            LoadOp::Mkdir { path } => {
                let path = self.path(path);
                status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.make_dir(&path),
                    )
                    .await?,
                )
            }
            LoadOp::QueryPathInformation { path, .. } => {
                let path = self.path(path);
                status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.get_attributes(&path),
                    )
                    .await?,
                )
            }
            LoadOp::QueryFsInformation { .. } => {
                status(guard(self.client.shared.op_timeout, self.client.backend.fs_info()).await?)
            }
            // line() sends only path operations here.
            _ => Err("not_a_path_operation"),
        })
    }

    /// A line that names its file by the trace's file number (an open handle).
    async fn handle_line(&mut self, op: &LoadOp) -> Result<Answer, Stop> {
        let status = |r: Result<Outcome, &'static str>| r.map(|o| (o.status, 0, 0));
        Ok(match op {
            LoadOp::Close { fnum } => match self.open.remove(fnum) {
                Some(Opened::File { handle, .. }) => status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.close(handle),
                    )
                    .await?,
                ),
                Some(Opened::Dir { .. }) => Ok((NtStatus::OK, 0, 0)),
                None => Err("not_open"),
            },
            LoadOp::QueryFileInformation { fnum, .. } => match self.open.get(fnum).cloned() {
                Some(Opened::File { path, .. } | Opened::Dir { path }) => status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.get_attributes(&path),
                    )
                    .await?,
                ),
                None => Err("not_open"),
            },
            LoadOp::SetFileInformation { fnum, .. } => match self.open.get(fnum).cloned() {
                Some(Opened::File { handle, .. }) => status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.set_attributes(handle),
                    )
                    .await?,
                ),
                Some(Opened::Dir { .. }) => Ok((NtStatus::OK, 0, 0)),
                None => Err("not_open"),
            },
            LoadOp::WriteX {
                fnum, offset, size, ..
            } => match self.file(*fnum) {
                Some(h) => guard(
                    self.client.shared.op_timeout,
                    self.client.backend.write(h, *offset, *size),
                )
                .await?
                .map(|o| (o.status, 0, o.bytes)),
                None => Err("not_open"),
            },
            LoadOp::ReadX {
                fnum, offset, size, ..
            } => match self.file(*fnum) {
                Some(h) => guard(
                    self.client.shared.op_timeout,
                    self.client.backend.read(h, *offset, *size),
                )
                .await?
                .map(|o| (o.status, o.bytes, 0)),
                None => Err("not_open"),
            },
            LoadOp::LockX {
                fnum, offset, size, ..
            } => match self.file(*fnum) {
                Some(h) => status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.lock(h, *offset, *size),
                    )
                    .await?,
                ),
                None => Err("not_open"),
            },
            LoadOp::UnlockX {
                fnum, offset, size, ..
            } => match self.file(*fnum) {
                Some(h) => status(
                    guard(
                        self.client.shared.op_timeout,
                        self.client.backend.unlock(h, *offset, *size),
                    )
                    .await?,
                ),
                None => Err("not_open"),
            },
            LoadOp::Flush { fnum } => match self.file(*fnum) {
                Some(h) => status(
                    guard(self.client.shared.op_timeout, self.client.backend.flush(h)).await?,
                ),
                None => Err("not_open"),
            },
            // line() sends only handle operations here.
            _ => Err("not_a_handle_operation"),
        })
    }

    /// `NTCreateX`: see the module's table.
    async fn create(
        &mut self,
        path: String,
        options: u32,
        disposition: u32,
        fnum: Fnum,
    ) -> Result<Answer, Stop> {
        const DIRECTORY: u32 = 0x1;
        const NON_DIRECTORY: u32 = 0x40;
        if let Some(Opened::File { handle, .. }) = self.open.remove(&fnum) {
            // The trace reuses a number whose close we did not see: close it first.
            let _ = guard(
                self.client.shared.op_timeout,
                self.client.backend.close(handle),
            )
            .await?;
        }
        if options & DIRECTORY != 0 {
            return self.open_dir(path, disposition, fnum).await;
        }
        let handle = self.handle();
        let mut answer = match disposition {
            1 | 3 => {
                guard(
                    self.client.shared.op_timeout,
                    self.client.backend.open(handle, &path),
                )
                .await?
            }
            _ => {
                guard(
                    self.client.shared.op_timeout,
                    self.client.backend.create(handle, &path),
                )
                .await?
            }
        };
        if disposition == 3
            && matches!(&answer, Ok(o) if o.status == NtStatus::OBJECT_NAME_NOT_FOUND)
        {
            answer = guard(
                self.client.shared.op_timeout,
                self.client.backend.create(handle, &path),
            )
            .await?;
        }
        if options & NON_DIRECTORY == 0
            && matches!(&answer, Ok(o) if o.status == NtStatus::FILE_IS_A_DIRECTORY)
        {
            return self.open_dir(path, disposition, fnum).await;
        }
        if matches!(&answer, Ok(o) if o.status.is_success()) {
            self.open.insert(fnum, Opened::File { handle, path });
        }
        Ok(answer.map(|o| (o.status, 0, 0)))
    }

    async fn open_dir(
        &mut self,
        path: String,
        disposition: u32,
        fnum: Fnum,
    ) -> Result<Answer, Stop> {
        let answer = if disposition == 2 {
            guard(
                self.client.shared.op_timeout,
                self.client.backend.make_dir(&path),
            )
            .await?
        } else {
            guard(
                self.client.shared.op_timeout,
                self.client.backend.get_attributes(&path),
            )
            .await?
        };
        if matches!(&answer, Ok(o) if o.status.is_success()) {
            self.open.insert(fnum, Opened::Dir { path });
        }
        Ok(answer.map(|o| (o.status, 0, 0)))
    }

    /// `FIND_FIRST`: the directory's entries matched against the pattern.
    async fn find(&mut self, pattern: &LoadPath) -> Result<Answer, Stop> {
        let full = self.path(pattern);
        let (dir, name) = full.rsplit_once('/').unwrap_or(("", full.as_str()));
        let (dir, name) = (dir.to_owned(), name.to_owned());
        let timeout = self.client.shared.op_timeout;
        let listing =
            match tokio::time::timeout(timeout, self.client.backend.list_entries(&dir)).await {
                Ok(Ok(l)) => l.value,
                Ok(Err(e)) => return Err(Stop::Failed(e.to_string())),
                Err(_) => {
                    return Err(Stop::Failed(format!(
                        "a listing had no answer within {timeout:?}"
                    )));
                }
            };
        if !listing.status.is_success() {
            return Ok(Ok((listing.status, 0, 0)));
        }
        let found = listing.entries.iter().any(|e| wildcard(&name, &e.name));
        Ok(Ok((
            if found {
                NtStatus::OK
            } else {
                NtStatus::NO_SUCH_FILE
            },
            0,
            0,
        )))
    }
}

/// Compares the answer with the trace's expected status: the outcome and the bytes.
fn judge(op: &LoadOp, expect: u32, answer: Answer) -> (OpOutcome, u64, u64) {
    let expected = NtStatus(expect);
    match answer {
        Ok((status, read, written)) => {
            let shared_mkdir = matches!(op, LoadOp::Mkdir { .. })
                && expected == NtStatus::OK
                && status == NtStatus::OBJECT_NAME_COLLISION;
            let outcome = if status == expected || shared_mkdir {
                OpOutcome::Ok
            } else {
                OpOutcome::Error(format!("{status} (expected {expected})"))
            };
            (outcome, read, written)
        }
        Err(kind) => (
            OpOutcome::Error(format!("{kind} (expected {expected})")),
            0,
            0,
        ),
    }
}

#[cfg(test)]
mod tests;
