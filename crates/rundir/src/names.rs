//! The names of run directories, and the dates written into them.

use std::path::PathBuf;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

/// Where runs go when no `--out` is given, relative to the working directory.
pub const RUNS_DIR: &str = "runs";

/// What a directory under [`RUNS_DIR`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind<'a> {
    /// One `peakhour run` of a profile with a number of users.
    Run {
        /// The profile's name.
        profile: &'a str,
        /// Simulated users.
        users: u32,
    },
    /// `peakhour monitor` on its own.
    Monitor,
    /// A `peakhour sweep` of a profile (its steps are runs inside it).
    Sweep {
        /// The profile's name.
        profile: &'a str,
    },
    /// One of the planner's commands (`tasks`, `matrix`) on a profile.
    Planner {
        /// The command: `tasks` or `matrix`.
        command: &'a str,
        /// The profile's name.
        profile: &'a str,
    },
}

/// The directory's name: the start in UTC, sortable, then what it holds:
/// `20261121T090000Z-mmb-medium-200u`, `20261121T090000Z-monitor`,
/// `20261121T090000Z-sweep-mmb-medium`. A run's name is also its id.
pub fn dir_name(started: SystemTime, kind: DirKind<'_>) -> String {
    let stamp = compact(started);
    match kind {
        DirKind::Run { profile, users } => format!("{stamp}-{}-{users}u", slug(profile)),
        DirKind::Monitor => format!("{stamp}-monitor"),
        DirKind::Sweep { profile } => format!("{stamp}-sweep-{}", slug(profile)),
        DirKind::Planner { command, profile } => {
            format!("{stamp}-{}-{}", slug(command), slug(profile))
        }
    }
}

/// `runs/<dir_name>`: where a run goes by default.
pub fn default_dir(started: SystemTime, kind: DirKind<'_>) -> PathBuf {
    PathBuf::from(RUNS_DIR).join(dir_name(started, kind))
}

/// A profile's name made safe in a file name: ASCII letters, digits, `-`
/// and `_` are kept, anything else (a `/` above all) becomes `-`.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// `20261121T090000Z`: sortable, and safe in a file name.
fn compact(at: SystemTime) -> String {
    DateTime::<Utc>::from(at)
        .format("%Y%m%dT%H%M%SZ")
        .to_string()
}

/// `2026-11-21T09:00:00Z`.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    DateTime::<Utc>::from(at)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// 2026-11-21T09:00:00.750Z.
    fn at() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_795_251_600_750)
    }

    #[test]
    fn names_start_with_the_utc_time_and_say_what_they_hold() {
        let run = DirKind::Run {
            profile: "mmb-medium",
            users: 200,
        };
        assert_eq!(dir_name(at(), run), "20261121T090000Z-mmb-medium-200u");
        assert_eq!(dir_name(at(), DirKind::Monitor), "20261121T090000Z-monitor");
        let sweep = DirKind::Sweep {
            profile: "groupwise-20x3",
        };
        assert_eq!(
            dir_name(at(), sweep),
            "20261121T090000Z-sweep-groupwise-20x3"
        );
        let tasks = DirKind::Planner {
            command: "tasks",
            profile: "mmb-medium",
        };
        assert_eq!(dir_name(at(), tasks), "20261121T090000Z-tasks-mmb-medium");
        assert_eq!(
            default_dir(at(), DirKind::Monitor),
            PathBuf::from("runs/20261121T090000Z-monitor")
        );
        assert_eq!(rfc3339(at()), "2026-11-21T09:00:00Z");
    }

    #[test]
    fn a_profile_name_cannot_make_a_nested_directory() {
        let run = DirKind::Run {
            profile: "../team a/heavy",
            users: 5,
        };
        assert_eq!(dir_name(at(), run), "20261121T090000Z----team-a-heavy-5u");
    }
}
