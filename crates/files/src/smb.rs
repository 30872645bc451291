//! SMB 2/3 straight to a server, through the `smb2` crate.
//!
//! Each backend is one TCP connection, one authenticated session and one tree (share):
//! one NetBench test system. Opens request no oplock and no lease, so the server never
//! lets this client cache anything: every read and write crosses the network, which is
//! what seed 004's throughput means. Reads and writes are sent as requests of at most
//! 64 KiB (one credit each) and timed from the first request sent to the last response
//! parsed. Operations on open files (create, open, read, write, close, flush, locks,
//! attributes, delete, rename, mkdir, rmdir) are built here as raw SMB2 requests, so every
//! answer's NT status is kept; listing, stat and file-system information use `smb2`'s own
//! calls, whose errors carry the status too.

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use peakhour_net::Secret;
use smb2::msg::close::CloseRequest;
use smb2::msg::create::{
    CreateDisposition, CreateRequest, CreateResponse, ImpersonationLevel, ShareAccess,
};
use smb2::msg::flush::FlushRequest;
use smb2::msg::lock::{
    LockElement, LockRequest, SMB2_LOCKFLAG_EXCLUSIVE_LOCK, SMB2_LOCKFLAG_FAIL_IMMEDIATELY,
    SMB2_LOCKFLAG_UNLOCK,
};
use smb2::msg::query_info::InfoType;
use smb2::msg::read::{ReadRequest, ReadResponse};
use smb2::msg::set_info::SetInfoRequest;
use smb2::msg::write::WriteRequest;
use smb2::pack::{Pack, ReadCursor, Unpack};
use smb2::types::flags::FileAccessMask;
use smb2::types::{Command, FileId, OplockLevel};
use smb2::{ClientConfig, SmbClient, Tree};

use crate::{
    BackendError, CHUNK, Entry, FileBackend, Handle, ListResult, Listing, NtStatus, OpResult,
    Outcome, Timed, check_path, write_pattern,
};

const FILE_DIRECTORY_FILE: u32 = 0x0000_0001;
const FILE_NON_DIRECTORY_FILE: u32 = 0x0000_0040;
const FILE_DELETE_ON_CLOSE: u32 = 0x0000_1000;
const FILE_ATTRIBUTE_NORMAL: u32 = 0x0000_0080;
/// MS-FSCC 2.4.7 and 2.4.42.
const FILE_BASIC_INFORMATION: u8 = 4;
const FILE_RENAME_INFORMATION: u8 = 10;
const FILE_DISPOSITION_INFORMATION: u8 = 13;
/// Seconds from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
const FILETIME_UNIX_OFFSET: u64 = 11_644_473_600;

/// Where an SMB backend connects, and as whom.
#[derive(Debug, Clone)]
pub struct SmbTarget {
    /// `host:port` of the server.
    pub addr: String,
    /// The share name.
    pub share: String,
    /// The user name.
    pub user: String,
    /// The password (kept out of Debug output).
    pub password: Secret<String>,
}

impl SmbTarget {
    /// A target from `smb://host[:port]/share` (port 445 when absent) and credentials.
    pub fn from_url(url: &str, user: &str, password: &str) -> Result<SmbTarget, BackendError> {
        let bad = || BackendError::BadUrl(url.to_owned());
        let rest = url.strip_prefix("smb://").ok_or_else(bad)?;
        let (authority, share) = rest.split_once('/').ok_or_else(bad)?;
        let share = share.trim_end_matches('/');
        if authority.is_empty() || share.is_empty() || share.contains('/') {
            return Err(bad());
        }
        let has_port = match authority.rfind(']') {
            Some(end) => authority[end..].contains(':'),
            None => authority.contains(':'),
        };
        let addr = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:445")
        };
        Ok(SmbTarget {
            addr,
            share: share.to_owned(),
            user: user.to_owned(),
            password: Secret::new(password.to_owned()),
        })
    }
}

/// An SMB backend: one client's connection to one share.
pub struct SmbBackend {
    client: SmbClient,
    tree: Tree,
    files: HashMap<Handle, FileId>,
}

/// The server's answer in a response header.
fn status_of(frame: &smb2::client::connection::Frame) -> NtStatus {
    NtStatus(frame.header.status.0)
}

/// A failed high-level call: the server's status if it answered, else a broken client.
fn outcome_of(e: smb2::Error) -> Result<Outcome, BackendError> {
    match e.status() {
        Some(status) => Ok(Outcome::with_status(NtStatus(status.0))),
        None => Err(BackendError::Smb(e)),
    }
}

fn filetime_now() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (since.as_secs() + FILETIME_UNIX_OFFSET) * 10_000_000 + u64::from(since.subsec_nanos() / 100)
}

impl SmbBackend {
    /// Connects, negotiates (SMB 2.0.2 to 3.1.1, signing as the server asks), signs in and
    /// connects to the share. Compression is off: it would shrink the bytes on the wire that
    /// NetBench's throughput counts.
    pub async fn connect(target: &SmbTarget) -> Result<SmbBackend, BackendError> {
        let mut client = SmbClient::connect(ClientConfig {
            addr: target.addr.clone(),
            username: target.user.clone(),
            password: target.password.expose().clone(),
            compression: false,
            dfs_enabled: false,
            auto_reconnect: false,
            ..ClientConfig::default()
        })
        .await?;
        let tree = client.connect_share(&target.share).await?;
        Ok(SmbBackend {
            client,
            tree,
            files: HashMap::new(),
        })
    }

    /// The negotiated dialect, e.g. `Smb3_1_1`.
    pub fn dialect(&self) -> Option<String> {
        self.client.params().map(|p| format!("{:?}", p.dialect))
    }

    /// Closes every file this client holds open; the first refusal is returned after all
    /// were tried.
    pub async fn close_all(&mut self) -> Result<(), BackendError> {
        let ids: Vec<FileId> = self.files.drain().map(|(_, id)| id).collect();
        for id in ids {
            self.close_id(id).await?;
        }
        Ok(())
    }

    /// Disconnects from the share and logs off. Open files are closed by the server.
    pub async fn disconnect(mut self) -> Result<(), BackendError> {
        self.client.disconnect_share(&self.tree).await?;
        Ok(())
    }

    fn file(&self, handle: Handle) -> Result<FileId, BackendError> {
        self.files
            .get(&handle)
            .copied()
            .ok_or(BackendError::UnknownHandle(handle))
    }

    async fn execute(
        &mut self,
        command: Command,
        body: &dyn Pack,
    ) -> Result<smb2::client::connection::Frame, BackendError> {
        let tree_id = Some(self.tree.tree_id);
        Ok(self
            .client
            .connection_mut()
            .execute(command, body, tree_id)
            .await?)
    }

    /// Sends a CREATE; on success returns the file id.
    async fn create_request(
        &mut self,
        path: &str,
        access: u32,
        disposition: CreateDisposition,
        options: u32,
    ) -> Result<(NtStatus, Option<FileId>), BackendError> {
        check_path(path)?;
        let request = CreateRequest {
            requested_oplock_level: OplockLevel::None,
            impersonation_level: ImpersonationLevel::Impersonation,
            desired_access: FileAccessMask::new(access),
            file_attributes: FILE_ATTRIBUTE_NORMAL,
            share_access: ShareAccess(
                ShareAccess::FILE_SHARE_READ
                    | ShareAccess::FILE_SHARE_WRITE
                    | ShareAccess::FILE_SHARE_DELETE,
            ),
            create_disposition: disposition,
            create_options: options,
            name: smb2::encode_path(path),
            create_contexts: vec![],
        };
        let frame = self.execute(Command::Create, &request).await?;
        let status = status_of(&frame);
        if !status.is_success() {
            return Ok((status, None));
        }
        let response = CreateResponse::unpack(&mut ReadCursor::new(&frame.body))?;
        Ok((status, Some(response.file_id)))
    }

    async fn close_id(&mut self, file_id: FileId) -> Result<NtStatus, BackendError> {
        let frame = self
            .execute(Command::Close, &CloseRequest { flags: 0, file_id })
            .await?;
        Ok(status_of(&frame))
    }

    /// Opens `path` with `access` and `options`, then closes it: mkdir and delete.
    async fn open_and_close(
        &mut self,
        path: &str,
        access: u32,
        disposition: CreateDisposition,
        options: u32,
    ) -> OpResult {
        let start = Instant::now();
        let (status, id) = self
            .create_request(path, access, disposition, options)
            .await?;
        let status = match id {
            Some(id) => self.close_id(id).await?,
            None => status,
        };
        Ok(Timed {
            value: Outcome::with_status(status),
            elapsed: start.elapsed(),
        })
    }

    async fn open_handle(
        &mut self,
        handle: Handle,
        path: &str,
        disposition: CreateDisposition,
    ) -> OpResult {
        if self.files.contains_key(&handle) {
            return Err(BackendError::HandleInUse(handle));
        }
        let start = Instant::now();
        let (status, id) = self
            .create_request(
                path,
                FileAccessMask::GENERIC_READ | FileAccessMask::GENERIC_WRITE,
                disposition,
                FILE_NON_DIRECTORY_FILE,
            )
            .await?;
        let elapsed = start.elapsed();
        if let Some(id) = id {
            self.files.insert(handle, id);
        }
        Ok(Timed {
            value: Outcome::with_status(status),
            elapsed,
        })
    }

    async fn lock_request(
        &mut self,
        handle: Handle,
        offset: u64,
        len: u64,
        flags: u32,
    ) -> OpResult {
        let file_id = self.file(handle)?;
        let start = Instant::now();
        let request = LockRequest {
            lock_sequence: 0,
            file_id,
            locks: vec![LockElement {
                offset,
                length: len,
                flags,
            }],
        };
        let frame = self.execute(Command::Lock, &request).await?;
        Ok(Timed {
            value: Outcome::with_status(status_of(&frame)),
            elapsed: start.elapsed(),
        })
    }

    /// Times a high-level `smb2` call whose failure carries the server's status.
    fn finish<T>(
        start: Instant,
        result: smb2::Result<T>,
        ok: impl FnOnce(T) -> Outcome,
    ) -> OpResult {
        let elapsed = start.elapsed();
        let value = match result {
            Ok(v) => ok(v),
            Err(e) => outcome_of(e)?,
        };
        Ok(Timed { value, elapsed })
    }
}

impl FileBackend for SmbBackend {
    fn kind(&self) -> &'static str {
        "smb"
    }

    async fn make_dir(&mut self, path: &str) -> OpResult {
        let access = FileAccessMask::FILE_READ_ATTRIBUTES | FileAccessMask::SYNCHRONIZE;
        self.open_and_close(
            path,
            access,
            CreateDisposition::FileCreate,
            FILE_DIRECTORY_FILE,
        )
        .await
    }

    async fn remove_dir(&mut self, path: &str) -> OpResult {
        // Not FILE_DELETE_ON_CLOSE: Samba accepts that on a directory that is not empty,
        // answers the close with success and keeps the directory. Setting the disposition
        // is refused there with DIRECTORY_NOT_EMPTY, as a Windows server refuses it.
        let start = Instant::now();
        let (status, id) = self
            .create_request(
                path,
                FileAccessMask::DELETE | FileAccessMask::SYNCHRONIZE,
                CreateDisposition::FileOpen,
                FILE_DIRECTORY_FILE,
            )
            .await?;
        let Some(file_id) = id else {
            return Ok(Timed {
                value: Outcome::with_status(status),
                elapsed: start.elapsed(),
            });
        };
        let request = SetInfoRequest {
            info_type: InfoType::File,
            file_info_class: FILE_DISPOSITION_INFORMATION,
            additional_information: 0,
            file_id,
            buffer: vec![1],
        };
        let frame = self.execute(Command::SetInfo, &request).await?;
        let disposed = status_of(&frame);
        let closed = self.close_id(file_id).await?;
        let status = if disposed.is_success() {
            closed
        } else {
            disposed
        };
        Ok(Timed {
            value: Outcome::with_status(status),
            elapsed: start.elapsed(),
        })
    }

    async fn create(&mut self, handle: Handle, path: &str) -> OpResult {
        self.open_handle(handle, path, CreateDisposition::FileOverwriteIf)
            .await
    }

    async fn open(&mut self, handle: Handle, path: &str) -> OpResult {
        self.open_handle(handle, path, CreateDisposition::FileOpen)
            .await
    }

    async fn read(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        let file_id = self.file(handle)?;
        let start = Instant::now();
        let mut done: u64 = 0;
        let mut status = NtStatus::OK;
        while done < u64::from(len) {
            let want = (u64::from(len) - done).min(CHUNK as u64) as u32;
            let request = ReadRequest {
                padding: 0x50,
                flags: 0,
                length: want,
                offset: offset + done,
                file_id,
                minimum_count: 0,
                channel: 0,
                remaining_bytes: 0,
                read_channel_info: vec![],
            };
            let frame = self.execute(Command::Read, &request).await?;
            status = status_of(&frame);
            if !status.is_success() {
                break;
            }
            let got = ReadResponse::unpack(&mut ReadCursor::new(&frame.body))?
                .data
                .len() as u64;
            done += got;
            if got < u64::from(want) {
                break;
            }
        }
        // A read that got some bytes before the end of the file succeeded.
        if done > 0 && status == NtStatus::END_OF_FILE {
            status = NtStatus::OK;
        }
        Ok(Timed {
            value: Outcome {
                status,
                bytes: done,
                entries: 0,
            },
            elapsed: start.elapsed(),
        })
    }

    async fn write(&mut self, handle: Handle, offset: u64, len: u32) -> OpResult {
        let file_id = self.file(handle)?;
        let pattern = write_pattern();
        let start = Instant::now();
        let mut done: u64 = 0;
        let mut status = NtStatus::OK;
        while done < u64::from(len) {
            let n = (u64::from(len) - done).min(pattern.len() as u64) as usize;
            let request = WriteRequest {
                data_offset: 0x70,
                offset: offset + done,
                file_id,
                channel: 0,
                remaining_bytes: 0,
                write_channel_info_offset: 0,
                write_channel_info_length: 0,
                flags: 0,
                data: pattern[..n].to_vec(),
            };
            let frame = self.execute(Command::Write, &request).await?;
            status = status_of(&frame);
            if !status.is_success() {
                break;
            }
            done += n as u64;
        }
        Ok(Timed {
            value: Outcome {
                status,
                bytes: done,
                entries: 0,
            },
            elapsed: start.elapsed(),
        })
    }

    async fn seek(&mut self, handle: Handle, _offset: u64) -> OpResult {
        let start = Instant::now();
        self.file(handle)?;
        Ok(Timed {
            value: Outcome::ok(0),
            elapsed: start.elapsed(),
        })
    }

    async fn close(&mut self, handle: Handle) -> OpResult {
        let file_id = self
            .files
            .remove(&handle)
            .ok_or(BackendError::UnknownHandle(handle))?;
        let start = Instant::now();
        let status = self.close_id(file_id).await?;
        Ok(Timed {
            value: Outcome::with_status(status),
            elapsed: start.elapsed(),
        })
    }

    async fn delete(&mut self, path: &str) -> OpResult {
        self.open_and_close(
            path,
            FileAccessMask::DELETE | FileAccessMask::SYNCHRONIZE,
            CreateDisposition::FileOpen,
            FILE_NON_DIRECTORY_FILE | FILE_DELETE_ON_CLOSE,
        )
        .await
    }

    async fn rename(&mut self, from: &str, to: &str) -> OpResult {
        check_path(to)?;
        let start = Instant::now();
        let (status, id) = self
            .create_request(
                from,
                FileAccessMask::DELETE | FileAccessMask::SYNCHRONIZE,
                CreateDisposition::FileOpen,
                0,
            )
            .await?;
        let Some(file_id) = id else {
            return Ok(Timed {
                value: Outcome::with_status(status),
                elapsed: start.elapsed(),
            });
        };
        // FILE_RENAME_INFORMATION (MS-FSCC 2.4.42.2): ReplaceIfExists, 7 reserved bytes,
        // RootDirectory (0), FileNameLength, FileName in UTF-16LE from the share's root.
        let name: Vec<u8> = smb2::encode_path(to)
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let mut buffer = vec![0u8; 16];
        buffer.extend_from_slice(&(name.len() as u32).to_le_bytes());
        buffer.extend_from_slice(&name);
        let request = SetInfoRequest {
            info_type: InfoType::File,
            file_info_class: FILE_RENAME_INFORMATION,
            additional_information: 0,
            file_id,
            buffer,
        };
        let frame = self.execute(Command::SetInfo, &request).await?;
        let renamed = status_of(&frame);
        let closed = self.close_id(file_id).await?;
        let status = if renamed.is_success() {
            closed
        } else {
            renamed
        };
        Ok(Timed {
            value: Outcome::with_status(status),
            elapsed: start.elapsed(),
        })
    }

    async fn list(&mut self, dir: &str) -> OpResult {
        check_path(dir)?;
        let start = Instant::now();
        let result = self.client.list_directory(&mut self.tree, dir).await;
        Self::finish(start, result, |entries| Outcome {
            status: NtStatus::OK,
            bytes: 0,
            entries: entries
                .iter()
                .filter(|e| e.name != "." && e.name != "..")
                .count() as u32,
        })
    }

    async fn list_entries(&mut self, dir: &str) -> ListResult {
        check_path(dir)?;
        let start = Instant::now();
        let result = self.client.list_directory(&mut self.tree, dir).await;
        let elapsed = start.elapsed();
        let value = match result {
            Ok(entries) => Listing {
                status: NtStatus::OK,
                entries: entries
                    .into_iter()
                    .filter(|e| e.name != "." && e.name != "..")
                    .map(|e| Entry {
                        name: e.name,
                        is_dir: e.is_directory,
                    })
                    .collect(),
            },
            Err(e) => Listing {
                status: outcome_of(e)?.status,
                entries: Vec::new(),
            },
        };
        Ok(Timed { value, elapsed })
    }

    async fn get_attributes(&mut self, path: &str) -> OpResult {
        check_path(path)?;
        let start = Instant::now();
        let result = self.client.stat(&mut self.tree, path).await;
        Self::finish(start, result, |_| Outcome::ok(0))
    }

    async fn set_attributes(&mut self, handle: Handle) -> OpResult {
        let file_id = self.file(handle)?;
        // FILE_BASIC_INFORMATION (MS-FSCC 2.4.7): four FILETIMEs and the attributes; zero
        // leaves a field as it is, so only LastWriteTime changes.
        let mut buffer = vec![0u8; 40];
        buffer[16..24].copy_from_slice(&filetime_now().to_le_bytes());
        let request = SetInfoRequest {
            info_type: InfoType::File,
            file_info_class: FILE_BASIC_INFORMATION,
            additional_information: 0,
            file_id,
            buffer,
        };
        let start = Instant::now();
        let frame = self.execute(Command::SetInfo, &request).await?;
        Ok(Timed {
            value: Outcome::with_status(status_of(&frame)),
            elapsed: start.elapsed(),
        })
    }

    async fn lock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        let flags = SMB2_LOCKFLAG_EXCLUSIVE_LOCK | SMB2_LOCKFLAG_FAIL_IMMEDIATELY;
        self.lock_request(handle, offset, len, flags).await
    }

    async fn unlock(&mut self, handle: Handle, offset: u64, len: u64) -> OpResult {
        self.lock_request(handle, offset, len, SMB2_LOCKFLAG_UNLOCK)
            .await
    }

    async fn flush(&mut self, handle: Handle) -> OpResult {
        let file_id = self.file(handle)?;
        let start = Instant::now();
        let frame = self
            .execute(Command::Flush, &FlushRequest { file_id })
            .await?;
        Ok(Timed {
            value: Outcome::with_status(status_of(&frame)),
            elapsed: start.elapsed(),
        })
    }

    async fn fs_info(&mut self) -> OpResult {
        let start = Instant::now();
        let result = self.client.fs_info(&mut self.tree).await;
        Self::finish(start, result, |_| Outcome::ok(0))
    }
}
