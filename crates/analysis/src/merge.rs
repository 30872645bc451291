//! `peakhour merge`: the shards of a distributed run added into one record
//! whose percentiles are those of every sample of every shard.
//!
//! HdrHistograms add exactly: the histogram of two shards' samples is the
//! sum of their histograms, count for count, so the merged p95 is the p95 of
//! the combined samples, not an average of p95s. Shards are added interval
//! by interval. Every shard's intervals lie on the same grid (offsets from
//! its own start, cut where the planned phases change), so the `n`-th
//! interval of a phase is the same stretch of the run in every shard; only
//! the last one, cut where each shard's drain ended, differs in length, and
//! the merged one takes the longest.
//!
//! Deliveries that crossed between shards are reconciled here: a copy one
//! shard sent to another shard's user is delivered when that shard noticed
//! it, with the wall-clock time between the two as its latency, and lost
//! when no shard did.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::histogram::LatencyHistogram;
use crate::record::{DeliveryRecord, IntervalRecord, LOST_LIST_CAP, Phase, RunMeta, RunRecord};
use crate::shard::ShardMark;
use crate::{AnalysisError, LostRecipient};

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no shard to merge")]
    NoShards,
    /// A record is not a shard's (`run` without `--shard`, or a merged one).
    #[error("run {run_id} is not a shard of a distributed run (no --shard), or is already merged")]
    NotAShard {
        /// The record's run id.
        run_id: String,
    },
    /// The shards are not of one run.
    #[error("the shards are not of one run: {what} differs ({left} vs {right})")]
    Mismatch {
        /// What differs: run id, seed, profile, users, shard count, interval.
        what: &'static str,
        /// The first shard's value.
        left: String,
        /// The other's.
        right: String,
    },
    /// A shard numbered 0: recorded by a peakhour that numbered shards from
    /// 0, whose `I/N` is another part of the population than today's.
    #[error(
        "run {run_id} is shard 0/{count}: recorded by a peakhour that numbered shards from 0; shards are numbered from 1 to {count} now, and records of the two numberings cannot be merged"
    )]
    NumberedFromZero {
        /// The record's run id.
        run_id: String,
        /// The shard count.
        count: u32,
    },
    /// The same shard twice.
    #[error("shard {index}/{count} is given twice")]
    Duplicate {
        /// The shard's index.
        index: u32,
        /// The shard count.
        count: u32,
    },
    /// A histogram would not decode, add or encode.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
}

/// A merged record and what the merge found worth saying.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The sum of the shards.
    pub record: RunRecord,
    /// Shards missing, started late, interrupted or recovered; crossed
    /// copies nobody sent: one sentence each.
    pub warnings: Vec<String>,
}

/// Adds the shards' records into one (see the module's overview). The
/// monitor's data are not in records; the caller takes them from one shard.
pub fn merge_shards(records: &[RunRecord]) -> Result<Merged, MergeError> {
    let first = records.first().ok_or(MergeError::NoShards)?;
    let mut warnings = Vec::new();
    let marks = check_shards(records)?;
    let mut meta = merged_meta(first, records, marks.clone());
    let count = first.meta.shards[0].count;
    let present: BTreeSet<u32> = marks.iter().map(|m| m.index).collect();
    let missing: Vec<String> = (1..=count)
        .filter(|i| !present.contains(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        meta.interrupted = true;
        warnings.push(format!(
            "shards {} are missing: the merged run covers part of the population, and copies sent to their users count lost",
            missing.join(", ")
        ));
    }
    for mark in &marks {
        warnings.extend(mark.late_note());
        if mark.interrupted {
            warnings.push(format!(
                "shard {}/{} was interrupted: its figures are partial",
                mark.index, mark.count
            ));
        }
    }
    let intervals = merge_intervals(records)?;
    let delivery = merge_deliveries(records, &mut warnings)?;
    let mut record = RunRecord::new(meta, intervals, delivery);
    record.state_checks = crate::StateChecks::merge(records.iter().map(|r| &r.state_checks));
    Ok(Merged { record, warnings })
}

/// Every record is one shard of the same run, each shard once; their marks.
fn check_shards(records: &[RunRecord]) -> Result<Vec<ShardMark>, MergeError> {
    let first = &records[0];
    let mut marks: Vec<ShardMark> = Vec::new();
    for record in records {
        let meta = &record.meta;
        let [mark] = meta.shards.as_slice() else {
            return Err(MergeError::NotAShard {
                run_id: meta.run_id.clone(),
            });
        };
        if meta.merged {
            return Err(MergeError::NotAShard {
                run_id: meta.run_id.clone(),
            });
        }
        let same = |what, left: String, right: String| {
            if left == right {
                Ok(())
            } else {
                Err(MergeError::Mismatch { what, left, right })
            }
        };
        let a = &first.meta;
        same("run id", a.run_id.clone(), meta.run_id.clone())?;
        same("seed", a.seed.to_string(), meta.seed.to_string())?;
        same("profile", a.profile.clone(), meta.profile.clone())?;
        same("users", a.users.to_string(), meta.users.to_string())?;
        same(
            "interval",
            format!("{:?}", a.interval),
            format!("{:?}", meta.interval),
        )?;
        same(
            "shard count",
            a.shards[0].count.to_string(),
            mark.count.to_string(),
        )?;
        if mark.index == 0 {
            return Err(MergeError::NumberedFromZero {
                run_id: meta.run_id.clone(),
                count: mark.count,
            });
        }
        if marks.iter().any(|m| m.index == mark.index) {
            return Err(MergeError::Duplicate {
                index: mark.index,
                count: mark.count,
            });
        }
        let mut mark = mark.clone();
        mark.interrupted |= meta.interrupted || meta.recovered.is_some();
        marks.push(mark);
    }
    marks.sort_by_key(|m| m.index);
    Ok(marks)
}

/// The first shard's metadata, widened to the whole run.
fn merged_meta(first: &RunRecord, records: &[RunRecord], marks: Vec<ShardMark>) -> RunMeta {
    let mut meta = first.meta.clone();
    meta.merged = true;
    meta.shards = marks;
    for record in records {
        let theirs = &record.meta;
        meta.interrupted |= theirs.interrupted;
        if meta.recovered.is_none() {
            meta.recovered.clone_from(&theirs.recovered);
        }
        if theirs.started_at < meta.started_at {
            meta.started_at.clone_from(&theirs.started_at);
        }
        meta.client_cores = meta.client_cores.max(theirs.client_cores);
        for shortcut in &theirs.security_shortcuts {
            if !meta.security_shortcuts.contains(shortcut) {
                meta.security_shortcuts.push(shortcut.clone());
            }
        }
        meta.protocols.extend(theirs.protocols.clone());
    }
    meta.completion = records
        .iter()
        .map(|r| r.meta.completion.clone())
        .reduce(|a, b| {
            let (a, b) = (a?, b?);
            Some(crate::Completion {
                users_finished: a.users_finished + b.users_finished,
                time_to_finish: a.time_to_finish.max(b.time_to_finish),
            })
        })
        .flatten();
    meta
}

/// Intervals added by their place in the run: the `n`-th interval of a phase
/// of one shard with the `n`-th of the same phase of every other. Each
/// shard's offsets count from its own start, and its grid is anchored at the
/// planned phase boundaries, so those intervals are the same stretch of the
/// run; matching them by position rather than by exact start also holds for
/// records whose steady phase began a few milliseconds apart (issue 26, item
/// 10: matched on exact starts, two shards' steady phases never met, and the
/// merge showed twice the intervals at half the throughput). The merged
/// interval takes the earliest start and the longest length.
fn merge_intervals(records: &[RunRecord]) -> Result<Vec<IntervalRecord>, AnalysisError> {
    let mut merged: BTreeMap<(Phase, usize), IntervalRecord> = BTreeMap::new();
    for record in records {
        let mut position: HashMap<Phase, usize> = HashMap::new();
        for interval in &record.intervals {
            let nth = position.entry(interval.phase).or_default();
            let key = (interval.phase, *nth);
            *nth += 1;
            match merged.get_mut(&key) {
                None => {
                    merged.insert(key, interval.clone());
                }
                Some(ours) => {
                    let length = ours.length.max(interval.length);
                    ours.length = length;
                    ours.start = ours.start.min(interval.start);
                    let mut theirs = interval.clone();
                    theirs.length = length;
                    theirs.start = ours.start;
                    ours.merge(&theirs)?;
                }
            }
        }
    }
    Ok(merged.into_values().collect())
}

/// Each shard's own deliveries summed, and the copies that crossed between
/// shards joined: sent by one, noticed by another.
fn merge_deliveries(
    records: &[RunRecord],
    warnings: &mut Vec<String>,
) -> Result<DeliveryRecord, AnalysisError> {
    let mut latency = LatencyHistogram::new();
    let mut total = DeliveryRecord::default();
    let mut lost: Vec<LostRecipient> = Vec::new();
    let mut noticed: HashMap<(&str, &str), u64> = HashMap::new();
    for record in records {
        let d = &record.delivery;
        total.submitted_recipients += d.submitted_recipients;
        total.delivered_recipients += d.delivered_recipients;
        total.failed_recipients += d.failed_recipients;
        total.lost_not_listed += d.lost_not_listed;
        total.lost_unsearched += d.lost_unsearched;
        lost.extend(d.lost.iter().cloned());
        latency.add(&d.latency.decode()?)?;
        match &d.cross_shard {
            Some(cross) => {
                for copy in &cross.noticed {
                    noticed
                        .entry((copy.message_id.as_str(), copy.recipient.as_str()))
                        .or_insert(copy.at_unix_us);
                }
            }
            None => warnings.push(format!(
                "shard {} has no record of the copies that crossed between shards (it was killed, and its record recovered): copies it sent count lost, copies it noticed are not matched",
                shard_name(&record.meta)
            )),
        }
    }
    let mut matched = 0_usize;
    for record in records {
        let Some(cross) = &record.delivery.cross_shard else {
            continue;
        };
        for copy in &cross.sent {
            match noticed.get(&(copy.message_id.as_str(), copy.recipient.as_str())) {
                Some(&seen) => {
                    matched += 1;
                    total.delivered_recipients += 1;
                    latency.record_us(seen.saturating_sub(copy.at_unix_us));
                }
                None => lost.push(LostRecipient {
                    message_id: copy.message_id.clone(),
                    recipient: copy.recipient.clone(),
                }),
            }
        }
    }
    if noticed.len() > matched {
        warnings.push(format!(
            "{} copies were noticed that no merged shard records sending (a shard is missing or was killed)",
            noticed.len() - matched
        ));
    }
    lost.sort();
    if lost.len() > LOST_LIST_CAP {
        total.lost_not_listed += (lost.len() - LOST_LIST_CAP) as u64;
        lost.truncate(LOST_LIST_CAP);
    }
    total.lost = lost;
    total.latency = latency.encode()?;
    Ok(total)
}

fn shard_name(meta: &RunMeta) -> String {
    meta.shards.first().map_or_else(
        || meta.run_id.clone(),
        |m| format!("{}/{}", m.index, m.count),
    )
}
