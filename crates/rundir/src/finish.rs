//! The end of `peakhour run`: its results, then what its servers say they
//! are, then the report, and what is left when the results cannot be
//! written.

use std::io::Write as _;

use peakhour_analysis::{Redactor, RunRecord, Summary};

use crate::{RunDir, RunDirError, RunFile, atomic, host};

/// The hidden file that keeps room for `results-not-written.txt`.
const ROOM: &str = ".results-not-written.room";
/// How much room: a page, far more than the error's line.
const ROOM_BYTES: usize = 4096;

impl RunDir {
    /// Writes a finished run's files in this order: the results
    /// ([`RunDir::write_results`]), `host.json` (this host, and a bounded
    /// probe of the servers in `config.toml`, their words passed through
    /// `redactor`: only here, once the results are safe on disk, and never
    /// from `peakhour report`), then `report.html`.
    ///
    /// When the results cannot be written (a full disk), nothing more is
    /// tried: `results-not-written.txt` says so, with the error (written
    /// into the page the run's journal kept free for it, or an empty file,
    /// which needs no data block, if even that fails), so that `peakhour report`,
    /// rebuilding the run from what reached the disk, says its writing
    /// failed rather than that it was killed; the error is returned. A
    /// failure after the results (`host.json`, `report.html`) comes back as
    /// `Ok(Some(error))`: the results stand.
    pub fn finish_run(
        &self,
        record: &RunRecord,
        summary: &Summary,
        redactor: &Redactor,
    ) -> Result<Option<RunDirError>, RunDirError> {
        if let Err(error) = self.write_results(record, summary) {
            self.mark_write_failed(&error);
            return Err(error);
        }
        self.release_room();
        let after = || -> Result<(), RunDirError> {
            let config = self.read_config()?;
            let target = config.as_ref().map(|c| &c.config.target);
            self.write_host(&host::collect(target, redactor))?;
            self.write_report().map(drop)
        };
        Ok(after().err())
    }

    /// Keeps a page of the disk for `results-not-written.txt`: on a full
    /// disk, freeing it is what lets the error be written down.
    pub(crate) fn reserve_room(&self) {
        let _ = std::fs::write(self.path().join(ROOM), [0u8; ROOM_BYTES]);
    }

    /// Gives back the room [`RunDir::reserve_room`] kept.
    pub(crate) fn release_room(&self) {
        let _ = std::fs::remove_file(self.path().join(ROOM));
    }

    fn mark_write_failed(&self, error: &RunDirError) {
        self.release_room();
        let path = self.file(RunFile::WriteFailed);
        if let Ok(mut file) = std::fs::File::create(&path) {
            let _ = writeln!(file, "{error}");
            let _ = file.sync_all();
        }
        let _ = atomic::sync_parent(&path);
    }

    /// Why the run could not write its results, when it could not.
    pub(crate) fn write_failure(&self) -> Option<String> {
        if !self.has(RunFile::WriteFailed) {
            return None;
        }
        let text = std::fs::read_to_string(self.file(RunFile::WriteFailed)).unwrap_or_default();
        let text = text.trim();
        Some(if text.is_empty() {
            "its error did not fit on the disk either".to_owned()
        } else {
            text.to_owned()
        })
    }
}
