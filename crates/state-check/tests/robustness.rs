//! Whatever the server sends, the model must not panic or grow without
//! bound: it reports, or stops checking and says why.

mod common;

use peakhour_net::transcript::{Side, Step, Transcript};
use peakhour_state_check::{SessionModel, SessionOptions};

/// A small deterministic generator, so a failure can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn issue_27_item_1_corrupted_real_transcripts_never_panic_the_model() {
    let path = common::fixture("dovecot/two_sessions_one_mailbox.txt");
    let transcript = Transcript::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = XorShift(0x2700_0001);
    for _ in 0..300 {
        let mut model = SessionModel::new("a", SessionOptions { sole_writer: true });
        for step in &transcript.steps {
            let Step::Bytes { side, bytes, .. } = step else {
                continue;
            };
            let mut bytes = bytes.clone();
            if rng.next().is_multiple_of(4) && !bytes.is_empty() {
                let at = (rng.next() % bytes.len() as u64) as usize;
                bytes[at] = (rng.next() % 256) as u8;
            }
            match side {
                Side::Client => model.sent(&bytes),
                Side::Server => {
                    let _ = model.received(&bytes);
                }
            }
        }
        let _ = model.snapshot();
    }
}

#[test]
fn issue_27_item_1_an_absurd_exists_stops_the_model_instead_of_its_memory() {
    let mut model = SessionModel::new("a", SessionOptions::default());
    let _ = model.received(b"* OK ready\r\n");
    model.sent(b"A1 SELECT INBOX\r\n");
    let found = model.received(b"* 4294967295 EXISTS\r\nA1 OK done\r\n* 1 FETCH (UID 9)\r\n");
    assert!(found.is_empty(), "{found:?}");
    let reason = model.lost_track().unwrap_or_default();
    assert!(reason.contains("4294967295 messages"), "{reason}");
    assert!(model.snapshot().is_err());
}
