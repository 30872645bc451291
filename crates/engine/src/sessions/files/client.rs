//! What every file client shares: its connection, its home on the target, the event
//! sink, and one timed operation at a time under a timeout.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use peakhour_files::{AnyBackend, BackendError, FileBackend, NtStatus, OpResult, Outcome};
use peakhour_workload::files::FileOp;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::events::EventSink;
use crate::files::events::{FileEvent, OpEvent, OpOutcome};
use crate::files::target::FileTarget;
use crate::sessions::UserSession;
use crate::sessions::files::ops::apply;

/// What every client of a run shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) target: Arc<FileTarget>,
    pub(crate) events: EventSink,
    /// An operation without an answer after this long fails with `timeout`, and ends its
    /// client (an SMB connection whose request was abandoned is in an unknown state).
    pub(crate) op_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    /// Delete the workspaces at the end (the last mix).
    pub(crate) cleanup: bool,
}

/// Why a client stops early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// `stop` was raised (SIGINT or SIGTERM).
    Requested,
    /// The client cannot go on; the reason is for people.
    Failed(String),
}

/// One connected client.
pub(crate) struct Client {
    pub(crate) n: u32,
    pub(crate) backend: AnyBackend,
    pub(crate) home: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: watch::Receiver<bool>,
}

/// The error kind a backend error is counted under.
fn error_kind(e: &BackendError) -> &'static str {
    match e {
        BackendError::UnknownHandle(_) => "not_open",
        BackendError::HandleInUse(_) => "handle_in_use",
        BackendError::BadPath(_) => "bad_path",
        BackendError::Smb(_) | BackendError::BadUrl(_) => "smb",
        BackendError::Io { .. } | BackendError::Root { .. } => "io",
        BackendError::Worker(_) => "worker",
    }
}

/// Whether the client can carry on after this error: a handle that never opened is the
/// script's problem for one operation; a broken connection is the client's end.
fn is_fatal(e: &BackendError) -> bool {
    !matches!(
        e,
        BackendError::UnknownHandle(_)
            | BackendError::HandleInUse(_)
            | BackendError::BadPath(_)
            | BackendError::Io { .. }
    )
}

/// The bytes an operation moved each way, from its outcome.
pub(crate) fn bytes_of(is_write: bool, outcome: &Outcome) -> (u64, u64) {
    if is_write {
        (0, outcome.bytes)
    } else {
        (outcome.bytes, 0)
    }
}

/// Runs one backend call under the operation timeout: its outcome, or why the client
/// must stop (`Err`), with the error kind for a recoverable failure.
pub(crate) async fn guard(
    timeout: Duration,
    call: impl Future<Output = OpResult>,
) -> Result<Result<Outcome, &'static str>, Stop> {
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(timed)) => Ok(Ok(timed.value)),
        Ok(Err(e)) if is_fatal(&e) => Err(Stop::Failed(e.to_string())),
        Ok(Err(e)) => Ok(Err(error_kind(&e))),
        Err(_) => Err(Stop::Failed(format!(
            "an operation had no answer within {timeout:?}"
        ))),
    }
}

/// A file client's session: one operation of the disk mix in its workspace,
/// under the operation timeout. (A replay's lines go to the backend one by
/// one in `replay`, with their handles.)
impl UserSession<()> for Client {
    type Action = FileOp;
    type Done = Result<Result<Outcome, &'static str>, Stop>;

    async fn act(&mut self, _who: &(), op: &FileOp) -> Self::Done {
        guard(
            self.shared.op_timeout,
            apply(&mut self.backend, &self.home, op),
        )
        .await
    }
}

impl Client {
    /// Connects client `n`, within the connect timeout; `None`, reported as
    /// the client's failure, when that failed.
    pub(crate) async fn connect(
        n: u32,
        shared: Arc<Shared>,
        stop: watch::Receiver<bool>,
    ) -> Option<Client> {
        match shared.target.connect(n, shared.connect_timeout).await {
            Ok(backend) => Some(Client {
                n,
                backend,
                home: shared.target.home(n),
                shared,
                stop,
            }),
            Err(error) => {
                shared.events.file(FileEvent::Failed {
                    client: n,
                    error,
                    at: Instant::now(),
                });
                None
            }
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Waits until `at`, or less if `stop` is raised.
    pub(crate) async fn wait_until(&mut self, at: Instant) -> Result<(), Stop> {
        if self.stopped() {
            return Err(Stop::Requested);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(at) => Ok(()),
            _ = self.stop.wait_for(|s| *s) => Err(Stop::Requested),
        }
    }

    /// Sends one operation's event.
    pub(crate) fn report(
        &self,
        action: &'static str,
        measured: bool,
        intended: Instant,
        started: Instant,
        outcome: OpOutcome,
        (bytes_read, bytes_written): (u64, u64),
    ) -> Instant {
        let finished = Instant::now();
        self.shared.events.file(FileEvent::Op(OpEvent {
            client: self.n,
            action,
            measured,
            intended,
            started,
            finished,
            outcome,
            bytes_read,
            bytes_written,
        }));
        finished
    }

    /// Reports a failure that ends this client.
    pub(crate) fn failed(&self, error: String) {
        self.shared.events.file(FileEvent::Failed {
            client: self.n,
            error,
            at: Instant::now(),
        });
    }

    /// Counts an untimed operation (set-up, cleanup) and whether it failed.
    pub(crate) fn untimed(&self, counter: &'static str, failure: &'static str, ok: bool) {
        self.shared.events.file(FileEvent::Untimed {
            counter: if ok { counter } else { failure },
        });
    }

    /// Removes the shared directories above the workspace, deepest first, when this
    /// client owns them (it has a home of its own). Refusals are left alone: another
    /// run's files may be there.
    pub(crate) async fn remove_own_dirs(&mut self, dirs: &[String]) {
        if !self.shared.target.has_homes() {
            return;
        }
        for dir in dirs.iter().rev() {
            let path = crate::sessions::files::ops::under(&self.home, dir).into_owned();
            let _ = guard(self.shared.op_timeout, self.backend.remove_dir(&path)).await;
        }
    }

    /// Makes the shared directories above the workspace if they are missing.
    pub(crate) async fn make_dirs(&mut self, dirs: &[String]) -> Result<(), Stop> {
        for dir in dirs {
            let path = crate::sessions::files::ops::under(&self.home, dir).into_owned();
            let status = guard(self.shared.op_timeout, self.backend.make_dir(&path)).await?;
            match status {
                Ok(o) if o.status.is_success() || o.status == NtStatus::OBJECT_NAME_COLLISION => {}
                Ok(o) => {
                    return Err(Stop::Failed(format!(
                        "cannot make the directory {path}: {}",
                        o.status
                    )));
                }
                Err(kind) => {
                    return Err(Stop::Failed(format!(
                        "cannot make the directory {path}: {kind}"
                    )));
                }
            }
        }
        Ok(())
    }
}
