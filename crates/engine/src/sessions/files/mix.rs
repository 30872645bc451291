//! One NetBench test system running the disk mix (seed 004): a random start delay, its
//! workspace made, the script's iterations (ramp-up, measured, ramp-down) with a think
//! time before each piece of work, then, in the last mix, its workspace deleted.

use std::sync::Arc;

use peakhour_files::{NtStatus, delete_tree};
use peakhour_workload::files::{FileOp, FilePlan, Phase as MixPhase, Work};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::files::events::{FileEvent, OpOutcome};
use crate::sessions::UserSession;
use crate::sessions::files::client::{Client, Shared, Stop, bytes_of, guard};
use crate::sessions::files::ops::{mix_action, under};

/// Runs client `n` (from 1) of `plan` from `t0` until its script ends, `stop` is raised,
/// or it fails.
pub(crate) async fn run_mix_client(
    n: u32,
    plan: Arc<FilePlan>,
    shared: Arc<Shared>,
    t0: Instant,
    stop: watch::Receiver<bool>,
) {
    let Some(mut client) = Client::connect(n, shared, stop).await else {
        return;
    };
    let mut measuring = false;
    let result = drive(&mut client, &plan, t0, &mut measuring).await;
    if measuring {
        client.shared.events.file(FileEvent::DoneMeasuring {
            client: n,
            at: Instant::now(),
        });
    }
    if let Err(Stop::Failed(error)) = &result {
        client.failed(error.clone());
        return;
    }
    // Stopped or finished: the workspace is deleted either way (seed 004's last mix
    // cleans up; an interrupted run should leave nothing behind either). After a stop
    // the run gives this the remaining grace time, then abandons it.
    if client.shared.cleanup {
        cleanup(&mut client, &plan).await;
    } else {
        let _ = client.backend.close_all().await;
    }
    let _ = client.backend.disconnect().await;
}

async fn drive(
    client: &mut Client,
    plan: &FilePlan,
    t0: Instant,
    measuring: &mut bool,
) -> Result<(), Stop> {
    client.wait_until(t0 + plan.start_delay(client.n)).await?;
    client.make_dirs(&plan.shared_dirs()).await?;
    for op in plan.setup(client.n) {
        untimed(client, &op, "setup_operations", "setup_failures").await?;
    }
    let mut script = plan.script(client.n);
    let mut last_end = Instant::now();
    for work in script.by_ref() {
        let measured = work.phase == MixPhase::Measured;
        if measured != *measuring {
            let event = if measured {
                FileEvent::Measuring {
                    client: client.n,
                    at: Instant::now(),
                }
            } else {
                FileEvent::DoneMeasuring {
                    client: client.n,
                    at: Instant::now(),
                }
            };
            client.shared.events.file(event);
            *measuring = measured;
        }
        last_end = piece(client, &work, last_end).await?;
    }
    Ok(())
}

/// One piece of work: the think time, then its operations back to back. Returns when
/// the last one ended.
async fn piece(client: &mut Client, work: &Work, last_end: Instant) -> Result<Instant, Stop> {
    let measured = work.phase == MixPhase::Measured;
    let mut intended = last_end + work.think;
    client.wait_until(intended).await?;
    for op in &work.ops {
        if client.stopped() {
            return Err(Stop::Requested);
        }
        let started = Instant::now();
        let result = client.act(&(), op).await?;
        let (outcome, bytes) = match result {
            Ok(o) if o.status == NtStatus::OK => (
                OpOutcome::Ok,
                bytes_of(matches!(op, FileOp::Write { .. }), &o),
            ),
            Ok(o) => (
                OpOutcome::Error(o.status.to_string()),
                bytes_of(matches!(op, FileOp::Write { .. }), &o),
            ),
            Err(kind) => (OpOutcome::Error(kind.to_owned()), (0, 0)),
        };
        // The next operation was due the moment this one ended.
        intended = client.report(mix_action(op), measured, intended, started, outcome, bytes);
    }
    Ok(intended)
}

async fn untimed(
    client: &mut Client,
    op: &FileOp,
    counter: &'static str,
    failure: &'static str,
) -> Result<bool, Stop> {
    let ok = matches!(client.act(&(), op).await?, Ok(o) if o.status.is_success());
    client.untimed(counter, failure, ok);
    Ok(ok)
}

/// Deletes what the client made: it closes what it holds open, deletes its workspace
/// directory with everything in it (the scratch files an interrupted script left
/// included), then the shared directories above it when they are its own. What cannot be
/// deleted is reported as a leftover.
pub(crate) async fn cleanup(client: &mut Client, plan: &FilePlan) {
    let timeout = client.shared.op_timeout;
    if tokio::time::timeout(timeout, client.backend.close_all())
        .await
        .is_err()
    {
        return;
    }
    let workspace = under(&client.home, &plan.workspace_dir(client.n)).into_owned();
    match guard(
        client.shared.op_timeout,
        delete_tree(&mut client.backend, &workspace),
    )
    .await
    {
        Ok(Ok(o)) if o.status.is_success() => client.untimed("cleanup_operations", "", true),
        Ok(Ok(o)) => client.shared.events.file(FileEvent::Leftover {
            path: workspace,
            status: o.status.to_string(),
        }),
        Ok(Err(kind)) => client.shared.events.file(FileEvent::Leftover {
            path: workspace,
            status: kind.to_owned(),
        }),
        Err(_) => return,
    }
    client.remove_own_dirs(&plan.shared_dirs()).await;
}
