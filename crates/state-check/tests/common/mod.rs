//! Replays C:/S: transcripts (peakhour-net's format) through session models.
//!
//! Directives: `! session NAME` makes the following lines NAME's (a model
//! is made for each name on first use); `! options sole-writer` makes the
//! sessions made after it sole writers; `! checkpoint MAILBOX` compares
//! every session that has MAILBOX selected.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses part of this helper"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use peakhour_net::transcript::{Side, Step, Transcript};
use peakhour_state_check::{CheckCounts, SessionModel, SessionOptions, Violation, checkpoint};

/// What a replay found.
#[derive(Debug, Default)]
pub struct Replay {
    /// Every violation, continuous and at checkpoints, in order.
    pub violations: Vec<Violation>,
    /// Checks made, by kind, summed over sessions and checkpoints.
    pub checks: CheckCounts,
    /// Checkpoints run, and the sessions each compared.
    pub checkpoints: Vec<usize>,
    /// Data responses the models could not decode.
    pub undecodable: u64,
}

pub fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Replays `path`, handing the server's bytes to each model `chunk` bytes
/// at a time (the chunking must not change what is found).
pub fn replay(path: &Path, chunk: usize) -> Replay {
    let transcript = Transcript::load(path).unwrap_or_else(|e| panic!("{e}"));
    replay_transcript(&transcript, chunk)
}

/// Replays a transcript already read (or made up from another one).
pub fn replay_transcript(transcript: &Transcript, chunk: usize) -> Replay {
    replay_with(transcript, chunk, false)
}

/// Replays a transcript; `lenient` skips directives this helper does not know.
pub fn replay_with(transcript: &Transcript, chunk: usize, lenient: bool) -> Replay {
    let path = &transcript.path;
    let mut sessions: BTreeMap<String, SessionModel> = BTreeMap::new();
    let mut options = SessionOptions::default();
    let mut current = "a".to_owned();
    let mut replay = Replay::default();
    for step in &transcript.steps {
        match step {
            Step::Directive { key, value, line } => match key.as_str() {
                "session" => current = value.trim().to_owned(),
                "options" if value.trim() == "sole-writer" => options.sole_writer = true,
                "checkpoint" => {
                    let snapshots: Vec<_> = sessions
                        .values()
                        .filter_map(|model| model.snapshot().ok())
                        .collect();
                    let compared = snapshots
                        .iter()
                        .filter(|s| s.mailbox == value.trim())
                        .count();
                    replay.checkpoints.push(compared);
                    let outcome = checkpoint(value.trim(), &snapshots);
                    replay.checks.add(&outcome.checks);
                    replay.violations.extend(outcome.violations);
                }
                // Another reader's directive (peakhour-imap's transcripts).
                _ if lenient => {}
                other => panic!("{}:{line}: unknown directive {other}", path.display()),
            },
            Step::Bytes { side, bytes, .. } => {
                let model = sessions
                    .entry(current.clone())
                    .or_insert_with(|| SessionModel::new(current.clone(), options));
                match side {
                    Side::Client => model.sent(bytes),
                    Side::Server => {
                        for piece in bytes.chunks(chunk.max(1)) {
                            replay.violations.extend(model.received(piece));
                        }
                    }
                }
            }
        }
    }
    for model in sessions.values() {
        assert_eq!(model.lost_track(), None, "{}", path.display());
        replay.checks.add(model.checks());
        replay.undecodable += model.undecodable();
    }
    replay
}

/// Replays `path` whole and byte by byte; both must find the same.
pub fn replay_both_ways(path: &Path) -> Replay {
    let whole = replay(path, usize::MAX);
    let bytewise = replay(path, 1);
    assert_eq!(whole.violations, bytewise.violations, "{}", path.display());
    assert_eq!(whole.checks, bytewise.checks, "{}", path.display());
    whole
}
