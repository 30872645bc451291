//! Every profile `run --profile` takes by name, mail and file alike: what
//! `peakhour profiles list` and `show` print, and the names the error for an
//! unknown profile lists. One table, so that `run`, the listing and the error
//! never disagree about what is built in.

use std::fmt::Write as _;
use std::time::Duration;

use peakhour_workload::HumanDuration;
use peakhour_workload::files::file_builtins;

use crate::files::NBENCH;

/// What kind of load a built-in profile puts on a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKind {
    /// Mail and groupware users over IMAP, SMTP, POP3, CalDAV or JMAP.
    Mail,
    /// A NetBench disk mix on a file server: iterations of think time and work.
    DiskMix,
    /// A dbench/NBENCH load file replayed on a file server (`--loadfile`).
    Replay,
}

/// One profile that ships with peakhour.
#[derive(Debug, Clone)]
pub struct BuiltinProfile {
    /// Its name on the command line.
    pub name: &'static str,
    /// Its kind.
    pub kind: ProfileKind,
    /// One line saying what it models.
    pub description: &'static str,
    /// Its TOML, with the seed citations as comments (none for a replay).
    pub source: Option<&'static str>,
    /// At least how long one client's run of a disk mix takes (start delay and think
    /// time); mail profiles and replays run as long as `run`'s phases.
    pub least_length: Option<Duration>,
}

/// `run`'s phases when none is given: what a mail profile or a replay takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultPhases {
    /// `--ramp-up`.
    pub ramp_up: Duration,
    /// `--duration`.
    pub duration: Duration,
    /// `--drain`.
    pub drain: Duration,
}

const NBENCH_DESCRIPTION: &str = "dbench/NBENCH trace replay: every client replays a load file (--loadfile FILE; Debian's dbench ships /usr/share/dbench/client.txt), for --ramp-up and then --duration measured";

/// Every built-in profile, mail first, in the order `profiles list` prints them.
pub fn builtin_profiles() -> Vec<BuiltinProfile> {
    let mail = peakhour_workload::builtins()
        .iter()
        .map(|b| BuiltinProfile {
            name: b.name,
            kind: ProfileKind::Mail,
            description: b.description,
            source: Some(b.source),
            least_length: None,
        });
    let mixes = file_builtins().iter().map(|b| BuiltinProfile {
        name: b.name,
        kind: ProfileKind::DiskMix,
        description: b.description,
        source: Some(b.source),
        least_length: b.profile().ok().map(|p| p.least_length()),
    });
    let replay = BuiltinProfile {
        name: NBENCH,
        kind: ProfileKind::Replay,
        description: NBENCH_DESCRIPTION,
        source: None,
        least_length: None,
    };
    mail.chain(mixes).chain([replay]).collect()
}

/// The built-in names, comma-separated, for an error that lists them.
pub fn builtin_names() -> String {
    let names: Vec<&str> = builtin_profiles().iter().map(|p| p.name).collect();
    names.join(", ")
}

/// The built-in profile called `name`.
pub fn builtin_profile(name: &str) -> Option<BuiltinProfile> {
    builtin_profiles().into_iter().find(|p| p.name == name)
}

/// `peakhour profiles list`: every built-in, with how long a run of it takes when
/// `run` is given no phase (`phases`) and what shortens it.
pub fn list_text(phases: &DefaultPhases) -> String {
    let total = phases.ramp_up + phases.duration + phases.drain;
    let mut out = String::new();
    let _ = writeln!(out, "{:<25} {:<16} what it models", "name", "a run takes");
    let profiles = builtin_profiles();
    for profile in &profiles {
        let length = match (profile.kind, profile.least_length) {
            (ProfileKind::DiskMix, Some(least)) => format!("over {}", HumanDuration(least)),
            (ProfileKind::Replay, _) => HumanDuration(phases.ramp_up + phases.duration).to_string(),
            _ => HumanDuration(total).to_string(),
        };
        let _ = writeln!(
            out,
            "{:<25} {length:<16} {}",
            profile.name, profile.description
        );
    }
    let _ = write!(
        out,
        "\nHow long: a mail profile runs --ramp-up {} + --duration {} + --drain {} (run's \
         defaults);\nnbench runs --ramp-up + --duration. A disk mix runs its own iterations: \
         the start delay and\nthe think time before every piece of work, operations on top. \
         For a quick file run:\n  peakhour run --profile netbench-disk-mix-short --users 4   \
         # lab up --with smb first\n(or shorten a mix with --measured-iterations and \
         --work-per-iteration; docs/files.md).\n",
        HumanDuration(phases.ramp_up),
        HumanDuration(phases.duration),
        HumanDuration(phases.drain),
    );
    out
}

/// `peakhour profiles show NAME` for a built-in: its TOML, or for the replay, which
/// has none, what it does in TOML comments.
pub fn show_text(profile: &BuiltinProfile) -> String {
    match profile.source {
        Some(source) => source.to_owned(),
        None => format!(
            "# {}: {}\n# It has no TOML: the load file is the workload.\n",
            profile.name, profile.description
        ),
    }
}
