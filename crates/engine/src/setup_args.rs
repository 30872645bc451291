//! A target back into flags: what a child `peakhour init` or `peakhour run`
//! (a sweep's step, a planner task, a matrix cell) is given so that it
//! reaches the same target as the command that starts it.

use std::ffi::OsString;

use peakhour_smtp::AuthPolicy;

use crate::setup::TargetSpec;

impl TargetSpec {
    /// The `--target ...` flags that name this target to another peakhour.
    pub fn command_line(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = match &self.lab_dir {
            Some(dir) => vec![
                "--target".into(),
                "lab".into(),
                "--lab-dir".into(),
                dir.into(),
            ],
            None => vec!["--target".into(), "explicit".into()],
        };
        out.extend(["--password-env".into(), self.password_env.clone().into()]);
        let mut push = |flag: &str, value: Option<OsString>| {
            if let Some(value) = value {
                out.push(flag.into());
                out.push(value);
            }
        };
        push("--imap", self.imap.clone().map(Into::into));
        push("--smtp", self.smtp.clone().map(Into::into));
        push("--lmtp", self.lmtp.clone().map(Into::into));
        push("--pop3", self.pop3.clone().map(Into::into));
        push("--caldav", self.caldav.clone().map(Into::into));
        push("--jmap", self.jmap.clone().map(Into::into));
        push("--users-file", self.users_file.clone().map(Into::into));
        push("--ca-file", self.ca_file.clone().map(Into::into));
        let prefix = self.options.folder_prefix.clone();
        push("--folder-prefix", prefix.map(Into::into));
        if self.insecure_skip_tls_verify {
            out.push("--insecure-skip-tls-verify".into());
        }
        let auth = match self.options.smtp_auth {
            AuthPolicy::Auto => "auto",
            AuthPolicy::None => "none",
            AuthPolicy::Plain => "plain",
            AuthPolicy::Login => "login",
        };
        out.extend(["--smtp-auth".into(), auth.into()]);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::ServerOptions;

    fn explicit() -> TargetSpec {
        TargetSpec {
            lab_dir: None,
            imap: Some("imaps://mail.example.com:993".into()),
            smtp: Some("submissions://mail.example.com:465".into()),
            lmtp: None,
            pop3: None,
            caldav: None,
            jmap: None,
            users_file: Some(PathBuf::from("users.csv")),
            password_env: "PW".into(),
            ca_file: None,
            insecure_skip_tls_verify: true,
            options: ServerOptions {
                smtp_auth: AuthPolicy::Plain,
                folder_prefix: Some("INBOX.".into()),
                source_addresses: Vec::new(),
            },
        }
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn an_explicit_target_passes_every_endpoint_and_option_it_was_given() {
        assert_eq!(
            strings(explicit().command_line()),
            [
                "--target",
                "explicit",
                "--password-env",
                "PW",
                "--imap",
                "imaps://mail.example.com:993",
                "--smtp",
                "submissions://mail.example.com:465",
                "--users-file",
                "users.csv",
                "--folder-prefix",
                "INBOX.",
                "--insecure-skip-tls-verify",
                "--smtp-auth",
                "plain",
            ]
        );
    }

    /// Regression: a sweep's or a planner's child lost `--pop3`, `--caldav`
    /// and `--jmap`, so a step against an explicit POP3, CalDAV or JMAP
    /// server failed its preflight (or spoke IMAP instead of JMAP's server).
    #[test]
    fn a_child_keeps_the_pop3_caldav_and_jmap_servers_it_was_given() {
        let spec = TargetSpec {
            pop3: Some("pop3s://mail.example.com:995".into()),
            caldav: Some("https://cal.example.com/dav/".into()),
            jmap: Some("https://mail.example.com/".into()),
            ..explicit()
        };
        let args = strings(spec.command_line());
        for (flag, value) in [
            ("--pop3", "pop3s://mail.example.com:995"),
            ("--caldav", "https://cal.example.com/dav/"),
            ("--jmap", "https://mail.example.com/"),
        ] {
            let at = args.iter().position(|a| a == flag).expect(flag);
            assert_eq!(args[at + 1], value);
        }
    }

    #[test]
    fn a_lab_target_names_its_directory() {
        let spec = TargetSpec {
            lab_dir: Some(PathBuf::from("/tmp/lab")),
            imap: None,
            smtp: None,
            users_file: None,
            insecure_skip_tls_verify: false,
            options: ServerOptions::default(),
            ..explicit()
        };
        assert_eq!(
            strings(spec.command_line()),
            [
                "--target",
                "lab",
                "--lab-dir",
                "/tmp/lab",
                "--password-env",
                "PW",
                "--smtp-auth",
                "auto"
            ]
        );
    }
}
