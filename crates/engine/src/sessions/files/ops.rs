//! From a workload's operations to a backend's calls, and the names results use.

use peakhour_workload::files::{FileOp, LoadOp};

pub(crate) use peakhour_files::{apply, under};

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
