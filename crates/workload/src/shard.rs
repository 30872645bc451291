//! The split of a population into shards: which users one generator of
//! several runs (`peakhour run --shard I/N`).
//!
//! Users are dealt round-robin: shard `I` of `N` runs every user `u` with
//! `u % N == I`. Each user's schedule, messages and recipients come from the
//! plan's seed and the user's index alone, so the `N` shards together run
//! exactly the users, schedules and recipients one process would, and each
//! shard's share of the logon ramp-up is spread over the whole ramp-up
//! instead of bunched at one end of it.

use std::fmt;
use std::str::FromStr;

/// One shard of `count`: the users it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Why a shard is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N`.
    #[error("a shard is written I/N (e.g. 0/4), not {0:?}")]
    Syntax(String),
    /// `N` is zero or `I` is not below `N`.
    #[error("shard {index}/{count} does not exist: the index runs from 0 to {count} - 1")]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
    /// `--shards N` outside a Kubernetes Indexed Job.
    #[error("--shards needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)")]
    NoJobIndex,
    /// A `JOB_COMPLETION_INDEX` that is not a number.
    #[error("JOB_COMPLETION_INDEX={0:?} is not an index")]
    BadJobIndex(String),
    /// Several shards without a common start.
    #[error(
        "a sharded run needs --start-at: the shards' common start, and the run's name they share"
    )]
    NoCommonStart,
}

impl Shard {
    /// Shard `index` of `count` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`).
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The whole population in one process.
    pub fn whole() -> Self {
        Shard { index: 0, count: 1 }
    }

    /// The shard a run was given: `shard` (`--shard I/N`); or one of
    /// `shards` (`--shards N`) at `job_index`, a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX`; or the whole population. A run of several
    /// shards needs their common start (`has_start`, `--start-at`).
    pub fn choose(
        shard: Option<Shard>,
        shards: Option<u32>,
        job_index: Option<&str>,
        has_start: bool,
    ) -> Result<Self, ShardError> {
        let shard = match (shard, shards) {
            (Some(shard), _) => shard,
            (None, Some(count)) => {
                let index = job_index.ok_or(ShardError::NoJobIndex)?;
                let parsed = index.trim().parse();
                let index = parsed.map_err(|_| ShardError::BadJobIndex(index.to_owned()))?;
                Shard::new(index, count)?
            }
            (None, None) => Shard::whole(),
        };
        if shard.count() > 1 && !has_start {
            return Err(ShardError::NoCommonStart);
        }
        Ok(shard)
    }

    /// Which shard this is (0-based).
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many shards share the population.
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether this shard runs `user`.
    pub fn owns(self, user: u32) -> bool {
        user % self.count == self.index
    }

    /// The users of a population of `users` this shard runs, in order.
    pub fn users(self, users: u32) -> impl Iterator<Item = u32> {
        (self.index..users).step_by(self.count as usize)
    }

    /// How many of a population of `users` this shard runs.
    pub fn user_count(self, users: u32) -> u32 {
        users.saturating_sub(self.index).div_ceil(self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (index, count) = s.split_once('/').ok_or_else(syntax)?;
        let index = index.trim().parse().map_err(|_| syntax())?;
        let count = count.trim().parse().map_err(|_| syntax())?;
        Shard::new(index, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_shard_comes_from_the_flag_the_job_index_or_is_the_whole() {
        let given = Shard::new(1, 4).ok();
        assert_eq!(
            Shard::choose(given, None, None, true),
            Ok(Shard::new(1, 4).unwrap())
        );
        assert_eq!(
            Shard::choose(None, Some(3), Some(" 2\n"), true),
            Ok(Shard::new(2, 3).unwrap())
        );
        assert_eq!(
            Shard::choose(None, None, Some("7"), false),
            Ok(Shard::whole())
        );
        assert_eq!(
            Shard::choose(None, Some(3), None, true),
            Err(ShardError::NoJobIndex)
        );
        assert_eq!(
            Shard::choose(None, Some(3), Some("x"), true),
            Err(ShardError::BadJobIndex("x".into()))
        );
        assert_eq!(
            Shard::choose(None, Some(3), Some("3"), true),
            Err(ShardError::OutOfRange { index: 3, count: 3 })
        );
        assert_eq!(
            Shard::choose(given, None, None, false),
            Err(ShardError::NoCommonStart)
        );
        // One shard of one needs no common start.
        assert_eq!(
            Shard::choose(None, Some(1), Some("0"), false),
            Ok(Shard::whole())
        );
    }

    #[test]
    fn shards_together_are_every_user_once() {
        for count in 1..=7 {
            for users in [0, 1, 5, 12, 100] {
                let mut seen: Vec<u32> = (0..count)
                    .flat_map(|i| Shard::new(i, count).unwrap().users(users))
                    .collect();
                let counted: u32 = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().user_count(users))
                    .sum();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..users).collect::<Vec<_>>(),
                    "{count} shards of {users}"
                );
                assert_eq!(counted, users);
                for i in 0..count {
                    let shard = Shard::new(i, count).unwrap();
                    assert!(shard.users(users).all(|u| shard.owns(u)));
                }
            }
        }
    }

    #[test]
    fn parses_i_of_n_and_refuses_the_rest() {
        assert_eq!("1/4".parse(), Ok(Shard::new(1, 4).unwrap()));
        assert_eq!(Shard::new(1, 4).unwrap().to_string(), "1/4");
        assert_eq!(
            "4/4".parse::<Shard>(),
            Err(ShardError::OutOfRange { index: 4, count: 4 })
        );
        assert!("0/0".parse::<Shard>().is_err());
        assert!("2".parse::<Shard>().is_err());
        assert!("a/b".parse::<Shard>().is_err());
        assert_eq!(Shard::whole().user_count(9), 9);
    }
}
