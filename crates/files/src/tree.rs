//! Deleting a directory tree through any backend: the trace's `Deltree`, and the cleanup
//! of what an interrupted replay left behind.

use std::time::Duration;

use crate::{FileBackend, NtStatus, OpResult, Outcome, Timed};

/// A tree deeper than this is not descended (a load file's trees are 3 or 4 deep).
pub const MAX_TREE_DEPTH: usize = 32;

/// At most this many entries are deleted in one call, so a huge or growing tree cannot
/// keep a client busy without end.
pub const MAX_TREE_ENTRIES: usize = 100_000;

/// Deletes `path` and everything under it, depth first, through `backend`. The outcome's
/// status is the first refusal met (or `OK`), its time the whole walk's; a missing `path`
/// is `OBJECT_NAME_NOT_FOUND`, as a server answers a delete of a missing name.
pub async fn delete_tree<B: FileBackend>(backend: &mut B, path: &str) -> OpResult {
    let mut elapsed = Duration::ZERO;
    let mut budget = MAX_TREE_ENTRIES;
    let status = walk(backend, path, 0, &mut elapsed, &mut budget).await?;
    Ok(Timed {
        value: Outcome::with_status(status),
        elapsed,
    })
}

/// One directory: its files, its subdirectories (recursively), then itself. Boxed
/// because an async function cannot call itself directly.
fn walk<'a, B: FileBackend>(
    backend: &'a mut B,
    dir: &'a str,
    depth: usize,
    elapsed: &'a mut Duration,
    budget: &'a mut usize,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<NtStatus, crate::BackendError>> + Send + 'a>,
> {
    Box::pin(async move {
        let listing = backend.list_entries(dir).await?;
        *elapsed += listing.elapsed;
        if !listing.value.status.is_success() {
            return Ok(listing.value.status);
        }
        let mut first_refusal = NtStatus::OK;
        let mut note = |status: NtStatus| {
            if first_refusal.is_success() && !status.is_success() {
                first_refusal = status;
            }
        };
        for entry in listing.value.entries {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let child = format!("{dir}/{}", entry.name);
            if entry.is_dir && depth < MAX_TREE_DEPTH {
                note(walk(backend, &child, depth + 1, elapsed, budget).await?);
            } else {
                let t = backend.delete(&child).await?;
                *elapsed += t.elapsed;
                note(t.value.status);
            }
        }
        let t = backend.remove_dir(dir).await?;
        *elapsed += t.elapsed;
        note(t.value.status);
        Ok(first_refusal)
    })
}
