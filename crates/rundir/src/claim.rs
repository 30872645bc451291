//! Whether a directory may take a new run's files (`run --out`, `merge
//! --out`): peakhour never overwrites files it did not write, nor a run it
//! did (issue 26, item 5).
//!
//! | the directory | what happens |
//! |---|---|
//! | does not exist, or is empty | it is used (created if need be) |
//! | holds only a `config.toml` that reads as a run's | it is used: a run that stopped before its load (its check of the server failed) left it, and the same command may be run again |
//! | holds a run (a `summary.json`, a killed run's `intervals.jsonl`, a `record.json`, or a run's `config.toml` with other files of a run) | refused: it holds a run; choose another `--out` |
//! | holds anything else (a file or directory peakhour does not write, a `config.toml` that is not a run's, or a run's file names without a run) | refused, naming the directory and one such file |
//!
//! There is no flag to overwrite: removing a directory is the person's
//! decision, made with `rm`, not peakhour's.

use std::path::{Path, PathBuf};

use crate::{RunDir, RunDirError, RunFile};

impl RunDir {
    /// Refuses `path` as the directory of a new run's results unless it is
    /// new, empty, or holds only the `config.toml` of a run that stopped
    /// before its load (see the module). Reads, never writes.
    pub fn check_unused(path: &Path) -> Result<(), RunDirError> {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            // Not there (it will be created), or not a directory (creating it says so).
            Err(_) => return Ok(()),
        };
        let mut names: Vec<String> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(RunDirError::io(path))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        if let Some(foreign) = names.iter().find(|name| !written_by_a_run(name)) {
            return Err(RunDirError::NotARunDir {
                dir: path.to_owned(),
                file: foreign.clone(),
            });
        }
        let foreign = |file: &str| RunDirError::NotARunDir {
            dir: path.to_owned(),
            file: file.to_owned(),
        };
        let config = RunFile::Config.name();
        let has = |file: &str| names.iter().any(|name| name == file);
        // A config.toml of someone else's makes the directory theirs.
        if has(config) && RunDir::new(path).read_config().is_err() {
            return Err(foreign(config));
        }
        if names.iter().all(|name| name == config) {
            return Ok(());
        }
        // The file that shows a run was here, and says most about it.
        let telling = [
            RunFile::Summary,
            RunFile::Journal,
            RunFile::Record,
            RunFile::Config,
        ]
        .iter()
        .map(|file| file.name())
        .find(|name| has(name));
        match telling {
            Some(file) => Err(RunDirError::Taken {
                dir: PathBuf::from(path),
                file: file.to_owned(),
            }),
            // Only files a run also writes (a report.html), but no run.
            None => Err(foreign(&names[0])),
        }
    }
}

/// Whether a run writes a file of this name: one of [`RunFile`], or the
/// temporary name one is written under (`.summary.json.tmp-PID`).
fn written_by_a_run(name: &str) -> bool {
    let name = name
        .strip_prefix('.')
        .and_then(|rest| rest.rsplit_once(".tmp-"))
        .filter(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .map_or(name, |(file, _)| file);
    RunFile::ALL.iter().any(|file| file.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_files_and_their_temporary_names_are_a_runs() {
        assert!(written_by_a_run("summary.json"));
        assert!(written_by_a_run(".summary.json.tmp-1234"));
        assert!(written_by_a_run("intervals.jsonl"));
        assert!(!written_by_a_run("notes.txt"));
        assert!(!written_by_a_run(".summary.json.tmp-"));
        assert!(!written_by_a_run(".bashrc"));
    }
}
