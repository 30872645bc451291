//! Turning `--profile` and `--target ...` into a plan and a target.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use peakhour_engine::{Account, Credentials, Endpoint, Population, Target};
use peakhour_lab::{Lab, LabStatus};
use peakhour_net::{Secret, TlsSettings};
use peakhour_workload::{Overrides, Plan, Profile, builtin};

use crate::args::TargetArgs;
use crate::config::UsageError;

/// Reads a built-in profile by name, or a profile file by path.
pub(crate) fn load_profile(name: &str) -> anyhow::Result<Profile> {
    if let Ok(builtin) = builtin(name) {
        return Ok(builtin.profile()?);
    }
    let path = Path::new(name);
    if !path.exists() {
        let names: Vec<&str> = peakhour_workload::builtins()
            .iter()
            .map(|b| b.name)
            .collect();
        bail!(
            "no built-in profile or file called {name:?} (built-in: {})",
            names.join(", ")
        );
    }
    let source =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Profile::parse(&path.display().to_string(), &source)?)
}

/// A resolved target, and the lab's status when it is the lab.
pub(crate) struct ResolvedTarget {
    pub(crate) target: Arc<Target>,
    pub(crate) lab: Option<LabStatus>,
}

fn tls_settings(
    args: &TargetArgs,
    lab_ca: Option<&str>,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let settings = TlsSettings {
        verify: !args.insecure_skip_tls_verify,
        extra_ca_file: args.ca_file.clone().or_else(|| lab_ca.map(Into::into)),
        use_system_roots: true,
    };
    Ok(settings.client_config()?)
}

pub(crate) fn resolve_target(args: &TargetArgs) -> anyhow::Result<ResolvedTarget> {
    if args.target == "lab" {
        let status = Lab::new(&args.lab_dir)
            .status()
            .with_context(|| "--target lab needs a running lab (peakhour lab up)")?;
        if !status.healthy {
            bail!(
                "the lab in {} is not healthy; see `peakhour lab status --lab-dir {}`",
                status.dir,
                args.lab_dir.display()
            );
        }
        let url = |scheme: &str, endpoint: &str| format!("{scheme}://{endpoint}");
        let target = Target {
            imap: Endpoint::parse(&url("imap", &status.endpoints.imap), &["imap"])?,
            smtp: Endpoint::parse(&url("smtp", &status.endpoints.smtp), &["smtp"])?,
            lmtp: Some(Endpoint::parse(
                &url("lmtp", &status.endpoints.lmtp),
                &["lmtp"],
            )?),
            jmap: (status.endpoints.jmap.as_deref())
                .map(|url| Endpoint::parse(url, &["http"]))
                .transpose()?,
            tls: tls_settings(args, Some(&status.ca_file))?,
            credentials: Credentials::Shared(Secret::new(status.password.clone())),
        };
        return Ok(ResolvedTarget {
            target: Arc::new(target),
            lab: Some(status),
        });
    }
    let imap = args
        .imap
        .as_deref()
        .context("--target explicit needs --imap URL")?;
    let smtp = args
        .smtp
        .as_deref()
        .context("--target explicit needs --smtp URL")?;
    let credentials = match &args.users_file {
        Some(path) => Credentials::PerUser(read_users_file(path)?),
        None => {
            let password = std::env::var(&args.password_env).with_context(|| {
                format!(
                    "set the users' password in ${} (or give --users-file)",
                    args.password_env
                )
            })?;
            Credentials::Shared(Secret::new(password))
        }
    };
    let target = Target {
        imap: Endpoint::parse(imap, &["imap", "imaps"]).context("--imap")?,
        smtp: Endpoint::parse(smtp, &["smtp", "submission", "submissions", "smtps"])
            .context("--smtp")?,
        lmtp: args
            .lmtp
            .as_deref()
            .map(|url| Endpoint::parse(url, &["lmtp"]))
            .transpose()
            .context("--lmtp")?,
        jmap: (args.jmap.as_deref())
            .map(|url| Endpoint::parse(url, &["http", "https"]))
            .transpose()
            .context("--jmap")?,
        tls: tls_settings(args, None)?,
        credentials,
    };
    Ok(ResolvedTarget {
        target: Arc::new(target),
        lab: None,
    })
}

/// `login,password[,address]` per line; `#` comments and blank lines are
/// skipped. These users are the run's whole test population: mail goes only
/// to their addresses. The address is the third column, or the login when
/// the login is an address. A password may hold commas; one whose last
/// comma is followed by something like an address needs the third column.
fn read_users_file(path: &Path) -> anyhow::Result<Vec<Account>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut users = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), index + 1);
        users.push(parse_account(line).map_err(|why| anyhow::anyhow!("{}: {why}", at()))?);
    }
    if users.is_empty() {
        bail!("{} holds no users", path.display());
    }
    Ok(users)
}

/// One line of a users file.
fn parse_account(line: &str) -> Result<Account, String> {
    let Some((login, rest)) = line.split_once(',') else {
        return Err("expected `login,password[,address]`".into());
    };
    let login = login.trim();
    if login.is_empty() {
        return Err("empty login".into());
    }
    let looks_like_address =
        |s: &str| s.contains('@') && !s.contains(char::is_whitespace) && !s.ends_with('@');
    let (password, address) = match rest.rsplit_once(',') {
        Some((password, address)) if looks_like_address(address.trim()) => {
            (password, address.trim().to_owned())
        }
        _ if looks_like_address(login) => (rest, login.to_owned()),
        _ => {
            return Err(format!(
                "the login {login:?} is not a mail address: add the user's address as a third \
                 column (login,password,address), so that the run knows where its mail goes"
            ));
        }
    };
    Ok(Account {
        login: login.to_owned(),
        password: Secret::new(password.to_owned()),
        address,
    })
}

/// The run's test population, refused before any connection when it is
/// unusable, or (on an explicit target) when a domain of it is neither a
/// reserved test domain nor named with `--allow-domain`.
pub(crate) fn check_population(
    plan: &peakhour_workload::Plan,
    resolved: &ResolvedTarget,
    allowed: &[String],
) -> Result<Population, UsageError> {
    let population = Population::new(plan, &resolved.target.credentials)
        .map_err(|e| UsageError(format!("the test population: {e}")))?;
    if resolved.lab.is_none() {
        population.check_domains(allowed).map_err(|e| {
            UsageError(format!("{e}; nothing was sent and no server was contacted"))
        })?;
    }
    Ok(population)
}

/// Resolves the plan; with the lab, the user count defaults to the lab's and may not exceed it.
pub(crate) fn resolve_plan(
    profile: &Profile,
    mut overrides: Overrides,
    resolved: &ResolvedTarget,
) -> anyhow::Result<Arc<Plan>> {
    if let Some(lab) = &resolved.lab {
        let users = *overrides.users.get_or_insert(lab.users);
        if users > lab.users {
            bail!(
                "the lab has {} users and {users} were asked for; restart it with `peakhour lab down && peakhour lab up --users {users}`",
                lab.users
            );
        }
    }
    if let Credentials::PerUser(list) = &resolved.target.credentials {
        let users = *overrides
            .users
            .get_or_insert(u32::try_from(list.len()).unwrap_or(u32::MAX));
        if users as usize > list.len() {
            bail!(
                "--users {users} but the users file lists only {}",
                list.len()
            );
        }
    }
    Ok(Arc::new(Plan::resolve(profile, &overrides)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_file_line_gives_login_password_and_address() {
        let account = parse_account("alice,s3cret,alice@corp.example").unwrap();
        assert_eq!(account.login, "alice");
        assert_eq!(account.password.expose(), "s3cret");
        assert_eq!(account.address, "alice@corp.example");
        let account = parse_account("bob@x.test,pa,ss").unwrap();
        assert_eq!(account.address, "bob@x.test");
        assert_eq!(account.password.expose(), "pa,ss");
        let error = parse_account("carol,pw").unwrap_err();
        assert!(error.contains("third column"), "{error}");
        assert!(parse_account("dave").is_err());
    }
}
