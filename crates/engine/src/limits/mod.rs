//! Which limit of this machine a run would hit first, and what to do about
//! it (issue 25, item 3).
//!
//! One generator process holds every simulated user's connections. Three
//! limits of the machine bound how many users that is:
//!
//! * **file descriptors**: every connection is one, and the process may
//!   hold no more than its `RLIMIT_NOFILE` hard limit ([`Machine::read`]
//!   raises the soft limit to it);
//! * **ephemeral ports** per source address: the kernel gives each outgoing
//!   connection a local port from `net.ipv4.ip_local_port_range` (about
//!   28,000), so one source address holds at most that many connections to
//!   one destination;
//! * **memory**: about [`BYTES_PER_USER`] of the generator's own memory per
//!   user (docs/PERFORMANCE.md), against `MemAvailable`.
//!
//! [`decide`] is pure: it takes the run's [`Demand`] and the [`Machine`]'s
//! numbers and says which limit comes first, by how much, and the
//! [`Action`]: nothing, several loopback source addresses (ports, on a
//! loopback target: Linux routes all of 127/8 to `lo`), or shards (file
//! descriptors, memory, or ports to a remote target). [`fit`] reads the
//! machine, decides, and sets the target's source addresses or refuses.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use peakhour_workload::{ActionKind, Plan, Shard};

use crate::run::MailProtocol;
use crate::target::Target;

mod machine;

pub use machine::{Machine, PORTS_PER_SOURCE_ENV, mem_available, port_range_size};

/// The generator's memory per user: 11.0 KiB per mmb-medium user, measured
/// at 5,000 users (docs/PERFORMANCE.md, "generator memory per user").
pub const BYTES_PER_USER: u64 = 11 * 1024;
/// The generator's memory before any user: 59.3 MiB at launch, measured
/// with the per-user figure above.
pub const BASE_MEMORY: u64 = 60 * 1024 * 1024;
/// Descriptors the process holds besides the users' connections: standard
/// streams, the runtime's epoll and wakers, the run directory's open files,
/// the metrics listener, the monitor's own sockets. A generous round figure.
pub const RESERVED_DESCRIPTORS: u64 = 64;
/// The longest an SMTP submission holds its connection, for counting those
/// open at once: a send on the lab takes tens of milliseconds, and one
/// slower than the default QoS limit (1 s) already fails the run.
pub const SUBMISSION_HOLD_SECONDS: f64 = 2.0;
/// The share of the ephemeral ports a run counts on: the rest is left for
/// ports still in TIME_WAIT and for the machine's other programs.
pub const PORT_SHARE: f64 = 0.9;
/// Loopback source addresses peakhour spreads users over, at most:
/// 127.0.0.1 to 127.0.0.254.
pub const MAX_LOOPBACK_SOURCES: u32 = 254;

/// What a run would hold at once in one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demand {
    /// The users this process runs (its shard's).
    pub users: u64,
    /// The users of the whole run (all its shards): the shards it needs
    /// are counted from these.
    pub run_users: u64,
    /// Connections each user holds for the whole run: one IMAP session, or
    /// JMAP's API connection and its EventSource push connection.
    pub held_per_user: u64,
    /// SMTP submissions open at once per user (each its own connection):
    /// the user's sends per second times how long one holds its
    /// connection, at most one.
    pub submissions_per_user: f64,
}

/// One of the machine's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_NOFILE`.
    Descriptors,
    /// Ephemeral ports of one source address.
    Ports,
    /// `MemAvailable`.
    Memory,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Descriptors => "file descriptors",
            Resource::Ports => "ephemeral ports of one source address",
            Resource::Memory => "memory",
        })
    }
}

/// How close a run comes to one limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    /// The limit.
    pub resource: Resource,
    /// What the run needs (descriptors, ports, bytes).
    pub needed: u64,
    /// What the machine gives.
    pub available: u64,
    /// The most users this limit lets one process hold.
    pub users_fit: u64,
}

impl Reach {
    /// Whether the run stays within this limit.
    pub fn fits(&self) -> bool {
        self.needed <= self.available
    }

    fn amount(&self, n: u64) -> String {
        match self.resource {
            Resource::Memory => format!("{} MiB", group(n.div_ceil(1024 * 1024))),
            Resource::Descriptors | Resource::Ports => group(n),
        }
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.users_fit == 1 { "" } else { "s" };
        write!(
            f,
            "{}: {} needed, {} available (room for {} user{plural})",
            self.resource,
            self.amount(self.needed),
            self.amount(self.available),
            group(self.users_fit)
        )
    }
}

/// What peakhour does about the first limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Every limit leaves room: run as asked.
    Fits,
    /// Ports are short and the target is on loopback: users connect from
    /// this many addresses 127.0.0.1, 127.0.0.2, ... (round-robin).
    SpreadSources(u32),
    /// Descriptors or memory (or ports to a remote target) are short: one
    /// process cannot hold the run; it needs this many shards.
    Shard(u32),
    /// Not even one user fits within this limit: what the process holds
    /// besides its users (the monitor's files, the reserve) takes it all.
    NoRoom(Resource),
}

/// Which limit a run would hit first, by how much, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The users of this process.
    pub users: u64,
    /// Every limit, the first one (fewest users fit) first.
    pub reaches: Vec<Reach>,
    /// What to do.
    pub action: Action,
}

impl Decision {
    /// The limit the run would hit first.
    pub fn first(&self) -> &Reach {
        &self.reaches[0]
    }

    /// The source addresses to connect from: 127.0.0.1 upwards for
    /// [`Action::SpreadSources`], none otherwise.
    pub fn source_addresses(&self) -> Vec<IpAddr> {
        match self.action {
            Action::SpreadSources(n) => (1..=n)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i as u8)))
                .collect(),
            Action::Fits | Action::Shard(_) | Action::NoRoom(_) => Vec::new(),
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.first();
        let plural = if self.users == 1 { "" } else { "s" };
        write!(
            f,
            "this generator's limits for {} user{plural}: first {}",
            group(self.users),
            first
        )?;
        for next in &self.reaches[1..] {
            write!(f, "; then {next}")?;
        }
        match self.action {
            Action::Fits => Ok(()),
            Action::SpreadSources(n) => write!(
                f,
                "; the users connect from {n} loopback source addresses (127.0.0.1 to \
                 127.0.0.{n}, round-robin), so each has enough ports"
            ),
            Action::Shard(n) => write!(
                f,
                "; one process cannot hold this run: split it into {n} shards, \
                 `peakhour run --shard I/{n} --start-at TIME ...` for I = 1..{n} on {n} \
                 generators (then `peakhour merge`), or `peakhour k8s job --shards {n} ...`"
            ),
            Action::NoRoom(resource) => write!(
                f,
                "; not even one user fits within {resource}: raise that limit"
            ),
        }
    }
}

/// Decides which limit `demand` hits first on `machine` and what to do; a
/// `loopback` target can be reached from several 127.0.0.x addresses.
pub fn decide(demand: &Demand, machine: &Machine, loopback: bool) -> Decision {
    let per_user = demand.held_per_user as f64 + demand.submissions_per_user;
    let connections = (demand.users as f64 * per_user).ceil() as u64;
    let fit = |available: u64, fixed: u64, cost: f64| -> u64 {
        if cost <= 0.0 {
            return u64::MAX;
        }
        (available.saturating_sub(fixed) as f64 / cost).floor() as u64
    };

    let descriptors_fixed = monitor_descriptors(machine.descriptors_hard) + RESERVED_DESCRIPTORS;
    let descriptors_needed = connections + descriptors_fixed;
    let descriptors = Reach {
        resource: Resource::Descriptors,
        needed: descriptors_needed,
        available: machine.descriptors_hard,
        users_fit: fit(machine.descriptors_hard, descriptors_fixed, per_user),
    };
    // Bound sockets take their port at bind(), unique per source address
    // whatever the destination, so every connection of a source counts.
    let port_budget = (machine.ports_per_source as f64 * PORT_SHARE).floor() as u64;
    let ports = Reach {
        resource: Resource::Ports,
        needed: connections,
        available: port_budget,
        users_fit: fit(port_budget, 0, per_user),
    };
    let memory_needed = BASE_MEMORY + demand.users * BYTES_PER_USER;
    let memory = Reach {
        resource: Resource::Memory,
        needed: memory_needed,
        available: machine.memory_available,
        users_fit: fit(machine.memory_available, BASE_MEMORY, BYTES_PER_USER as f64),
    };
    let mut reaches = vec![descriptors, ports, memory];
    reaches.sort_by_key(|r| r.users_fit);

    let sources = connections.div_ceil(port_budget.max(1));
    let spread = loopback && port_budget > 0 && sources <= u64::from(MAX_LOOPBACK_SOURCES);
    // The limits more source addresses cannot help with.
    let blocking: Vec<&Reach> = reaches
        .iter()
        .filter(|r| !(r.fits() || r.resource == Resource::Ports && spread))
        .collect();
    let run_users = demand.run_users.max(demand.users);
    let action = if let Some(full) = blocking.iter().find(|r| r.users_fit == 0) {
        Action::NoRoom(full.resource)
    } else if let Some(n) = blocking
        .iter()
        .map(|r| run_users.div_ceil(r.users_fit))
        .max()
    {
        Action::Shard(u32::try_from(n).unwrap_or(u32::MAX).max(2))
    } else if !ports.fits() {
        Action::SpreadSources(sources as u32)
    } else {
        Action::Fits
    };
    Decision {
        users: demand.users,
        reaches,
        action,
    }
}

/// The descriptors the monitor may keep open: a sixteenth of the limit, at
/// most 4,096 (`peakhour_monitor`'s kept `/proc` files).
fn monitor_descriptors(limit: u64) -> u64 {
    (limit / 16).min(4096)
}

impl Demand {
    /// What `plan` holds at once in the process that runs `shard` of it over
    /// `protocol`: the shard's users, the connections each holds, and the
    /// submissions open at once at the plan's send rate.
    pub fn of(plan: &Plan, shard: Shard, protocol: MailProtocol) -> Demand {
        let users = u64::from(plan.users().div_ceil(shard.count().max(1)));
        let held_per_user = match protocol {
            MailProtocol::Imap => 1,
            MailProtocol::Jmap => 2,
        };
        let sends_per_second: f64 = plan
            .rates()
            .iter()
            .filter(|r| r.kind == ActionKind::Send)
            .map(|r| r.per_second)
            .sum();
        Demand {
            users,
            run_users: u64::from(plan.users()),
            held_per_user,
            submissions_per_user: (sends_per_second * SUBMISSION_HOLD_SECONDS).min(1.0),
        }
    }
}

/// Why the machine's limits could not be read, or why a run was refused.
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    /// A `/proc` file that is not there or does not read as expected.
    #[error("cannot read {path}: {why}")]
    Proc {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// `getrlimit(RLIMIT_NOFILE)` failed.
    #[error("cannot read the file-descriptor limit: {0}")]
    Rlimit(nix::Error),
    /// The run does not fit one generator.
    #[error("{0}")]
    Beyond(Box<Decision>),
}

impl LimitsError {
    /// A run beyond the machine's limits is refused as bad usage (exit 2):
    /// the command line asks for more than one process can hold.
    pub fn is_usage(&self) -> bool {
        matches!(self, LimitsError::Beyond(_))
    }
}

/// Reads the machine, decides for `plan`'s `shard` over `protocol` against
/// `target`, and acts: sets the target's source addresses when ports are
/// short on loopback; refuses ([`LimitsError::Beyond`]) when the run needs
/// shards, unless `beyond_limits`. Returns the decision for the terminal.
pub fn fit(
    plan: &Plan,
    shard: Shard,
    protocol: MailProtocol,
    target: &mut Target,
    beyond_limits: bool,
) -> Result<Decision, LimitsError> {
    let machine = Machine::read()?;
    // The sources are IPv4 (127.0.0.x): an IPv6 loopback target (::1) cannot
    // be reached from them.
    let v4_loopback = |host: &str| {
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    };
    let loopback = match protocol {
        MailProtocol::Imap => v4_loopback(&target.imap.host) && v4_loopback(&target.smtp.host),
        MailProtocol::Jmap => target.jmap.as_ref().is_some_and(|j| v4_loopback(&j.host)),
    };
    let decision = decide(&Demand::of(plan, shard, protocol), &machine, loopback);
    if matches!(decision.action, Action::Shard(_) | Action::NoRoom(_)) && !beyond_limits {
        return Err(LimitsError::Beyond(Box::new(decision)));
    }
    target.options.source_addresses = decision.source_addresses();
    Ok(decision)
}

/// `28232` as `28,232`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's shape: 20,000 descriptors (hard), 32768-60999, 24 GiB.
    fn machine() -> Machine {
        Machine {
            descriptors_soft: 1024,
            descriptors_hard: 20_000,
            ports_per_source: 28_232,
            memory_available: 24 * 1024 * 1024 * 1024,
        }
    }

    fn demand(users: u64) -> Demand {
        Demand {
            users,
            run_users: users,
            held_per_user: 1,
            submissions_per_user: 0.01,
        }
    }

    #[test]
    fn issue_25_item_3_a_run_within_every_limit_fits_and_names_the_nearest() {
        let decision = decide(&demand(5_000), &machine(), true);
        assert_eq!(decision.action, Action::Fits);
        assert_eq!(decision.first().resource, Resource::Descriptors);
        // 5,000 + 50 submissions + 1,250 for the monitor + 64 reserved.
        assert_eq!(decision.first().needed, 6_364);
        assert!(decision.source_addresses().is_empty());
    }

    #[test]
    fn issue_25_item_3_descriptors_first_refuses_with_the_numbers_and_the_shards() {
        let decision = decide(&demand(30_000), &machine(), true);
        let first = *decision.first();
        assert_eq!(first.resource, Resource::Descriptors);
        assert_eq!(first.needed, 30_000 + 300 + 1_250 + 64);
        assert_eq!(first.available, 20_000);
        // (20,000 - 1,314) / 1.01 per user.
        assert_eq!(first.users_fit, 18_500);
        assert_eq!(decision.action, Action::Shard(2));
        let text = decision.to_string();
        for part in [
            "30,000 users",
            "file descriptors: 31,614 needed, 20,000 available",
            "room for 18,500 users",
            "--shard I/2",
            "k8s job --shards 2",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
    }

    #[test]
    fn issue_25_item_3_ports_first_on_loopback_spread_over_source_addresses() {
        // A machine whose descriptor limit is high: ports come first.
        let wide = Machine {
            descriptors_hard: 1_048_576,
            ..machine()
        };
        let decision = decide(&demand(60_000), &wide, true);
        let first = *decision.first();
        assert_eq!(first.resource, Resource::Ports);
        assert_eq!(first.needed, 60_600);
        assert_eq!(first.available, 25_408); // 90% of 28,232
        assert_eq!(decision.action, Action::SpreadSources(3));
        let sources = decision.source_addresses();
        assert_eq!(sources.len(), 3);
        assert_eq!(sources[2], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
        let text = decision.to_string();
        assert!(text.contains("60,600 needed, 25,408 available"), "{text}");
        assert!(text.contains("3 loopback source addresses"), "{text}");
        // A remote target cannot be reached from 127.0.0.x: shard instead.
        let remote = decide(&demand(60_000), &wide, false);
        assert_eq!(remote.action, Action::Shard(3));
        // A shard of a larger run that still does not fit: the shards are
        // counted for the whole run.
        let shard = Demand {
            run_users: 120_000,
            ..demand(60_000)
        };
        assert_eq!(decide(&shard, &wide, false).action, Action::Shard(5));
    }

    #[test]
    fn issue_25_item_3_more_sources_than_127_0_0_254_means_shards() {
        // 100 ports per address, 90 counted on: 30,000 connections need 334
        // addresses, more than 127.0.0.1-254 gives.
        let narrow = Machine {
            descriptors_hard: 1_048_576,
            ports_per_source: 100,
            ..machine()
        };
        let idle = Demand {
            submissions_per_user: 0.0,
            ..demand(30_000)
        };
        let decision = decide(&idle, &narrow, true);
        assert_eq!(decision.first().resource, Resource::Ports);
        assert_eq!(decision.first().needed, 30_000);
        // 90 users fit one address: 334 shards.
        assert_eq!(decision.action, Action::Shard(334));
    }

    #[test]
    fn issue_25_item_3_a_limit_taken_by_the_reserve_alone_asks_to_raise_it() {
        let tiny = Machine {
            descriptors_hard: 50,
            ..machine()
        };
        let decision = decide(&demand(2), &tiny, true);
        assert_eq!(decision.first().users_fit, 0);
        assert_eq!(decision.action, Action::NoRoom(Resource::Descriptors));
        let text = decision.to_string();
        assert!(
            text.contains("not even one user fits within file descriptors"),
            "{text}"
        );
    }

    #[test]
    fn issue_25_item_3_memory_first_refuses_with_the_numbers_and_the_shards() {
        let small = Machine {
            memory_available: 100 * 1024 * 1024,
            ..machine()
        };
        let decision = decide(&demand(10_000), &small, true);
        let first = *decision.first();
        assert_eq!(first.resource, Resource::Memory);
        // 60 MiB + 10,000 x 11 KiB = 167.4 MiB (shown rounded up), of 100.
        assert_eq!(first.needed, BASE_MEMORY + 10_000 * 11 * 1024);
        assert_eq!(first.users_fit, (40 * 1024 * 1024) / (11 * 1024));
        assert_eq!(decision.action, Action::Shard(3));
        let text = decision.to_string();
        assert!(
            text.contains("memory: 168 MiB needed, 100 MiB available"),
            "{text}"
        );
        assert!(text.contains("room for 3,723 users"), "{text}");
        assert!(text.contains("--shard I/3"), "{text}");
    }

    #[test]
    fn issue_25_item_3_the_demand_counts_the_shard_the_protocol_and_the_submissions() {
        let profile = peakhour_workload::builtin("mmb-medium")
            .expect("built in")
            .profile()
            .expect("parses");
        let overrides = peakhour_workload::Overrides {
            users: Some(1_000),
            ..Default::default()
        };
        let plan = Plan::resolve(&profile, &overrides).expect("plan");
        let whole = Demand::of(&plan, Shard::whole(), MailProtocol::Imap);
        assert_eq!((whole.users, whole.held_per_user), (1_000, 1));
        let sends: f64 = plan
            .rates()
            .iter()
            .filter(|r| r.kind == ActionKind::Send)
            .map(|r| r.per_second)
            .sum();
        assert!(sends > 0.0);
        let expected = (sends * SUBMISSION_HOLD_SECONDS).min(1.0);
        assert!((whole.submissions_per_user - expected).abs() < 1e-12);
        let half = Demand::of(&plan, Shard::new(1, 2).expect("shard"), MailProtocol::Jmap);
        assert_eq!((half.users, half.held_per_user), (500, 2));
        assert_eq!(half.run_users, 1_000);
    }

    #[test]
    fn large_numbers_are_grouped_by_thousands() {
        assert_eq!(group(28_232), "28,232");
        assert_eq!(group(999), "999");
    }
}
