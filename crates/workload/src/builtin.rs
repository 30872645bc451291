//! The built-in profiles, compiled into the binary from `crates/workload/profiles/`.

use crate::error::{PlanError, ProfileError};
use crate::profile::Profile;

/// A profile that ships with peakhour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// Name used on the command line (`--profile mmb-medium`).
    pub name: &'static str,
    /// One line for `peakhour profiles list`.
    pub description: &'static str,
    /// The TOML source, with its seed citations as comments.
    pub source: &'static str,
}

impl Builtin {
    /// Parses the built-in profile.
    pub fn profile(&self) -> Result<Profile, ProfileError> {
        Profile::parse(&format!("builtin:{}.toml", self.name), self.source)
    }
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "mmb-medium",
        description: "MMB / LoadSim Medium user: Table 3 actions per 8-hour day, Table 4 message mix (seed 002)",
        source: include_str!("../profiles/mmb-medium.toml"),
    },
    Builtin {
        name: "groupwise-20x3",
        description: "GroupWise procedure: each user sends 20 messages to 3 random recipients, then stops (seed 000)",
        source: include_str!("../profiles/groupwise-20x3.toml"),
    },
    Builtin {
        name: "caldav-office",
        description: "Calendar user after Apple CalendarServer's load simulator: polls its calendar home, creates events in working hours, changes them (CalDAV)",
        source: include_str!("../profiles/caldav-office.toml"),
    },
    Builtin {
        name: "pop3-user",
        description: "POP3 user: checks mail every 10 minutes (Thunderbird's default), downloads it, deletes or keeps it, sends over SMTP (Sun heavyweight POP)",
        source: include_str!("../profiles/pop3-user.toml"),
    },
];

/// Every built-in profile, for `peakhour profiles list`.
pub fn builtins() -> &'static [Builtin] {
    BUILTINS
}

/// The built-in profile called `name`.
pub fn builtin(name: &str) -> Result<&'static Builtin, PlanError> {
    BUILTINS
        .iter()
        .find(|b| b.name == name)
        .ok_or_else(|| PlanError::UnknownBuiltin(name.to_owned()))
}
