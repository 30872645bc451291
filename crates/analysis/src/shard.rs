//! What a shard of a distributed run records beyond an ordinary run: its
//! place among the shards, and the copies of mail that crossed between
//! shards, which only the merge can reconcile (docs/architecture.md,
//! "Distributed runs").

use serde::{Deserialize, Serialize};

/// One shard of a distributed run, as its record and the merged record
/// carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardMark {
    /// Which shard, numbered from 1 to `count` (as `--shard I/N`; records
    /// of peakhour before issue 31 counted from 0, and the merge refuses them).
    pub index: u32,
    /// How many shards the population was split into.
    pub count: u32,
    /// Users this shard ran.
    pub users: u32,
    /// The agreed start of the logon phase (`--start-at`, RFC 3339), when
    /// one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How late after `start_at` this shard began its logon phase, when it
    /// missed it by more than [`LATE_START_TOLERANCE_MS`]: its timeline is
    /// shifted against the others' by that much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_late_ms: Option<u64>,
    /// The shard was stopped early (cancelled) or its results were
    /// recovered after a kill.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl ShardMark {
    /// What to say of a shard that began late (`None` if it was on time):
    /// the shard says it on its terminal, and `peakhour merge` again.
    pub fn late_note(&self) -> Option<String> {
        let late = self.started_late_ms?;
        Some(format!(
            "shard {}/{} began its logon phase {late} ms after --start-at (tolerance {LATE_START_TOLERANCE_MS} ms): its intervals are shifted against the others' by that much",
            self.index, self.count
        ))
    }
}

/// A shard that begins its logon phase more than this after `--start-at`
/// started late, and says so.
pub const LATE_START_TOLERANCE_MS: u64 = 1_000;

/// A copy of a message that crossed between shards: the sender's shard
/// records when it submitted it, the recipient's shard when it noticed it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CrossCopy {
    /// The Message-ID, without angle brackets.
    pub message_id: String,
    /// The recipient's address.
    pub recipient: String,
    /// When it was submitted (sent) or noticed, µs since the Unix epoch:
    /// wall-clock time, so that times of shards on different machines
    /// compare (as well as their clocks agree).
    pub at_unix_us: u64,
}

/// A shard's side of the copies that crossed between shards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossShardDeliveries {
    /// Copies this shard's users submitted to other shards' users. They
    /// are in `submitted_recipients`, and in none of delivered, failed or
    /// lost: the merge decides.
    pub sent: Vec<CrossCopy>,
    /// Copies from other shards' users that this shard's users noticed
    /// (live, or found by the reconciliation search), each once.
    pub noticed: Vec<CrossCopy>,
}
