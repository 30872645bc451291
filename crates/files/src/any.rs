//! Either backend behind one type, so a runner can hold a client's connection without
//! knowing which target the command line chose ([`FileBackend`] is not object safe: its
//! methods return `impl Future`).

use crate::{DirBackend, FileBackend, Handle, ListResult, OpResult, SmbBackend};

/// A [`DirBackend`] or an [`SmbBackend`].
pub enum AnyBackend {
    /// A directory on a mounted file system.
    Dir(DirBackend),
    /// An SMB 2/3 connection (boxed: it is much larger than the directory backend).
    Smb(Box<SmbBackend>),
}

impl AnyBackend {
    /// Closes every file this client holds open (after an interrupted script), so the
    /// files can be deleted.
    pub async fn close_all(&mut self) -> Result<(), crate::BackendError> {
        match self {
            AnyBackend::Dir(b) => {
                b.close_all();
                Ok(())
            }
            AnyBackend::Smb(b) => b.close_all().await,
        }
    }

    /// Ends the connection politely (SMB: tree disconnect and logoff); a directory has
    /// nothing to end.
    pub async fn disconnect(self) -> Result<(), crate::BackendError> {
        match self {
            AnyBackend::Dir(_) => Ok(()),
            AnyBackend::Smb(smb) => smb.disconnect().await,
        }
    }
}

/// Forwards one trait method to whichever backend this is.
macro_rules! forward {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            AnyBackend::Dir(b) => b.$method($($arg),*).await,
            AnyBackend::Smb(b) => b.$method($($arg),*).await,
        }
    };
}

impl FileBackend for AnyBackend {
    fn kind(&self) -> &'static str {
        match self {
            AnyBackend::Dir(b) => b.kind(),
            AnyBackend::Smb(b) => b.kind(),
        }
    }

    async fn make_dir(&mut self, path: &str) -> OpResult {
        forward!(self.make_dir(path))
    }

    async fn remove_dir(&mut self, path: &str) -> OpResult {
        forward!(self.remove_dir(path))
    }

    async fn create(&mut self, handle: Handle, path: &str) -> OpResult {
        forward!(self.create(handle, path))
    }

    async fn open(&mut self, handle: Handle, path: &str) -> OpResult {
        forward!(self.open(handle, path))
    }

    async fn read(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        forward!(self.read(handle, offset, len))
    }

    async fn write(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        forward!(self.write(handle, offset, len))
    }

    async fn seek(&mut self, handle: Handle, offset: u64) -> OpResult {
        forward!(self.seek(handle, offset))
    }

    async fn close(&mut self, handle: Handle) -> OpResult {
        forward!(self.close(handle))
    }

    async fn delete(&mut self, path: &str) -> OpResult {
        forward!(self.delete(path))
    }

    async fn rename(&mut self, from: &str, to: &str) -> OpResult {
        forward!(self.rename(from, to))
    }

    async fn list(&mut self, dir: &str) -> OpResult {
        forward!(self.list(dir))
    }

    async fn list_entries(&mut self, dir: &str) -> ListResult {
        forward!(self.list_entries(dir))
    }

    async fn get_attributes(&mut self, path: &str) -> OpResult {
        forward!(self.get_attributes(path))
    }

    async fn set_attributes(&mut self, handle: Handle) -> OpResult {
        forward!(self.set_attributes(handle))
    }

    async fn lock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        forward!(self.lock(handle, offset, len))
    }

    async fn unlock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        forward!(self.unlock(handle, offset, len))
    }

    async fn flush(&mut self, handle: Handle) -> OpResult {
        forward!(self.flush(handle))
    }

    async fn fs_info(&mut self) -> OpResult {
        forward!(self.fs_info())
    }
}
