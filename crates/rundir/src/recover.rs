//! Rebuilding a run that never finished writing: no `summary.json`, but the
//! journal of closed intervals (or, if the kill came during the last
//! writes, `record.json`).

use peakhour_analysis::{DeliveryRecord, IntervalRecord, Recovery, RunRecord, Summary, counters};

use crate::journal::{JOURNAL_VERSION, JournalHead};
use crate::{RunDir, RunDirError, RunFile};

/// Why the delivery figures of a rebuilt run are partial.
const DELIVERY_NOTE: &str = "rebuilt from the closed intervals a killed run left on disk: \
     figures stop at the last of them; submitted and delivered copies are those counted so far \
     and no reconciliation ran, so none is named lost";

impl RunDir {
    /// Rebuilds the record and summary of a run that was killed (or could
    /// not write its results, `results-not-written.txt`) before it wrote
    /// `summary.json`, from `record.json` if it got that far, else from
    /// the journal (`intervals.jsonl`); writes every result file as a run
    /// does (`summary.json` last) and returns what was rebuilt. Does
    /// nothing and returns `None` when the run has its summary.
    ///
    /// The rebuilt summary is marked `interrupted`, with a `recovered`
    /// section saying from what. A last journal line cut short by the kill
    /// is skipped; any other line that does not read is an error.
    pub fn recover(&self) -> Result<Option<Recovery>, RunDirError> {
        if self.has(RunFile::Summary) {
            return Ok(None);
        }
        let (mut record, mut recovery) = if self.has(RunFile::Record) {
            let record = self.read_record()?;
            let recovery = recovery_of(RunFile::Record, &record.intervals, false);
            (record, recovery)
        } else {
            self.read_journal()?
        };
        if self.has(RunFile::Record) {
            recovery.note = "rebuilt from record.json: the run was killed while writing its \
                             results; the measurement itself is complete"
                .to_owned();
        }
        recovery.write_failed = self.write_failure();
        if let Some(why) = &recovery.write_failed {
            recovery.note = format!(
                "rebuilt from {}: the run could not write its results ({why}); figures stop at \
                 the last closed interval that reached the disk, and no reconciliation is recorded",
                recovery.from
            );
        }
        record.meta.interrupted = true;
        record.meta.recovered = Some(recovery.clone());
        // The journal's head is written before the run's shortcuts are
        // added to its metadata; config.toml has them.
        if let Some(config) = self.read_config()? {
            record.meta.security_shortcuts = config.config.target.security_shortcuts;
        }
        let summary = Summary::compute(&record)
            .map_err(|e| self.parse_error(RunFile::Journal, ".", e.to_string()))?;
        self.write_results(&record, &summary)?;
        // The summary's `recovered` section says it now.
        let _ = std::fs::remove_file(self.file(RunFile::WriteFailed));
        self.release_room();
        Ok(Some(recovery))
    }

    /// The record the journal holds: its metadata and every complete
    /// interval line, with deliveries from the intervals' counters.
    fn read_journal(&self) -> Result<(RunRecord, Recovery), RunDirError> {
        let (head, intervals, torn_tail) = self.parse_journal()?;
        let delivery = delivery_from_counters(&intervals);
        let recovery = recovery_of(RunFile::Journal, &intervals, torn_tail);
        Ok((RunRecord::new(head.meta, intervals, delivery), recovery))
    }

    /// The journal's head and every complete interval line, and whether a
    /// last line was cut short: what a killed run left, and what a finished
    /// run reads its released intervals back from ([`crate::RunJournal`]).
    pub(crate) fn parse_journal(
        &self,
    ) -> Result<(JournalHead, Vec<IntervalRecord>, bool), RunDirError> {
        let text = self.read_required(RunFile::Journal)?;
        let mut lines = text.split_inclusive('\n').enumerate();
        let head_line = lines.next().map_or("", |(_, line)| line);
        let head: JournalHead = self.parse_json(RunFile::Journal, head_line)?;
        if head.journal_version != JOURNAL_VERSION {
            return Err(self.parse_error(
                RunFile::Journal,
                "journal_version",
                format!(
                    "version {} is not the {JOURNAL_VERSION} this peakhour reads",
                    head.journal_version
                ),
            ));
        }
        let mut intervals = Vec::new();
        let mut torn_tail = false;
        let lines: Vec<_> = lines.collect();
        let last = lines.len();
        for (n, (index, line)) in lines.into_iter().enumerate() {
            let is_last = n + 1 == last;
            match serde_json::from_str::<IntervalRecord>(line) {
                Ok(interval) if line.ends_with('\n') => intervals.push(interval),
                Err(e) if !is_last => {
                    return Err(self.parse_error(
                        RunFile::Journal,
                        &format!("line {}", index + 1),
                        e.to_string(),
                    ));
                }
                // Only the last line can be cut short by a kill mid-write
                // (a line without its end is always the last).
                _ => torn_tail = true,
            }
        }
        Ok((head, intervals, torn_tail))
    }
}

fn recovery_of(from: RunFile, intervals: &[IntervalRecord], torn_tail: bool) -> Recovery {
    Recovery {
        from: from.name().to_owned(),
        intervals: intervals.len(),
        measured_until_s: intervals
            .last()
            .map_or(0.0, |i| (i.start + i.length).as_secs_f64()),
        torn_tail,
        note: DELIVERY_NOTE.to_owned(),
        write_failed: None,
    }
}

/// Deliveries as far as the intervals counted them: recipients accepted or
/// refused at submission, and those seen in their mailbox; nothing lost,
/// since nothing was reconciled.
fn delivery_from_counters(intervals: &[IntervalRecord]) -> DeliveryRecord {
    let total = |name: &str| -> u64 {
        intervals
            .iter()
            .filter_map(|i| i.counters.get(name))
            .fold(0, |sum, n| sum.saturating_add(*n))
    };
    let refused = total(peakhour_engine::Counter::RecipientsRefused.name());
    DeliveryRecord {
        submitted_recipients: total(counters::RECIPIENTS_SUBMITTED).saturating_add(refused),
        delivered_recipients: total(counters::RECIPIENTS_DELIVERED),
        failed_recipients: refused,
        ..DeliveryRecord::default()
    }
}
