use super::*;

#[test]
fn issue_26_item_10_copies_of_other_runs_are_not_noticed_across_shards() {
    // Shard 1/2 runs users 0, 2, ...: user 1's copies are the other shard's.
    let tracker = DeliveryTracker::for_run(Shard::new(1, 2).unwrap(), "2026-05-01T12:00:00Z");
    let at = Instant::now();
    assert_eq!(
        tracker.notice("<s1.0.2026-05-01T12-00-00Z@bench.test>", 0, at),
        Noticed::FromOtherShard
    );
    for other_run in [
        "<s1.1.2026-04-30T09-00-00Z@bench.test>",
        "<s1.2.earlier@bench.test>",
    ] {
        assert_eq!(
            tracker.notice(other_run, 0, at),
            Noticed::Nothing,
            "{other_run}"
        );
    }
    assert_eq!(tracker.books().noticed_across.len(), 1);
}

#[test]
fn reconciles_submitted_with_delivered_and_names_the_lost() {
    let tracker = DeliveryTracker::default();
    let t0 = Instant::now();
    tracker.submitted("<s0.0.run@bench.test>", &[1, 2, 3], t0);
    tracker.submitted("s2.7.run@bench.test", &[2], t0);
    let later = t0 + Duration::from_millis(40);
    assert_eq!(
        tracker.noticed("s0.0.run@bench.test", 1, later),
        Some(Duration::from_millis(40))
    );
    assert_eq!(
        tracker.noticed("<s0.0.run@bench.test>", 1, later),
        None,
        "a repeat is not a delivery"
    );
    assert_eq!(
        tracker.noticed("s0.0.run@bench.test", 9, later),
        None,
        "not a recipient"
    );
    assert_eq!(
        tracker.noticed("s0.0.other-run@bench.test", 2, later),
        None,
        "another run's message with the same number"
    );
    assert_eq!(
        tracker.noticed("i1.0.0.init@x", 1, later),
        None,
        "untracked"
    );
    assert!(tracker.noticed("s0.0.run@bench.test", 3, later).is_some());
    assert!(tracker.noticed("s2.7.run@bench.test", 2, later).is_some());
    assert_eq!(tracker.totals(), (4, 3));
    assert_eq!(tracker.outstanding_users(), vec![2]);
    assert!(tracker.is_waiting(2) && !tracker.is_waiting(1));
    assert_eq!(
        tracker.lost(LOST_LIST_CAP),
        LostReport {
            listed: vec![Lost {
                message_id: "s0.0.run@bench.test".into(),
                user: 2
            }],
            total: 1,
            unsearched: 0,
        }
    );
}

#[test]
fn the_lost_list_is_capped_ordered_and_counted() {
    let tracker = DeliveryTracker::default();
    let t0 = Instant::now();
    for nth in (0..50).rev() {
        tracker.submitted(&format!("s3.{nth}.r@x.test"), &[1, 0], t0);
    }
    tracker.searching(&[1]);
    let report = tracker.lost(5);
    assert_eq!(report.total, 100);
    assert_eq!(report.unsearched, 50);
    let names: Vec<(String, u32)> = report
        .listed
        .into_iter()
        .map(|l| (l.message_id, l.user))
        .collect();
    assert_eq!(
        names,
        vec![
            ("s3.0.r@x.test".to_owned(), 0),
            ("s3.0.r@x.test".to_owned(), 1),
            ("s3.1.r@x.test".to_owned(), 0),
            ("s3.1.r@x.test".to_owned(), 1),
            ("s3.2.r@x.test".to_owned(), 0),
        ]
    );
    tracker.searched(1);
    assert_eq!(tracker.lost(0).unsearched, 0);
}

#[test]
fn message_ids_of_another_shape_are_counted_lost_not_dropped() {
    let tracker = DeliveryTracker::default();
    tracker.submitted("<weird@x.test>", &[0, 1], Instant::now());
    assert_eq!(tracker.totals(), (2, 0));
    assert_eq!(tracker.lost(10).total, 2);
    assert_eq!(parse_id("s01.2.r@x"), None, "not canonical");
    assert_eq!(parse_id("s1.2r@x"), None, "no suffix");
    assert_eq!(parse_id("s1.2.r@x"), Some(((1 << 32) | 2, ".r@x")));
}

#[test]
fn issue_27_item_4_the_ledger_keeps_each_submissions_header_and_size_only_when_checking() {
    let message = b"Message-ID: <s0.1.r@bench.test>\r\nSubject: hi\r\n\r\nbody\r\n";
    let off = DeliveryTracker::default();
    off.submitted_content("<s0.1.r@bench.test>", message, &[1]);
    assert!(off.content_checks().0.is_empty(), "off unless asked for");
    let on = DeliveryTracker::default().checking_content(true);
    on.submitted_content("<s0.1.r@bench.test>", message, &[2, 1, 2]);
    let (checks, not_kept) = on.content_checks();
    assert_eq!(not_kept, 0);
    assert_eq!(checks.keys().copied().collect::<Vec<_>>(), [1, 2]);
    let (id, submitted) = &checks[&1][0];
    assert_eq!(id, "s0.1.r@bench.test");
    assert_eq!(submitted, &SubmittedMessage::from_message(message));
    // Past the bound, messages are counted, not kept.
    let big = [
        b"X: ".as_slice(),
        &vec![b'x'; CONTENT_BYTES_MAX],
        b"\r\n\r\n",
    ]
    .concat();
    on.submitted_content("<s0.2.r@bench.test>", &big, &[1]);
    assert_eq!(on.content_checks().1, 1);
}

#[test]
fn a_tracked_message_costs_a_small_fixed_entry() {
    // A map entry per message and a key per recipient; the whole cost,
    // allocator included, is measured by tests/tracker_memory.rs.
    assert_eq!(std::mem::size_of::<(u64, Pending)>(), 24);
}
