//! The split of a population into shards: which users one generator of
//! several runs (`peakhour run --shard I/N`).
//!
//! Shards are numbered from 1 to `N`, as Playwright's and Jest's `--shard`
//! are (`1/2`, `2/2`). Users are dealt round-robin: shard `I` of `N` runs
//! every user `u` (counted from 0) with `u % N == I - 1`. Each user's schedule, messages and recipients come from the
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
    #[error("a shard is written I/N (e.g. 1/4), not {0:?}")]
    Syntax(String),
    /// Shard 0: numbered from 0 before; from 1 now, and `1/N` means
    /// another part of the population than it did, so 0 is refused rather
    /// than quietly read the old way.
    #[error(
        "shard 0/{count} does not exist: shards are numbered from 1 to {count} (as Playwright and Jest number them); peakhour numbered them from 0 before, so what was 0/{count} is now 1/{count}, and every other index moved up by one"
    )]
    Zero {
        /// The count given.
        count: u32,
    },
    /// `N` is zero or `I` is above `N`.
    #[error("shard {number}/{count} does not exist: shards are numbered from 1 to {count}")]
    OutOfRange {
        /// The number given.
        number: u32,
        /// The count given.
        count: u32,
    },
    /// `--shards N` outside a Kubernetes Indexed Job.
    #[error("--shards needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)")]
    NoJobIndex,
    /// A `JOB_COMPLETION_INDEX` that is not a number.
    #[error("JOB_COMPLETION_INDEX={0:?} is not an index")]
    BadJobIndex(String),
    /// A `JOB_COMPLETION_INDEX` (0-based) not below `--shards`.
    #[error(
        "JOB_COMPLETION_INDEX={index} is not one of --shards {count} (Kubernetes counts 0 to {count} - 1)"
    )]
    JobIndexOutOfRange {
        /// The index Kubernetes gave.
        index: u32,
        /// `--shards`.
        count: u32,
    },
    /// Several shards without a common start.
    #[error(
        "a sharded run needs --start-at: the shards' common start, and the run's name they share"
    )]
    NoCommonStart,
}

impl Shard {
    /// Shard `number` of `count`, numbered from 1 (`--shard 1/2`, `2/2`).
    pub fn new(number: u32, count: u32) -> Result<Self, ShardError> {
        if number == 0 && count > 0 {
            return Err(ShardError::Zero { count });
        }
        if count == 0 || number == 0 || number > count {
            return Err(ShardError::OutOfRange { number, count });
        }
        Ok(Shard {
            index: number - 1,
            count,
        })
    }

    /// The shard a Kubernetes Indexed Job's pod runs: its
    /// `JOB_COMPLETION_INDEX` counts from 0, shards from 1.
    pub fn from_job_index(index: u32, count: u32) -> Result<Self, ShardError> {
        if index >= count {
            return Err(ShardError::JobIndexOutOfRange { index, count });
        }
        Shard::new(index + 1, count)
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
                Shard::from_job_index(index, count)?
            }
            (None, None) => Shard::whole(),
        };
        if shard.count() > 1 && !has_start {
            return Err(ShardError::NoCommonStart);
        }
        Ok(shard)
    }

    /// Which shard this is, counted from 0: its users `u` have
    /// `u % count == index`. People and files see [`Self::number`].
    pub fn index(self) -> u32 {
        self.index
    }

    /// Which shard this is, numbered from 1 (as `--shard` takes it).
    pub fn number(self) -> u32 {
        self.index + 1
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
        write!(f, "{}/{}", self.number(), self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (index, count) = s.split_once('/').ok_or_else(syntax)?;
        let number = index.trim().parse().map_err(|_| syntax())?;
        let count = count.trim().parse().map_err(|_| syntax())?;
        Shard::new(number, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_shard_comes_from_the_flag_the_job_index_or_is_the_whole() {
        let given = Shard::new(2, 4).ok();
        assert_eq!(
            Shard::choose(given, None, None, true),
            Ok(Shard::new(2, 4).unwrap())
        );
        // Kubernetes' index 2 (from 0) is shard 3 (from 1).
        assert_eq!(
            Shard::choose(None, Some(3), Some(" 2\n"), true),
            Ok(Shard::new(3, 3).unwrap())
        );
        assert_eq!(
            Shard::choose(None, Some(3), Some("0"), true).map(Shard::number),
            Ok(1)
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
            Err(ShardError::JobIndexOutOfRange { index: 3, count: 3 })
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
                let mut seen: Vec<u32> = (1..=count)
                    .flat_map(|n| Shard::new(n, count).unwrap().users(users))
                    .collect();
                let counted: u32 = (1..=count)
                    .map(|n| Shard::new(n, count).unwrap().user_count(users))
                    .sum();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..users).collect::<Vec<_>>(),
                    "{count} shards of {users}"
                );
                assert_eq!(counted, users);
                for n in 1..=count {
                    let shard = Shard::new(n, count).unwrap();
                    assert!(shard.users(users).all(|u| shard.owns(u)));
                }
            }
        }
    }

    #[test]
    fn issue_31_item_4_shards_are_numbered_from_one_to_n_and_zero_says_why_not() {
        assert_eq!("1/2".parse::<Shard>().unwrap().index(), 0);
        assert_eq!("2/2".parse::<Shard>().unwrap().index(), 1);
        assert_eq!("2/2".parse::<Shard>().unwrap().to_string(), "2/2");
        assert_eq!(Shard::whole().to_string(), "1/1");
        let zero = "0/2".parse::<Shard>().unwrap_err();
        assert_eq!(zero, ShardError::Zero { count: 2 });
        let said = zero.to_string();
        assert!(
            said.contains("numbered from 1 to 2") && said.contains("now 1/2"),
            "{said}"
        );
        assert_eq!(
            "3/2".parse::<Shard>(),
            Err(ShardError::OutOfRange {
                number: 3,
                count: 2
            })
        );
        assert!("1/0".parse::<Shard>().is_err());
        assert!("2".parse::<Shard>().is_err());
        assert!("a/b".parse::<Shard>().is_err());
        assert_eq!(Shard::whole().user_count(9), 9);
    }
}
