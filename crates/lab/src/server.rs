//! The servers a lab runs: how each is started and recognised, and where it
//! writes its console and log.

use std::path::PathBuf;

use crate::config::OptionalServer;
use crate::layout::Layout;
use crate::process::ServerCommand;
use crate::{cyrus, radicale, samba};

/// One server master the lab starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Server {
    Dovecot,
    Cyrus,
    Postfix,
    Radicale,
    Samba,
}

impl Server {
    /// In the order `down` stops them: Postfix first, so it stops accepting
    /// mail before its delivery target goes; the optional servers are
    /// independent of the mail system.
    pub(crate) const STOP_ORDER: [Server; 5] = [
        Server::Postfix,
        Server::Dovecot,
        Server::Cyrus,
        Server::Radicale,
        Server::Samba,
    ];

    /// The optional server's master.
    pub(crate) fn optional(server: OptionalServer) -> Server {
        match server {
            OptionalServer::Caldav => Server::Radicale,
            OptionalServer::Smb => Server::Samba,
        }
    }

    /// The name `lab status` and `state.json` use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Server::Dovecot => "dovecot",
            Server::Cyrus => "cyrus",
            Server::Postfix => "postfix",
            Server::Radicale => OptionalServer::Caldav.server_name(),
            Server::Samba => OptionalServer::Smb.server_name(),
        }
    }

    /// The name for people.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Server::Dovecot => "Dovecot",
            Server::Cyrus => "Cyrus",
            Server::Postfix => "Postfix",
            Server::Radicale => "Radicale",
            Server::Samba => "Samba",
        }
    }

    /// The command line the lab runs it with, from the lab's layout (never
    /// from the state file, which could be planted).
    pub(crate) fn command(self, layout: &Layout) -> ServerCommand {
        let path = |p: PathBuf| p.display().to_string();
        match self {
            Server::Dovecot => ServerCommand::new(
                vec![
                    "/usr/sbin/dovecot".into(),
                    "-F".into(),
                    "-c".into(),
                    path(layout.dovecot_conf()),
                ],
                Some("/usr/lib/dovecot/"),
            ),
            Server::Postfix => ServerCommand::new(
                vec![
                    "/usr/lib/postfix/sbin/master".into(),
                    "-c".into(),
                    path(layout.postfix_dir()),
                    "-d".into(),
                ],
                Some("/usr/lib/postfix/sbin/"),
            ),
            Server::Cyrus => cyrus::command(layout),
            Server::Radicale => radicale::command(layout),
            Server::Samba => samba::command(layout),
        }
    }

    /// Where the master's stdout and stderr go (start-up errors land here).
    pub(crate) fn console(self, layout: &Layout) -> PathBuf {
        match self {
            Server::Dovecot => layout.dovecot_console(),
            Server::Cyrus => layout.cyrus_console(),
            Server::Postfix => layout.postfix_console(),
            Server::Radicale => layout.radicale_console(),
            Server::Samba => layout.samba_console(),
        }
    }

    /// The server's own log.
    pub(crate) fn log(self, layout: &Layout) -> PathBuf {
        match self {
            Server::Dovecot => layout.dovecot_log(),
            Server::Cyrus => layout.cyrus_console(),
            Server::Postfix => layout.postfix_log(),
            Server::Radicale => layout.radicale_console(),
            Server::Samba => layout.samba_log(),
        }
    }
}
