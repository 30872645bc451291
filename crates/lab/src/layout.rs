//! Where every file of a lab lives inside its directory.

use std::path::{Path, PathBuf};

/// The paths of one lab, all under its directory.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of the lab in `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }

    /// The lab directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lab's state: configuration, password and the PIDs it started.
    pub fn state_file(&self) -> PathBuf {
        self.root.join("state.json")
    }

    /// Directory of the lab's own CA and server certificate.
    pub fn tls_dir(&self) -> PathBuf {
        self.root.join("tls")
    }

    /// The CA certificate clients trust to verify the lab's TLS.
    pub fn ca_cert(&self) -> PathBuf {
        self.tls_dir().join("ca.pem")
    }

    /// The servers' certificate (signed by the lab CA, for 127.0.0.1 and localhost).
    pub fn server_cert(&self) -> PathBuf {
        self.tls_dir().join("server.pem")
    }

    /// The servers' private key.
    pub fn server_key(&self) -> PathBuf {
        self.tls_dir().join("server.key")
    }

    /// Dovecot's directory: configuration, users, logs.
    pub fn dovecot_dir(&self) -> PathBuf {
        self.root.join("dovecot")
    }

    /// Dovecot's configuration file.
    pub fn dovecot_conf(&self) -> PathBuf {
        self.dovecot_dir().join("dovecot.conf")
    }

    /// Dovecot's passwd-file of users.
    pub fn dovecot_users(&self) -> PathBuf {
        self.dovecot_dir().join("users")
    }

    /// Dovecot's `base_dir`: runtime sockets and its pid file.
    pub fn dovecot_base_dir(&self) -> PathBuf {
        self.dovecot_dir().join("run")
    }

    /// Dovecot's `state_dir`.
    pub fn dovecot_state_dir(&self) -> PathBuf {
        self.dovecot_dir().join("state")
    }

    /// Dovecot's log.
    pub fn dovecot_log(&self) -> PathBuf {
        self.dovecot_dir().join("dovecot.log")
    }

    /// Where the Dovecot master's stdout and stderr go (startup errors land here).
    pub fn dovecot_console(&self) -> PathBuf {
        self.dovecot_dir().join("console.log")
    }

    /// The SASL socket Postfix authenticates SMTP clients through.
    pub fn dovecot_auth_socket(&self) -> PathBuf {
        self.dovecot_base_dir().join("auth-postfix")
    }

    /// The mail store: one home directory per user under `mail/<domain>/`.
    pub fn mail_dir(&self) -> PathBuf {
        self.root.join("mail")
    }

    /// Postfix's configuration directory (`postfix -c`).
    pub fn postfix_dir(&self) -> PathBuf {
        self.root.join("postfix")
    }

    /// Postfix's queue directory.
    pub fn postfix_queue(&self) -> PathBuf {
        self.postfix_dir().join("queue")
    }

    /// Postfix's data directory (TLS session caches and the like).
    pub fn postfix_data(&self) -> PathBuf {
        self.postfix_dir().join("data")
    }

    /// Postfix's log (`maillog_file`).
    pub fn postfix_log(&self) -> PathBuf {
        self.postfix_dir().join("postfix.log")
    }

    /// Where the Postfix master's stdout and stderr go.
    pub fn postfix_console(&self) -> PathBuf {
        self.postfix_dir().join("console.log")
    }

    /// The table of valid recipients (`virtual_mailbox_maps`).
    pub fn postfix_recipients(&self) -> PathBuf {
        self.postfix_dir().join("recipients")
    }

    /// Radicale's directory (`lab up --with caldav`): configuration, users, log.
    pub fn radicale_dir(&self) -> PathBuf {
        self.root.join("radicale")
    }

    /// Radicale's configuration file (`radicale --config`).
    pub fn radicale_config(&self) -> PathBuf {
        self.radicale_dir().join("config")
    }

    /// Radicale's htpasswd file of users, with plain passwords.
    pub fn radicale_users(&self) -> PathBuf {
        self.radicale_dir().join("users")
    }

    /// Radicale's storage: one collection tree per user.
    pub fn radicale_collections(&self) -> PathBuf {
        self.radicale_dir().join("collections")
    }

    /// Where Radicale's stdout and stderr go; it logs there too.
    pub fn radicale_console(&self) -> PathBuf {
        self.radicale_dir().join("console.log")
    }

    /// Samba's directory (`lab up --with smb`): configuration, state, share.
    pub fn samba_dir(&self) -> PathBuf {
        self.root.join("samba")
    }

    /// `smb.conf` (`smbd -s`).
    pub fn samba_conf(&self) -> PathBuf {
        self.samba_dir().join("smb.conf")
    }

    /// The `username map` that signs every lab user in as one Unix account.
    pub fn samba_users_map(&self) -> PathBuf {
        self.samba_dir().join("users.map")
    }

    /// One of Samba's private state directories (`private`, `state`, `cache`,
    /// `lock`, `run`, `log`).
    pub fn samba_state(&self, name: &str) -> PathBuf {
        self.samba_dir().join(name)
    }

    /// The share's root: one directory per user.
    pub fn samba_share(&self) -> PathBuf {
        self.samba_dir().join("share")
    }

    /// Samba's log (`log file`).
    pub fn samba_log(&self) -> PathBuf {
        self.samba_state("log").join("smbd.log")
    }

    /// Where smbd's stdout and stderr go.
    pub fn samba_console(&self) -> PathBuf {
        self.samba_state("log").join("console.log")
    }

    /// The pid file of `samba-dcerpcd`, which smbd starts on demand (for a
    /// share listing) in a session of its own.
    pub fn samba_dcerpcd_pid_file(&self) -> PathBuf {
        self.samba_state("run").join("samba-dcerpcd.pid")
    }

    /// Cyrus's directory (`lab up --mail-server cyrus`): configuration,
    /// databases, the mail partition, users.
    pub fn cyrus_dir(&self) -> PathBuf {
        self.root.join("cyrus")
    }

    /// `imapd.conf`, which every Cyrus program is started with (`-C`).
    pub fn cyrus_imapd_conf(&self) -> PathBuf {
        self.cyrus_dir().join("imapd.conf")
    }

    /// `cyrus.conf`: the services Cyrus's master runs (`-M`).
    pub fn cyrus_master_conf(&self) -> PathBuf {
        self.cyrus_dir().join("cyrus.conf")
    }

    /// Cyrus's `configdirectory`: its databases, sockets and locks.
    pub fn cyrus_config_dir(&self) -> PathBuf {
        self.cyrus_dir().join("config")
    }

    /// Cyrus's one mail partition.
    pub fn cyrus_partition(&self) -> PathBuf {
        self.cyrus_dir().join("spool")
    }

    /// The SASL database of the lab's users that Cyrus checks passwords in.
    pub fn cyrus_sasldb(&self) -> PathBuf {
        self.cyrus_dir().join("sasldb2")
    }

    /// Cyrus's copy of the server certificate and key (Cyrus's services run
    /// as user `cyrus` and cannot read the root-only key in `tls/`).
    pub fn cyrus_tls_cert(&self) -> PathBuf {
        self.cyrus_dir().join("server.pem")
    }

    /// Cyrus's copy of the server key.
    pub fn cyrus_tls_key(&self) -> PathBuf {
        self.cyrus_dir().join("server.key")
    }

    /// The master's pid file (`-p`; its default is in /run).
    pub fn cyrus_pid_file(&self) -> PathBuf {
        self.cyrus_dir().join("master.pid")
    }

    /// Where Cyrus's master writes its stdout and stderr. Cyrus logs to
    /// syslog only; without a syslog daemon its messages are lost.
    pub fn cyrus_console(&self) -> PathBuf {
        self.cyrus_dir().join("console.log")
    }

    /// Postfix's Cyrus SASL configuration directory (`cyrus_sasl_config_path`)
    /// for a Cyrus lab, where `smtpd.conf` names its own copy of the users.
    pub fn postfix_sasl_dir(&self) -> PathBuf {
        self.postfix_dir().join("sasl")
    }
}
