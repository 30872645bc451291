//! From a workload's operation ([`FileOp`], the disk mix's script and the
//! conformance tests) to a backend's call: the one dispatch, used by the
//! engine's clients and by the backends' tests alike.

use std::borrow::Cow;

use peakhour_workload::files::FileOp;

use crate::{FileBackend, OpResult};

/// `path` under the client's home (empty: the target's root).
pub fn under<'a>(home: &str, path: &'a str) -> Cow<'a, str> {
    if home.is_empty() {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("{home}/{path}"))
    }
}

/// Performs one operation, its paths taken under `home` (see [`under`]).
pub async fn apply<B: FileBackend + ?Sized>(backend: &mut B, home: &str, op: &FileOp) -> OpResult {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_goes_under_the_home_unless_there_is_none() {
        assert_eq!(under("", "a/b"), "a/b");
        assert_eq!(under("user3", "a/b"), "user3/a/b");
    }
}
