//! Turning `--profile` and `--target ...` into a plan and a target.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use peakhour_engine::{
    Account, CalDavEndpoint, Credentials, Endpoint, Population, ServerOptions, Target,
    security_shortcuts,
};
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
    /// What weakens its security, warned about on stderr and recorded.
    pub(crate) shortcuts: Vec<String>,
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

fn server_options(args: &TargetArgs) -> ServerOptions {
    ServerOptions {
        smtp_auth: args.smtp_auth,
        folder_prefix: args.folder_prefix.clone(),
    }
}

/// The target, with a warning on stderr for each security shortcut it takes.
pub(crate) fn resolve_target(args: &TargetArgs) -> anyhow::Result<ResolvedTarget> {
    let mut resolved = resolve_endpoints(args)?;
    let t = &resolved.target;
    resolved.shortcuts = security_shortcuts(&t.imap, &t.smtp, args.insecure_skip_tls_verify);
    for shortcut in &resolved.shortcuts {
        eprintln!("warning: {shortcut}");
    }
    Ok(resolved)
}

fn resolve_endpoints(args: &TargetArgs) -> anyhow::Result<ResolvedTarget> {
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
            caldav: caldav_endpoint(args, status.endpoints.caldav.as_deref())?,
            pop3: Some(Endpoint::parse(
                &url("pop3", &status.endpoints.pop3),
                &["pop3"],
            )?),
            tls: tls_settings(args, Some(&status.ca_file))?,
            credentials: Credentials::Shared(Secret::new(status.password.clone())),
            options: server_options(args),
        };
        return Ok(ResolvedTarget {
            target: Arc::new(target),
            lab: Some(status),
            shortcuts: Vec::new(),
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
        caldav: caldav_endpoint(args, None)?,
        pop3: args
            .pop3
            .as_deref()
            .map(|url| Endpoint::parse(url, &["pop3", "pop3s"]))
            .transpose()
            .context("--pop3")?,
        tls: tls_settings(args, None)?,
        credentials,
        options: server_options(args),
    };
    Ok(ResolvedTarget {
        target: Arc::new(target),
        lab: None,
        shortcuts: Vec::new(),
    })
}

/// The CalDAV server: `--caldav URL` if given (for any target), else the
/// lab's own (`endpoints.caldav` of its status), else none.
fn caldav_endpoint(args: &TargetArgs, lab: Option<&str>) -> anyhow::Result<Option<CalDavEndpoint>> {
    args.caldav
        .as_deref()
        .or(lab)
        .map(CalDavEndpoint::parse)
        .transpose()
        .context("--caldav")
}

/// The users file (see [`Account::parse_users`]): the run's whole test population.
fn read_users_file(path: &Path) -> anyhow::Result<Vec<Account>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Account::parse_users(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
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
