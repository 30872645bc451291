//! Shared by the backends' live tests: a conformance run every backend must pass alike,
//! and the bridge from a workload script's operations to a backend.

#![allow(dead_code, unreachable_pub)]

pub mod samba;

use peakhour_files::{FileBackend, NtStatus, OpResult, Outcome};
use peakhour_workload::files::FileOp;

/// Performs one workload operation at the target's root, as the engine does under a home.
pub async fn apply<B: FileBackend>(backend: &mut B, op: &FileOp) -> OpResult {
    peakhour_files::apply(backend, "", op).await
}

/// Performs `op` and insists on `expect`.
pub async fn expect<B: FileBackend>(backend: &mut B, op: FileOp, expect: NtStatus) -> Outcome {
    let outcome = apply(backend, &op)
        .await
        .unwrap_or_else(|e| panic!("{} {op}: {e}", backend.kind()))
        .value;
    assert_eq!(outcome.status, expect, "{} {op}", backend.kind());
    outcome
}

/// Every operation, its success and its usual refusals, with the same statuses whatever the
/// backend. `second` is another client on the same target (for lock conflicts).
pub async fn conformance<B: FileBackend>(a: &mut B, second: &mut B) {
    use FileOp::*;
    let ok = NtStatus::OK;
    let s = |x: &str| x.to_owned();
    expect(a, MakeDir { path: s("conf") }, ok).await;
    expect(
        a,
        MakeDir { path: s("conf") },
        NtStatus::OBJECT_NAME_COLLISION,
    )
    .await;
    writes_and_reads(a, second).await;
    refusals_renames_and_deletes(a).await;
    expect(a, FsInfo, ok).await;
    expect(a, RemoveDir { path: s("conf") }, ok).await;
}

/// A file written, read back (across its end too), flushed, and locked against a second
/// client, in `conf`.
async fn writes_and_reads<B: FileBackend>(a: &mut B, second: &mut B) {
    use FileOp::*;
    let ok = NtStatus::OK;
    let s = |x: &str| x.to_owned();
    expect(
        a,
        Create {
            handle: 1,
            path: s("conf/a.dat"),
        },
        ok,
    )
    .await;
    // 100,000 bytes: two requests on SMB (64 KiB each at most).
    let w = expect(
        a,
        Write {
            handle: 1,
            offset: 0,
            len: 100_000,
        },
        ok,
    )
    .await;
    assert_eq!(w.bytes, 100_000);
    let r = expect(
        a,
        Read {
            handle: 1,
            offset: 0,
            len: 100_000,
        },
        ok,
    )
    .await;
    assert_eq!(r.bytes, 100_000);
    let r = expect(
        a,
        Read {
            handle: 1,
            offset: 99_000,
            len: 4096,
        },
        ok,
    )
    .await;
    assert_eq!(r.bytes, 1000, "a read across the end returns what there is");
    let r = expect(
        a,
        Read {
            handle: 1,
            offset: 200_000,
            len: 10,
        },
        NtStatus::END_OF_FILE,
    )
    .await;
    assert_eq!(r.bytes, 0);
    expect(
        a,
        Seek {
            handle: 1,
            offset: 512,
        },
        ok,
    )
    .await;
    expect(a, Flush { handle: 1 }, ok).await;
    expect(a, SetAttributes { handle: 1 }, ok).await;
    locks_against_a_second_client(a, second).await;
    expect(a, Close { handle: 1 }, ok).await;
}

/// Opens of what is not there, attributes, listing, renames onto a name taken or from one
/// gone, and deletes until `conf` is empty.
async fn refusals_renames_and_deletes<B: FileBackend>(a: &mut B) {
    use FileOp::*;
    let ok = NtStatus::OK;
    let s = |x: &str| x.to_owned();
    expect(
        a,
        Open {
            handle: 2,
            path: s("conf/missing.dat"),
        },
        NtStatus::OBJECT_NAME_NOT_FOUND,
    )
    .await;
    expect(
        a,
        Open {
            handle: 2,
            path: s("nodir/a.dat"),
        },
        NtStatus::OBJECT_PATH_NOT_FOUND,
    )
    .await;
    expect(
        a,
        GetAttributes {
            path: s("conf/a.dat"),
        },
        ok,
    )
    .await;
    expect(
        a,
        GetAttributes {
            path: s("conf/none"),
        },
        NtStatus::OBJECT_NAME_NOT_FOUND,
    )
    .await;
    expect(
        a,
        Create {
            handle: 3,
            path: s("conf/b.dat"),
        },
        ok,
    )
    .await;
    expect(a, Close { handle: 3 }, ok).await;
    let l = expect(a, List { dir: s("conf") }, ok).await;
    assert_eq!(l.entries, 2);
    expect(
        a,
        Rename {
            from: s("conf/b.dat"),
            to: s("conf/a.dat"),
        },
        NtStatus::OBJECT_NAME_COLLISION,
    )
    .await;
    expect(
        a,
        Rename {
            from: s("conf/b.dat"),
            to: s("conf/c.dat"),
        },
        ok,
    )
    .await;
    expect(
        a,
        Rename {
            from: s("conf/b.dat"),
            to: s("conf/d.dat"),
        },
        NtStatus::OBJECT_NAME_NOT_FOUND,
    )
    .await;
    expect(
        a,
        RemoveDir { path: s("conf") },
        NtStatus::DIRECTORY_NOT_EMPTY,
    )
    .await;
    expect(
        a,
        Delete {
            path: s("conf/a.dat"),
        },
        ok,
    )
    .await;
    expect(
        a,
        Delete {
            path: s("conf/c.dat"),
        },
        ok,
    )
    .await;
    expect(
        a,
        Delete {
            path: s("conf/c.dat"),
        },
        NtStatus::OBJECT_NAME_NOT_FOUND,
    )
    .await;
    let l = expect(a, List { dir: s("conf") }, ok).await;
    assert_eq!(l.entries, 0);
}

/// A byte range of `conf/a.dat` (open as handle 1) locked by `a`: a second client is
/// refused inside it and granted next to it.
async fn locks_against_a_second_client<B: FileBackend>(a: &mut B, second: &mut B) {
    use FileOp::*;
    let ok = NtStatus::OK;
    let s = |x: &str| x.to_owned();
    expect(
        a,
        Lock {
            handle: 1,
            offset: 10,
            len: 5,
        },
        ok,
    )
    .await;
    expect(
        second,
        Open {
            handle: 7,
            path: s("conf/a.dat"),
        },
        ok,
    )
    .await;
    expect(
        second,
        Lock {
            handle: 7,
            offset: 12,
            len: 1,
        },
        NtStatus::LOCK_NOT_GRANTED,
    )
    .await;
    expect(
        second,
        Lock {
            handle: 7,
            offset: 15,
            len: 1,
        },
        ok,
    )
    .await;
    expect(
        second,
        Unlock {
            handle: 7,
            offset: 15,
            len: 1,
        },
        ok,
    )
    .await;
    expect(second, Close { handle: 7 }, ok).await;
    expect(
        a,
        Unlock {
            handle: 1,
            offset: 10,
            len: 5,
        },
        ok,
    )
    .await;
}
