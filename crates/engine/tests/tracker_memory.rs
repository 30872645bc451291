//! What the delivery ledger costs per tracked message, measured as the
//! growth of this process's resident memory (the figure docs/reliability.md
//! states, allocator overhead included), and that reporting the lost copies
//! of a server that never delivers stays within the cap.
//!
//! A test binary of its own, with one test: nothing else allocates beside it.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use peakhour_engine::{DeliveryTracker, LOST_LIST_CAP};
use tokio::time::Instant;

/// Resident memory of this process, in bytes (Linux).
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn issue_11_a_tracked_message_costs_under_a_hundred_bytes_and_the_lost_report_is_capped() {
    const MESSAGES: u32 = 1_000_000;
    const USERS: u32 = 10_000;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _time = runtime.enter();
    let tracker = DeliveryTracker::default();
    let at = Instant::now();
    // The per-user books (4 bytes a user, not per message) come first.
    tracker.submitted("s0.4000000000.warm@bench.test", &[0, USERS - 1], at);
    let suffix = ".20260101T000000Z-mmb-medium-10000u@bench.test";
    let mut id = String::with_capacity(80);
    let before = resident();
    for n in 0..MESSAGES {
        id.clear();
        id.push_str(&format!("<s{}.{}{suffix}>", n % USERS, n / USERS));
        tracker.submitted(&id, &[(n + 1) % USERS, (n + 7) % USERS], at);
    }
    let per_message = resident().saturating_sub(before) as f64 / f64::from(MESSAGES);
    println!(
        "delivery ledger: {per_message:.0} bytes of resident memory per tracked message with \
         2 recipients ({MESSAGES} messages, {USERS} users)"
    );
    assert_eq!(tracker.tracked_messages(), MESSAGES as usize + 1);
    assert!(per_message < 100.0, "{per_message} bytes per message");

    // A server that never delivers: every copy is lost, and the report
    // holds the first LOST_LIST_CAP of the two million, not all of them.
    let before = resident();
    let report = tracker.lost(LOST_LIST_CAP);
    let grown = resident().saturating_sub(before);
    assert_eq!(report.total, u64::from(MESSAGES) * 2 + 2);
    assert_eq!(report.listed.len(), LOST_LIST_CAP);
    assert!(grown < 4 << 20, "{grown} bytes to report the lost copies");
}
