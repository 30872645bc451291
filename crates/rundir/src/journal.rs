//! The run's journal: every interval is on disk as soon as it closes, so a
//! run that is killed (SIGKILL, the OOM killer, a power cut after the last
//! sync) leaves everything up to its last closed interval.
//!
//! A [`RunJournal`] is an engine [`Observer`] (of a mail run or a file run) that hands each closed interval
//! to a thread of its own, which appends it to
//!
//! - `intervals.jsonl`: the run's metadata on the first line, then one
//!   [`IntervalRecord`] per line, exactly as `record.json` will hold it: what
//!   `peakhour report` rebuilds an interrupted run from ([`crate::RunDir::recover`]);
//! - `intervals.csv`, `errors.csv` and `latency.hlog`, in their final formats,
//!
//! then syncs each file, off the users' thread. It is also the run's
//! [`IntervalArchive`]: once an interval's line is synced, the engine drops
//! that interval from memory and reads it back from `intervals.jsonl` when
//! the run ends (issue 11: a run's memory does not grow with its length). If
//! writing fails (a full disk), the count of stored intervals stops there and
//! the engine keeps every later interval in memory. When the run ends
//! normally, [`crate::RunDir::write_results`] replaces the three with their
//! complete versions (which add the last, shortened interval) and removes
//! the journal, `record.json` holding the same and more.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use peakhour_analysis::{AnalysisError, IntervalArchive, IntervalRecord, RunMeta};
use peakhour_engine::{Event, Observer, RunClock, SelfSample};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::{RunDir, RunDirError, RunFile};

/// Version of the journal's format (its first line says which).
pub const JOURNAL_VERSION: u32 = 1;

/// The first line of `intervals.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JournalHead {
    pub(crate) journal_version: u32,
    pub(crate) meta: RunMeta,
}

enum Entry {
    Started(Box<RunMeta>),
    Closed(Box<IntervalRecord>),
}

/// Appends a run's closed intervals to its directory as they close (see the
/// module's documentation). Plug it into the engine beside the live view
/// (`peakhour_engine::Both`), and call [`RunJournal::finish`] when the
/// engine returns, before writing the results.
#[derive(Debug)]
pub struct RunJournal {
    entries: Option<mpsc::Sender<Entry>>,
    writer: Option<JoinHandle<Result<(), RunDirError>>>,
    archive: Arc<JournalArchive>,
}

/// What of the journal can be read back: the first `stored` interval lines
/// of `intervals.jsonl`, each synced before it is counted.
#[derive(Debug)]
struct JournalArchive {
    dir: RunDir,
    stored: AtomicUsize,
}

impl IntervalArchive for JournalArchive {
    fn stored(&self) -> usize {
        self.stored.load(Ordering::Acquire)
    }

    fn read_back(&self, count: usize) -> Result<Vec<IntervalRecord>, AnalysisError> {
        let (_, mut intervals, _) = self
            .dir
            .parse_journal()
            .map_err(|e| AnalysisError::Archive(e.to_string()))?;
        if intervals.len() < count {
            return Err(AnalysisError::Archive(format!(
                "{} holds {} intervals where {count} were stored",
                self.dir.file(RunFile::Journal).display(),
                intervals.len()
            )));
        }
        intervals.truncate(count);
        Ok(intervals)
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Started(_) => f.write_str("Started"),
            Entry::Closed(i) => write!(f, "Closed({:?})", i.start),
        }
    }
}

impl RunJournal {
    /// Starts the writer thread for `dir`; nothing is written before the
    /// engine says the run started.
    pub(crate) fn start(dir: &RunDir) -> Result<Self, RunDirError> {
        let (entries, received) = mpsc::channel();
        let archive = Arc::new(JournalArchive {
            dir: dir.clone(),
            stored: AtomicUsize::new(0),
        });
        let stored = archive.clone();
        let writer = std::thread::Builder::new()
            .name("peakhour-journal".into())
            .spawn(move || write_journal(&stored, &received))
            .map_err(RunDirError::io(PathBuf::from("peakhour-journal thread")))?;
        Ok(Self {
            entries: Some(entries),
            writer: Some(writer),
            archive,
        })
    }

    /// Waits for every closed interval to be on disk; the first error the
    /// writer met, if any (the run went on without its journal then).
    pub fn finish(mut self) -> Result<(), RunDirError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), RunDirError> {
        self.entries.take();
        match self.writer.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(RunDirError::io(PathBuf::from(RunFile::Journal.name()))(
                std::io::Error::other("the journal's writer panicked"),
            )),
        }
    }

    fn send(&self, entry: Entry) {
        // A writer that stopped on an error reports it at `finish`.
        if let Some(entries) = &self.entries {
            let _ = entries.send(entry);
        }
    }
}

impl Drop for RunJournal {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl Observer for RunJournal {
    fn event(&mut self, _: &RunClock, _: Instant, _: &Event) {}
    fn lag(&mut self, _: &RunClock, _: Instant, _: Duration) {}
    fn tick(&mut self, _: &RunClock, _: Instant, _: SelfSample) {}

    fn started(&mut self, meta: &RunMeta) {
        self.send(Entry::Started(Box::new(meta.clone())));
    }

    fn interval_closed(&mut self, interval: &IntervalRecord) {
        self.send(Entry::Closed(Box::new(interval.clone())));
    }

    fn interval_archive(&self) -> Option<Arc<dyn IntervalArchive>> {
        Some(self.archive.clone())
    }
}

/// The journal's files but the hlog, appended to per interval.
struct Appender<'d> {
    dir: &'d RunDir,
    jsonl: File,
    intervals: File,
    errors: File,
    failure: Option<RunDirError>,
    /// Counts the interval lines on disk, when they are the run's intervals
    /// from its first on (else nothing is counted: nothing can be read back).
    stored: Option<&'d AtomicUsize>,
}

impl<'d> Appender<'d> {
    fn create(
        dir: &'d RunDir,
        meta: &RunMeta,
        stored: Option<&'d AtomicUsize>,
    ) -> Result<Self, RunDirError> {
        let head = JournalHead {
            journal_version: JOURNAL_VERSION,
            meta: meta.clone(),
        };
        let mut line =
            serde_json::to_vec(&head).map_err(|e| render_error(dir, RunFile::Journal, e))?;
        line.push(b'\n');
        let mut appender = Self {
            dir,
            jsonl: dir.create_appended(RunFile::Journal)?,
            intervals: dir.create_appended(RunFile::Intervals)?,
            errors: dir.create_appended(RunFile::Errors)?,
            failure: None,
            stored,
        };
        appender.write(RunFile::Journal, &line)?;
        let header = format!("{}\n", peakhour_report::INTERVALS_CSV_HEADER);
        appender.write(RunFile::Intervals, header.as_bytes())?;
        let header = format!("{}\n", peakhour_report::ERRORS_CSV_HEADER);
        appender.write(RunFile::Errors, header.as_bytes())?;
        Ok(appender)
    }

    fn write(&mut self, file: RunFile, bytes: &[u8]) -> Result<(), RunDirError> {
        let out = match file {
            RunFile::Journal => &mut self.jsonl,
            RunFile::Errors => &mut self.errors,
            _ => &mut self.intervals,
        };
        out.write_all(bytes)
            .and_then(|()| out.sync_data())
            .map_err(RunDirError::io(self.dir.file(file)))
    }

    /// Appends one interval; after a failure, does nothing more (the run goes
    /// on, and the failure is reported when it ends).
    fn append(&mut self, interval: &IntervalRecord) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.try_append(interval) {
            self.failure = Some(e);
        }
    }

    fn try_append(&mut self, interval: &IntervalRecord) -> Result<(), RunDirError> {
        let mut line = serde_json::to_vec(interval)
            .map_err(|e| render_error(self.dir, RunFile::Journal, e))?;
        line.push(b'\n');
        self.write(RunFile::Journal, &line)?;
        if let Some(stored) = self.stored {
            stored.fetch_add(1, Ordering::Release);
        }
        let mut rows = Vec::new();
        peakhour_report::write_interval_rows(interval, &mut rows)
            .map_err(|source| self.dir.render_error(RunFile::Intervals, source))?;
        self.write(RunFile::Intervals, &rows)?;
        rows.clear();
        peakhour_report::write_error_rows(interval, &mut rows)
            .map_err(|source| self.dir.render_error(RunFile::Errors, source))?;
        self.write(RunFile::Errors, &rows)
    }
}

fn render_error(dir: &RunDir, file: RunFile, e: serde_json::Error) -> RunDirError {
    dir.render_error(file, peakhour_report::ReportError::from(e))
}

/// The writer thread: waits for the run's start, then appends each closed
/// interval to every journal file and syncs them, until the run drops its
/// end of the channel.
fn write_journal(
    archive: &JournalArchive,
    received: &mpsc::Receiver<Entry>,
) -> Result<(), RunDirError> {
    let dir = &archive.dir;
    let mut skipped = false;
    let meta = loop {
        match received.recv() {
            Ok(Entry::Started(meta)) => break meta,
            Ok(Entry::Closed(_)) => skipped = true,
            Err(_) => return Ok(()),
        }
    };
    let stored = (!skipped).then_some(&archive.stored);
    let mut appender = Appender::create(dir, &meta, stored)?;
    let hlog_path = dir.file(RunFile::Hlog);
    let mut hlog = dir.create_appended(RunFile::Hlog)?;
    let hlog_sync = hlog
        .try_clone()
        .map_err(RunDirError::io(hlog_path.clone()))?;
    let closed = received.iter().filter_map(|entry| match entry {
        Entry::Closed(interval) => Some(*interval),
        Entry::Started(_) => None,
    });
    let intervals = closed.inspect(|interval| appender.append(interval));
    let hlog_result = peakhour_report::write_hlog_intervals(&meta, intervals, &mut hlog, || {
        hlog_sync.sync_data()
    });
    // The hlog failed (the disk is full?): the other files go on as they can.
    for entry in received.iter() {
        if let Entry::Closed(interval) = entry {
            appender.append(&interval);
        }
    }
    if let Some(failure) = appender.failure {
        return Err(failure);
    }
    hlog_result.map_err(|source| RunDirError::Render {
        path: hlog_path,
        source,
    })
}
