//! From a workload's operations to a backend's calls, and the names results use.

use std::borrow::Cow;

use peakhour_files::{FileBackend, OpResult};
use peakhour_workload::files::{FileOp, LoadOp};

/// `path` under the client's home (empty: the target's root).
pub(crate) fn under<'a>(home: &str, path: &'a str) -> Cow<'a, str> {
    if home.is_empty() {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("{home}/{path}"))
    }
}

/// Performs one disk-mix operation under `home`.
pub(crate) async fn apply<B: FileBackend>(backend: &mut B, home: &str, op: &FileOp) -> OpResult {
    let at = |path: &str| under(home, path).into_owned();
    match op {
        FileOp::MakeDir { path } => backend.make_dir(&at(path)).await,
        FileOp::RemoveDir { path } => backend.remove_dir(&at(path)).await,
        FileOp::Create { handle, path } => backend.create(*handle, &at(path)).await,
        FileOp::Open { handle, path } => backend.open(*handle, &at(path)).await,
        FileOp::Read {
            handle,
            offset,
            len,
        } => backend.read(*handle, *offset, *len).await,
        FileOp::Write {
            handle,
            offset,
            len,
        } => backend.write(*handle, *offset, *len).await,
        FileOp::Seek { handle, offset } => backend.seek(*handle, *offset).await,
        FileOp::Close { handle } => backend.close(*handle).await,
        FileOp::Delete { path } => backend.delete(&at(path)).await,
        FileOp::Rename { from, to } => backend.rename(&at(from), &at(to)).await,
        FileOp::List { dir } => backend.list(&at(dir)).await,
        FileOp::GetAttributes { path } => backend.get_attributes(&at(path)).await,
        FileOp::SetAttributes { handle } => backend.set_attributes(*handle).await,
        FileOp::Lock {
            handle,
            offset,
            len,
        } => backend.lock(*handle, *offset, *len).await,
        FileOp::Unlock {
            handle,
            offset,
            len,
        } => backend.unlock(*handle, *offset, *len).await,
        FileOp::Flush { handle } => backend.flush(*handle).await,
        FileOp::FsInfo => backend.fs_info().await,
    }
}

/// The histogram a disk-mix operation is recorded in: `file.` and the operation's name
/// (`file.read`, `file.open` ...).
pub(crate) fn mix_action(op: &FileOp) -> &'static str {
    match op {
        FileOp::MakeDir { .. } => "file.mkdir",
        FileOp::RemoveDir { .. } => "file.rmdir",
        FileOp::Create { .. } => "file.create",
        FileOp::Open { .. } => "file.open",
        FileOp::Read { .. } => "file.read",
        FileOp::Write { .. } => "file.write",
        FileOp::Seek { .. } => "file.seek",
        FileOp::Close { .. } => "file.close",
        FileOp::Delete { .. } => "file.delete",
        FileOp::Rename { .. } => "file.rename",
        FileOp::List { .. } => "file.list",
        FileOp::GetAttributes { .. } => "file.get_attributes",
        FileOp::SetAttributes { .. } => "file.set_attributes",
        FileOp::Lock { .. } => "file.lock",
        FileOp::Unlock { .. } => "file.unlock",
        FileOp::Flush { .. } => "file.flush",
        FileOp::FsInfo => "file.fs_info",
    }
}

/// The histogram a replayed load-file line is recorded in: `nbench.` and the load file's
/// own name for it (`nbench.ReadX`, `nbench.NTCreateX` ...), as dbench reports them.
pub(crate) fn replay_action(op: &LoadOp) -> &'static str {
    match op {
        LoadOp::NtCreateX { .. } => "nbench.NTCreateX",
        LoadOp::Close { .. } => "nbench.Close",
        LoadOp::Rename { .. } => "nbench.Rename",
        LoadOp::Unlink { .. } => "nbench.Unlink",
        LoadOp::Deltree { .. } => "nbench.Deltree",
        LoadOp::Rmdir { .. } => "nbench.Rmdir",
        LoadOp::Mkdir { .. } => "nbench.Mkdir",
        LoadOp::QueryPathInformation { .. } => "nbench.QUERY_PATH_INFORMATION",
        LoadOp::QueryFileInformation { .. } => "nbench.QUERY_FILE_INFORMATION",
        LoadOp::QueryFsInformation { .. } => "nbench.QUERY_FS_INFORMATION",
        LoadOp::SetFileInformation { .. } => "nbench.SET_FILE_INFORMATION",
        LoadOp::FindFirst { .. } => "nbench.FIND_FIRST",
        LoadOp::WriteX { .. } => "nbench.WriteX",
        LoadOp::ReadX { .. } => "nbench.ReadX",
        LoadOp::LockX { .. } => "nbench.LockX",
        LoadOp::UnlockX { .. } => "nbench.UnlockX",
        LoadOp::Flush { .. } => "nbench.Flush",
        LoadOp::Sleep { .. } => "nbench.Sleep",
    }
}
