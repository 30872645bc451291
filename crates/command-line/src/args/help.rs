//! The long help texts: what each URL scheme means, and an example or two per
//! command. They are shown by `--help`, and by `peakhour man` in the pages.
//! Lines stay under 80 columns so that the help column does not rewrap them.

/// `peakhour --help` opens with this: the question peakhour answers for its
/// user and the two commands to start with (not the crate's own description,
/// which clap would take by default).
pub(super) const ABOUT: &str = "\
peakhour answers one question about a mail, groupware or file server: how many
users can it carry through its peak hour, how fast will it answer them, and
what runs out first?

Start with:
  peakhour lab up --users 200        # real Postfix and Dovecot on loopback
  peakhour run --users 200 --speed 60  # 200 simulated users against the lab";

/// `peakhour --help`: the usual order of commands.
pub(super) const QUICK_START: &str = "\
Quick start (the lab: Postfix and Dovecot on loopback; see docs/lab.md):
  peakhour lab up --users 200
  peakhour init --profile mmb-medium --target lab
  peakhour run --profile mmb-medium --target lab --users 200 --speed 60
  peakhour report runs/<RUN_DIR> --format markdown

Another server: `peakhour run --help` lists the --imap and --smtp URL schemes.
Manual pages: `peakhour man`; shell completions: `peakhour completions bash`.";

/// `--imap`: every scheme `Endpoint::parse` accepts for IMAP, with its default port.
pub(super) const IMAP_URL_HELP: &str = "\
The IMAP server users read mail from, with --target explicit (--target lab
takes the lab's own), as SCHEME://HOST[:PORT] (an IPv6 address in brackets:
imap://[::1]:143). The scheme says how the connection is secured, and sets
the port when none is given:
  imap://HOST[:143]           plain text all the way, the password in clear;
  imap+starttls://HOST[:143]  plain, then STARTTLS before LOGIN: what a
                              server on port 143 usually asks for;
  imaps://HOST[:993]          TLS from the first byte (implicit TLS).

Certificates are checked against the system's CAs and --ca-file. For example:
  --imap imap+starttls://mail.example.org";

/// `--smtp`: every scheme `Endpoint::parse` accepts for SMTP submission.
pub(super) const SMTP_URL_HELP: &str = "\
The SMTP server users submit mail to, with --target explicit (--target lab
takes the lab's own), as SCHEME://HOST[:PORT]. The scheme says how the
connection is secured, and sets the port when none is given:
  smtp://HOST[:25]                   plain text all the way;
  smtp+starttls://HOST[:25]          plain, then STARTTLS after EHLO;
  submission://HOST[:587]            plain text all the way, so a server
                                     that offers AUTH only after STARTTLS
                                     seems to offer none;
  submission+starttls://HOST[:587]   plain, then STARTTLS before AUTH: what
                                     a submission port (587) usually asks for;
  submissions://HOST[:465]           TLS from the first byte (RFC 8314);
  smtps://HOST[:465]                 the same as submissions://.

After STARTTLS, EHLO is sent again. Certificates are checked against the
system's CAs and --ca-file. For example:
  --smtp submission+starttls://mail.example.org";

/// `--lmtp`: the schemes `Endpoint::parse` accepts for LMTP.
pub(super) const LMTP_URL_HELP: &str = "\
The LMTP server `init --via lmtp` delivers to, with --target explicit
(--target lab takes the lab's own), as SCHEME://HOST[:PORT]:
  lmtp://HOST[:24]            plain text;
  lmtp+starttls://HOST[:24]   plain, then STARTTLS after LHLO.

For example:
  --lmtp lmtp://127.0.0.1:24";

/// `peakhour init --help`
pub(super) const INIT_EXAMPLES: &str = "\
Examples:
  # Every lab mailbox in the profile's starting state:
  peakhour init --profile mmb-medium --target lab
  # 50 users of another server, sharing the password in $PEAKHOUR_PASSWORD:
  peakhour init --target explicit --users 50 \\
      --imap imaps://mail.example.org --smtp submissions://mail.example.org";

/// `peakhour run --help`
pub(super) const RUN_EXAMPLES: &str = "\
Examples:
  # The lab, 200 users, the day compressed 60 times, 2 minutes measured:
  peakhour run --profile mmb-medium --target lab --users 200 --speed 60 \\
      --duration 120s
  # Another server, STARTTLS on both ports, `login,password` lines in users.csv:
  peakhour run --target explicit --users-file users.csv \\
      --imap imap+starttls://mail.example.org:143 \\
      --smtp submission+starttls://mail.example.org:587";

/// `peakhour sweep --help`
pub(super) const SWEEP_EXAMPLES: &str = "\
Examples:
  peakhour sweep --profile mmb-medium --target lab --users 25,50,100,200,400
  # 50, 100, 200, 400, 800 users, 5 measured minutes each:
  peakhour sweep --target lab --from 50 --to 800 --duration 5m";

/// `peakhour lab up --help`
pub(super) const LAB_UP_EXAMPLES: &str = "\
Examples:
  peakhour lab up --users 200 --storage maildir
  # Thousands of users: let one Dovecot imap process serve 100 connections:
  peakhour lab up --users 5000 --imap-client-limit 100";

/// `peakhour report --help`
pub(super) const REPORT_EXAMPLES: &str = "\
Example:
  peakhour report runs/20260501T120000Z-mmb-medium-200u --format markdown";

/// `peakhour compare --help`
pub(super) const COMPARE_EXAMPLES: &str = "\
Example:
  peakhour compare runs/sdbox runs/maildir --format markdown --html compare.html";

/// `peakhour monitor --help`
pub(super) const MONITOR_EXAMPLES: &str = "\
Examples:
  peakhour monitor --interval 1s --duration 10m --out runs/monitor-1
  # Until Ctrl-C, with nginx's processes as a group of their own:
  peakhour monitor --until-signal --group 'nginx=^nginx'";

/// `peakhour analyze --help`
pub(super) const ANALYZE_EXAMPLES: &str = "\
Example:
  peakhour analyze capacity netbench.csv --load-column clients \\
      --throughput-column bytes_per_sec --p95-column p95_ms --json";

/// `peakhour completions --help`
pub(super) const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  peakhour completions bash > /etc/bash_completion.d/peakhour
  peakhour completions zsh > /usr/local/share/zsh/site-functions/_peakhour
  peakhour completions fish > ~/.config/fish/completions/peakhour.fish";

/// `--smb`. Built as styled text because clap turns a literal `{n}` in help
/// text into a line break (`replace_newline_var`, with no escape): an empty
/// style between `{` and `n}` keeps the pattern apart, and is invisible both on
/// a terminal and once clap strips the styling for a pipe, a completion script
/// or a man page.
pub(super) fn smb_url_help() -> clap::builder::StyledStr {
    let mut text = clap::builder::StyledStr::new();
    let reset = clap::builder::styling::Reset.render().to_string();
    text.push_str(
        &"An SMB 2/3 share, `smb://[LOGIN@]HOST[:PORT]/SHARE`. LOGIN may hold {n} (the \
          client's number); without it client n logs in as user{n}. Passwords: \
          --users-file (one `login,password` line per client) or the shared one in \
          --password-env."
            .replace("{n}", &format!("{{{reset}n}}")),
    );
    text
}

/// `peakhour man --help`
pub(super) const MAN_EXAMPLES: &str = "\
Examples:
  peakhour man | man -l -
  peakhour man lab up | man -l -
  peakhour man --dir /usr/local/share/man/man1 && mandb -q";
