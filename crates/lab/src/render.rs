//! The servers' configuration files, rendered from a [`LabConfig`].
//!
//! Pure functions: no file is written here, so the output is unit-tested.
//! Every setting that departs from the packages' defaults says why, because a
//! benchmark is only as credible as the configuration it ran against.

use std::fmt::Write as _;

use crate::config::{LabConfig, MAIL_UID};
use crate::layout::Layout;

/// Dovecot processes allowed per service. Each connected IMAP user holds one
/// `imap` process (a few MB each), so this caps the users a lab can carry.
fn process_limit(users: u32) -> u32 {
    // Five sessions per user, plus headroom: a Thunderbird user keeps up to
    // five connections (its default of cached connections; the warm start's
    // recording held three), and the lab must not be what limits a client
    // mix (issue 28: a 450-user Thunderbird step held 1,344 sessions and
    // failed its logons at the 1,300 that two per user allowed). The limit
    // only caps; Dovecot forks a process per connection as it comes.
    (users.saturating_mul(5) + 100).max(1000)
}

/// `dovecot.conf` for the lab. One template over 120 lines, kept whole so
/// that it reads as the file Dovecot will read.
pub(crate) fn dovecot_conf(config: &LabConfig, layout: &Layout) -> String {
    let mail_location = match config.storage {
        crate::Storage::Sdbox => "sdbox:~/mail",
        crate::Storage::Maildir => "maildir:~/Maildir",
    };
    let processes = process_limit(config.users);
    let ports = config.ports;
    // Note: Dovecot 2.3 cannot parse one-line `{ ... }` blocks; keep each
    // brace on its own line.
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start. Private instance:
# it reads nothing from /etc/dovecot.
base_dir = {base_dir}
state_dir = {state_dir}
instance_name = peakhour-lab
log_path = {log}
protocols = imap pop3 lmtp
listen = 127.0.0.1

ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}

# Loopback benchmark: clients may authenticate without TLS.
disable_plaintext_auth = no
auth_mechanisms = plain login
# `user42` and `user42@{domain}` are the same account.
auth_default_realm = {domain}
# Authentication is not what is being measured: cache it.
auth_cache_size = 4M
auth_cache_ttl = 1 hour

mail_location = {mail_location}
mail_uid = {uid}
mail_gid = {uid}
first_valid_uid = {uid}
last_valid_uid = {uid}
first_valid_gid = {uid}
last_valid_gid = {uid}

# Many simulated users share one client address; the default (10) would
# refuse them.
mail_max_userip_connections = {processes}
default_process_limit = {processes}
default_client_limit = {clients}
default_vsz_limit = 512M

# The personal namespace. An empty prefix makes `Sent` a top-level folder;
# `INBOX.` with `.` imitates Courier- and Cyrus-like servers, where every
# folder lives under INBOX and a top-level `Sent` is refused.
namespace inbox {{
  inbox = yes
  prefix = {ns_prefix}
  separator = {ns_separator}
  mailbox Drafts {{
    special_use = \\Drafts
    auto = subscribe
  }}
  mailbox Sent {{
    special_use = \\Sent
    auto = subscribe
  }}
  mailbox Trash {{
    special_use = \\Trash
    auto = subscribe
  }}
}}

passdb {{
  driver = passwd-file
  args = scheme=PLAIN {users}
}}
userdb {{
  driver = passwd-file
  args = {users}
}}

service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
    ssl = yes
  }}
  # High-performance login mode: one login process serves many connections.
  service_count = 0
  process_min_avail = 2
}}

service pop3-login {{
  inet_listener pop3 {{
    address = 127.0.0.1
    port = {pop3}
  }}
  # Dovecot listens on 995 by default; the lab offers POP3 with STLS only.
  inet_listener pop3s {{
    port = 0
  }}
  service_count = 0
}}

service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp}
  }}
}}

service imap {{
  process_limit = {processes}
  client_limit = {imap_clients}
  # Dovecot's default service_count = 1 ends an imap process with its first
  # connection, so client_limit alone never lets one process serve more than
  # one (measured: 2,000 processes for 2,000 sessions with client_limit 100).
  # 0 keeps the process for as many connections as client_limit allows.
  service_count = {imap_service_count}
}}

service pop3 {{
  process_limit = {processes}
}}

service anvil {{
  client_limit = {anvil_clients}
}}

service auth {{
  client_limit = {auth_clients}
  # Postfix's smtpd (running as user postfix) authenticates SMTP clients here.
  unix_listener auth-postfix {{
    mode = 0666
  }}
}}

# `peakhour init` delivers straight into folders: user+Folder@domain.
recipient_delimiter = +
lda_mailbox_autocreate = yes

{imap_capability}protocol lmtp {{
  postmaster_address = postmaster@{domain}
  lmtp_save_to_detail_mailbox = yes
}}
",
        base_dir = layout.dovecot_base_dir().display(),
        state_dir = layout.dovecot_state_dir().display(),
        log = layout.dovecot_log().display(),
        cert = layout.server_cert().display(),
        key = layout.server_key().display(),
        domain = config.domain,
        ns_prefix = config.namespace.prefix,
        ns_separator = config.namespace.separator,
        uid = MAIL_UID,
        clients = processes.saturating_mul(2),
        imap_clients = config.imap_client_limit.max(1),
        imap_service_count = if config.imap_client_limit > 1 { 0 } else { 1 },
        // Dovecot warns unless these cover every login and LMTP process at once.
        anvil_clients = processes.saturating_mul(4),
        auth_clients = processes.saturating_mul(5),
        users = layout.dovecot_users().display(),
        imap = ports.imap,
        imaps = ports.imaps,
        pop3 = ports.pop3,
        lmtp = ports.lmtp,
        imap_capability = imap_capability(config),
    )
}

/// The `protocol imap` block that replaces Dovecot's capability list, when
/// the lab plays a server that offers less (see [`LabConfig::imap_capability`]).
fn imap_capability(config: &LabConfig) -> String {
    config
        .imap_capability
        .as_ref()
        .map(|list| {
            format!(
                "# Advertised instead of Dovecot's own list: the lab plays a server that offers less.\n\
                 protocol imap {{\n  imap_capability = {list}\n}}\n\n"
            )
        })
        .unwrap_or_default()
}

/// Dovecot's passwd-file: every user with the lab password and a home in the store.
pub(crate) fn dovecot_users(config: &LabConfig, layout: &Layout, password: &str) -> String {
    let mut out = String::with_capacity(config.users as usize * 96);
    let home_base = layout.mail_dir().join(&config.domain);
    for n in 1..=config.users {
        let _ = writeln!(
            out,
            "user{n}@{domain}:{{PLAIN}}{password}:{MAIL_UID}:{MAIL_UID}::{home}/user{n}::",
            domain = config.domain,
            home = home_base.display(),
        );
    }
    out
}

/// Postfix's `main.cf`.
pub(crate) fn postfix_main_cf(config: &LabConfig, layout: &Layout) -> String {
    format!(
        "\
# Written by `peakhour lab up`; rewritten on every start. Private instance
# (`postfix -c {config_dir}`): it reads nothing from /etc/postfix except the
# package's file list.
compatibility_level = 3.6
queue_directory = {queue}
data_directory = {data}
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
meta_directory = /etc/postfix
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
syslog_name = peakhour-lab/postfix
maillog_file = {log}
maillog_file_prefixes = {log_prefix}

myhostname = mx.{domain}
mydomain = {domain}
myorigin = {domain}
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8

# Every lab address is delivered to Dovecot over LMTP; nothing else is
# delivered anywhere, so the lab can never send mail off this machine.
mydestination =
local_transport = error:local delivery is disabled in the peakhour lab
default_transport = error:outbound mail is disabled in the peakhour lab
relay_transport = error:relaying is disabled in the peakhour lab
relayhost =
alias_maps =
alias_database =
virtual_mailbox_domains = {domain}
virtual_mailbox_maps = texthash:{recipients}
virtual_transport = lmtp:inet:127.0.0.1:{lmtp}

smtpd_banner = $myhostname ESMTP Postfix (peakhour lab)
smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination
smtpd_sasl_auth_enable = yes
{sasl}
smtpd_tls_security_level = may
smtpd_tls_auth_only = no
smtpd_tls_cert_file = {cert}
smtpd_tls_key_file = {key}

# A benchmark drives many connections from one address: lift the per-client
# limits that protect a real server from a single abusive client.
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
smtpd_client_recipient_rate_limit = 0
smtpd_client_new_tls_session_rate_limit = 0
smtpd_client_auth_rate_limit = 0
default_process_limit = 500
biff = no
",
        config_dir = layout.postfix_dir().display(),
        queue = layout.postfix_queue().display(),
        data = layout.postfix_data().display(),
        log = layout.postfix_log().display(),
        log_prefix = layout.postfix_dir().display(),
        domain = config.domain,
        recipients = layout.postfix_recipients().display(),
        lmtp = config.ports.lmtp,
        sasl = postfix_sasl(config, layout),
        cert = layout.server_cert().display(),
        key = layout.server_key().display(),
    )
}

/// How Postfix checks SMTP AUTH: through Dovecot's auth socket, or, in a
/// Cyrus lab, with Cyrus SASL and its own copy of the lab's users.
fn postfix_sasl(config: &LabConfig, layout: &Layout) -> String {
    match config.mail_server {
        // Dovecot's lmtp panics, and the delivery is deferred, when its index
        // locks deadlock with an IMAP session of the same user (rare: "fcntl
        // ... Resource deadlock avoided"); retried within seconds too, so a
        // deferral shows as a late delivery rather than one lost for minutes.
        crate::MailServer::Dovecot => format!(
            "smtpd_sasl_type = dovecot\nsmtpd_sasl_path = {}\n\
             queue_run_delay = 1s\nminimal_backoff_time = 1s\nmaximal_backoff_time = 5s",
            layout.dovecot_auth_socket().display()
        ),
        // Cyrus makes a user's mailboxes at the first login or delivery; the
        // two at once fail one of them (451 "Mailbox already exists"), so a
        // deferred delivery is retried within seconds, not Postfix's minutes.
        crate::MailServer::Cyrus => format!(
            "smtpd_sasl_type = cyrus\nsmtpd_sasl_path = smtpd\ncyrus_sasl_config_path = {}\n\
             queue_run_delay = 1s\nminimal_backoff_time = 1s\nmaximal_backoff_time = 5s",
            layout.postfix_sasl_dir().display()
        ),
    }
}

/// Postfix's `master.cf`: the stock Debian services, none chrooted (a chroot
/// would need copies of system files in the queue directory), plus the
/// loopback listeners.
pub(crate) fn postfix_master_cf(config: &LabConfig) -> String {
    let noauth = if config.ports.smtp_noauth == 0 {
        String::new()
    } else {
        // A relay port for a trusted network: no AUTH and no STARTTLS on
        // offer, mail taken from mynetworks (loopback) only.
        format!(
            "\
127.0.0.1:{} inet n - n - - smtpd
  -o syslog_name=peakhour-lab/postfix/noauth
  -o smtpd_sasl_auth_enable=no
  -o smtpd_tls_security_level=none
  -o smtpd_client_restrictions=permit_mynetworks,reject
  -o smtpd_relay_restrictions=permit_mynetworks,reject
",
            config.ports.smtp_noauth
        )
    };
    format!(
        "\
# Written by `peakhour lab up`.
# service      type  private unpriv chroot wakeup maxproc command
127.0.0.1:{smtp} inet n - n - - smtpd
{noauth}127.0.0.1:{submissions} inet n - n - - smtpd
  -o smtpd_tls_wrappermode=yes
  -o smtpd_tls_security_level=encrypt
pickup     unix  n - n 60 1 pickup
cleanup    unix  n - n - 0 cleanup
qmgr       unix  n - n 300 1 qmgr
tlsmgr     unix  - - n 1000? 1 tlsmgr
rewrite    unix  - - n - - trivial-rewrite
bounce     unix  - - n - 0 bounce
defer      unix  - - n - 0 bounce
trace      unix  - - n - 0 bounce
verify     unix  - - n - 1 verify
flush      unix  n - n 1000? 0 flush
proxymap   unix  - - n - - proxymap
proxywrite unix  - - n - 1 proxymap
smtp       unix  - - n - - smtp
relay      unix  - - n - - smtp
showq      unix  n - n - - showq
error      unix  - - n - - error
retry      unix  - - n - - error
discard    unix  - - n - - discard
local      unix  - n n - - local
virtual    unix  - n n - - virtual
lmtp       unix  - - n - - lmtp
anvil      unix  - - n - 1 anvil
scache     unix  - - n - 1 scache
postlog    unix-dgram n - n - 1 postlogd
",
        smtp = config.ports.smtp,
        submissions = config.ports.submissions,
    )
}

/// Postfix's table of valid recipients: every lab user, so that an unknown
/// address is refused at RCPT time, as a real server does.
pub(crate) fn postfix_recipients(config: &LabConfig) -> String {
    let mut out = String::with_capacity(config.users as usize * 24);
    for n in 1..=config.users {
        let _ = writeln!(out, "{} OK", config.user_address(n));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Storage;

    fn lab() -> (LabConfig, Layout) {
        let mut config = LabConfig::new("/srv/lab");
        config.users = 3;
        (config.clone(), Layout::new(&config.dir))
    }

    #[test]
    fn dovecot_conf_points_at_the_lab_and_its_ports() {
        let (config, layout) = lab();
        let conf = dovecot_conf(&config, &layout);
        assert!(conf.contains("base_dir = /srv/lab/dovecot/run\n"));
        assert!(conf.contains("mail_location = sdbox:~/mail\n"));
        assert!(conf.contains("    port = 10143\n"));
        assert!(conf.contains("    port = 10024\n"));
        // Dovecot 2.3 cannot parse `{ ... }` on one line.
        assert!(!conf.lines().any(|l| l.contains('{') && l.contains('}')));
    }

    #[test]
    fn maildir_storage_changes_mail_location() {
        let (mut config, layout) = lab();
        config.storage = Storage::Maildir;
        assert!(dovecot_conf(&config, &layout).contains("mail_location = maildir:~/Maildir\n"));
    }

    #[test]
    fn users_file_has_every_user_with_a_home() {
        let (config, layout) = lab();
        let users = dovecot_users(&config, &layout, "s3cret");
        assert_eq!(users.lines().count(), 3);
        assert_eq!(
            users.lines().nth(1).unwrap(),
            "user2@bench.test:{PLAIN}s3cret:5000:5000::/srv/lab/mail/bench.test/user2::"
        );
    }

    #[test]
    fn postfix_delivers_lab_mail_by_lmtp_and_nothing_else() {
        let (config, layout) = lab();
        let main = postfix_main_cf(&config, &layout);
        assert!(main.contains("virtual_transport = lmtp:inet:127.0.0.1:10024\n"));
        assert!(main.contains("default_transport = error:"));
        // maillog_file must match one of maillog_file_prefixes or Postfix refuses to log.
        assert!(main.contains("maillog_file = /srv/lab/postfix/postfix.log\n"));
        assert!(main.contains("maillog_file_prefixes = /srv/lab/postfix\n"));
        assert!(main.contains("smtpd_sasl_type = dovecot\n"));
        let cyrus = LabConfig {
            mail_server: crate::MailServer::Cyrus,
            ..config.clone()
        };
        let main = postfix_main_cf(&cyrus, &layout);
        assert!(main.contains(
            "smtpd_sasl_type = cyrus\nsmtpd_sasl_path = smtpd\ncyrus_sasl_config_path = /srv/lab/postfix/sasl\n"
        ));
        let master = postfix_master_cf(&config);
        assert!(master.starts_with("# Written"));
        assert!(master.contains("127.0.0.1:10025 inet n - n - - smtpd\n"));
        assert!(master.contains("127.0.0.1:10465 inet n - n - - smtpd\n"));
        assert!(master.contains(
            "127.0.0.1:10026 inet n - n - - smtpd\n  -o syslog_name=peakhour-lab/postfix/noauth\n  -o smtpd_sasl_auth_enable=no\n"
        ));
    }

    #[test]
    fn the_imap_capabilities_can_be_replaced() {
        let (config, layout) = lab();
        assert!(!dovecot_conf(&config, &layout).contains("imap_capability"));
        let without_move = LabConfig {
            imap_capability: Some("IMAP4rev1 IDLE UIDPLUS".into()),
            ..config
        };
        let conf = dovecot_conf(&without_move, &layout);
        assert!(
            conf.contains("protocol imap {\n  imap_capability = IMAP4rev1 IDLE UIDPLUS\n}\n"),
            "{conf}"
        );
    }

    #[test]
    fn the_namespace_is_configurable() {
        let (mut config, layout) = lab();
        let conf = dovecot_conf(&config, &layout);
        assert!(conf.contains("  prefix = \n  separator = /\n"), "{conf}");
        config.namespace = crate::Namespace {
            prefix: "INBOX.".into(),
            separator: '.',
        };
        let conf = dovecot_conf(&config, &layout);
        assert!(
            conf.contains("  prefix = INBOX.\n  separator = .\n"),
            "{conf}"
        );
    }

    #[test]
    fn recipients_table_lists_every_user() {
        let (config, _) = lab();
        assert_eq!(
            postfix_recipients(&config),
            "user1@bench.test OK\nuser2@bench.test OK\nuser3@bench.test OK\n"
        );
    }

    #[test]
    fn process_limit_grows_with_users() {
        assert_eq!(process_limit(100), 1000);
        assert_eq!(process_limit(5000), 25100);
    }
}
