//! Where a file run's clients connect: a directory or an SMB share, and as whom.

use std::path::PathBuf;
use std::time::Duration;

use peakhour_files::{AnyBackend, BackendError, CachePolicy, DirBackend, SmbBackend, SmbTarget};

use crate::target::Credentials;

/// The file target of a run.
#[derive(Debug, Clone)]
pub enum FileTarget {
    /// A directory on any mounted file system (`--dir PATH`).
    Dir {
        /// The directory the workspaces go under.
        root: PathBuf,
        /// How the client's page cache is treated (see `peakhour_files::CachePolicy`).
        cache: CachePolicy,
    },
    /// An SMB 2/3 share (`--smb smb://host:port/share`, or the lab's `endpoints.smb`).
    Smb {
        /// The address as given, for results (no credentials in it).
        url: String,
        /// Logins and passwords: one per client, or one password for every client.
        credentials: Credentials,
        /// The login of client `n` when the password is shared: `{n}` is replaced with
        /// the client's number (`user{n}` in the lab).
        login_pattern: String,
        /// A directory each client works under, `{n}` replaced with its number (the lab's
        /// `user{n}`, each writable only by its user); `None` puts every workspace at the
        /// share's root.
        home_pattern: Option<String>,
    },
}

impl FileTarget {
    /// `dir` or `smb`.
    pub fn kind(&self) -> &'static str {
        match self {
            FileTarget::Dir { .. } => "dir",
            FileTarget::Smb { .. } => "smb",
        }
    }

    /// The target as results record it: the directory, or the SMB address.
    pub fn describe(&self) -> String {
        match self {
            FileTarget::Dir { root, .. } => root.display().to_string(),
            FileTarget::Smb { url, .. } => url.clone(),
        }
    }

    /// The directory client `client` (from 1) works under, relative to the target's
    /// root; empty for the root itself.
    pub fn home(&self, client: u32) -> String {
        match self {
            FileTarget::Smb {
                home_pattern: Some(pattern),
                ..
            } => pattern.replace("{n}", &client.to_string()),
            _ => String::new(),
        }
    }

    /// Whether each client has a home of its own (then it makes and removes the shared
    /// directories above its workspace itself).
    pub fn has_homes(&self) -> bool {
        matches!(
            self,
            FileTarget::Smb {
                home_pattern: Some(_),
                ..
            }
        )
    }

    /// The login client `client` (from 1) uses, for messages (never its password).
    pub fn login(&self, client: u32) -> Option<String> {
        match self {
            FileTarget::Dir { .. } => None,
            FileTarget::Smb {
                credentials,
                login_pattern,
                ..
            } => Some(match credentials {
                Credentials::Shared(_) => login_pattern.replace("{n}", &client.to_string()),
                Credentials::PerUser(list) => list
                    [(client as usize).saturating_sub(1) % list.len().max(1)]
                .login
                .clone(),
            }),
        }
    }

    /// Opens client `client`'s connection (from 1): for SMB its own TCP connection,
    /// session and tree, within `timeout`.
    pub async fn connect(&self, client: u32, timeout: Duration) -> Result<AnyBackend, String> {
        match self {
            FileTarget::Dir { root, cache } => DirBackend::new(root, *cache)
                .map(AnyBackend::Dir)
                .map_err(|e| e.to_string()),
            FileTarget::Smb {
                url, credentials, ..
            } => {
                let login = self.login(client).unwrap_or_default();
                let password = match credentials {
                    Credentials::Shared(p) => p.expose().clone(),
                    Credentials::PerUser(list) => list
                        [(client as usize).saturating_sub(1) % list.len().max(1)]
                    .password
                    .expose()
                    .clone(),
                };
                let target = SmbTarget::from_url(url, &login, &password)
                    .map_err(|e: BackendError| e.to_string())?;
                match tokio::time::timeout(timeout, SmbBackend::connect(&target)).await {
                    Ok(Ok(smb)) => Ok(AnyBackend::Smb(Box::new(smb))),
                    Ok(Err(e)) => Err(format!("SMB login as {login} at {url}: {e}")),
                    Err(_) => Err(format!(
                        "SMB login as {login} at {url}: no answer within {timeout:?}"
                    )),
                }
            }
        }
    }
}
