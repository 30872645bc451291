//! Every renderer, checked against exact output or read back.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::time::Duration;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use peakhour_analysis::monitor::{
    DEFAULT_MAX_ROWS, MetricTable, TimeWindow, findings, mail_queue_at_end,
};
use peakhour_analysis::{
    ActionTiming, DeliveryRecorder, IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta,
    RunRecord, Summary, counters,
};
use peakhour_report::{
    ERRORS_CSV_HEADER, INTERVALS_CSV_HEADER, render_terminal, summary_json, write_errors_csv,
    write_hlog, write_intervals_csv,
};
use serde_json::Value;

fn s(v: u64) -> Duration {
    Duration::from_secs(v)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn ok(rec: &mut IntervalRecorder, action: &str, end: Duration, latency: Duration) {
    let t = ActionTiming {
        intended_start: end - latency,
        actual_start: end - latency,
        end,
    };
    rec.record_action(action, t, Outcome::Ok);
}

/// Logon 0..10 s (idle), steady 10..30 s, drain 30..35 s.
fn sample() -> RunRecord {
    let mut rec = IntervalRecorder::new(RecorderConfig::default()).unwrap();
    rec.set_users_logged_on(s(5), 2);
    rec.record_client_cpu(s(5), 12.34);
    rec.enter_phase(Phase::Steady, s(10));
    for v in [10, 20, 30, 40] {
        ok(&mut rec, "read", s(12), ms(v));
    }
    ok(&mut rec, "send", s(15), ms(200));
    rec.error(s(16), "send", "smtp.451, try later");
    rec.count(s(15), counters::MESSAGES_SUBMITTED, 1);
    rec.record_command(s(12), "imap.FETCH", ms(5));
    ok(&mut rec, "read", s(25), ms(1000));
    rec.error(s(26), "read", "timeout");
    rec.enter_phase(Phase::Drain, s(30));
    let intervals = rec.finish(s(35));

    let mut meta = RunMeta::new("r1", "mmb-medium", 2, 7, "2026-05-01T12:00:00Z");
    meta.peakhour_version = "0.1.0".into();
    meta.action_weights.insert("read".into(), 81.3);
    meta.action_weights.insert("send".into(), 14.18);
    let mut d = DeliveryRecorder::new();
    d.submitted(3);
    d.delivered(ms(150));
    d.delivered(ms(250));
    d.lost("m-9", "user1@test.invalid");
    RunRecord::new(meta, intervals, d.finish().unwrap())
}

/// The committed `schemas/summary.schema.json`, read from disk.
fn committed_schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/summary.schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&committed_schema()).unwrap()
}

/// Every way `summary.json` is not what the schema says, with where.
fn schema_problems(summary: &Value) -> Vec<String> {
    validator()
        .iter_errors(summary)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn summary_value(record: &RunRecord) -> Value {
    let summary = Summary::compute(record).unwrap();
    serde_json::from_str(&summary_json(&summary).unwrap()).unwrap()
}

/// Real output against the committed schema: summaries that real lab runs
/// wrote (the fixtures), and one the library builds with the monitor's
/// findings computed from a real `monitor.csv`.
#[test]
fn real_summaries_match_the_committed_schema() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    for run in ["run-small", "run-small-maildir"] {
        let dir = std::path::Path::new(fixtures).join(run);
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        let written: Value = serde_json::from_str(&text).unwrap();
        let problems = schema_problems(&written);
        assert!(problems.is_empty(), "{run}/summary.json: {problems:#?}");
        assert!(
            written["resources"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        );

        let record: RunRecord =
            serde_json::from_str(&std::fs::read_to_string(dir.join("record.json")).unwrap())
                .unwrap();
        let mut summary = Summary::compute(&record).unwrap();
        let csv = std::fs::read_to_string(dir.join("monitor.csv")).unwrap();
        let table = MetricTable::from_csv(csv.as_bytes(), DEFAULT_MAX_ROWS).unwrap();
        let found = findings(&table, TimeWindow::ALL, Duration::from_secs(30));
        summary.resources = found.resources;
        summary.bottleneck = Some(found.bottleneck);
        summary.delivery.mail_queue_at_end = mail_queue_at_end(&table);
        let built: Value = serde_json::from_str(&summary_json(&summary).unwrap()).unwrap();
        let problems = schema_problems(&built);
        assert!(problems.is_empty(), "{run}, built: {problems:#?}");
        assert!(built["bottleneck"]["line"].is_string());
    }
}

#[test]
fn summary_json_is_schema_valid_and_round_trips() {
    let record = sample();
    let summary = Summary::compute(&record).unwrap();
    let json = summary_json(&summary).unwrap();
    let value: Value = serde_json::from_str(&json).unwrap();
    let v = validator();
    if let Err(e) = v.validate(&value) {
        panic!("summary.json does not match the schema: {e}");
    }
    assert_eq!(value["verdict"], "fail");
    assert_eq!(value["actions"]["read"]["p95_ms"], 1000.0);
    assert_eq!(value["delivery"]["lost"], 1);
    let back: Summary = serde_json::from_str(&json).unwrap();
    assert_eq!(back, summary);
}

#[test]
fn empty_interrupted_run_is_schema_valid() {
    let mut meta = RunMeta::new("r2", "mmb-medium", 0, 1, "2026-05-01T12:00:00Z");
    meta.interrupted = true;
    let record = RunRecord::new(meta, Vec::new(), Default::default());
    let value = summary_value(&record);
    assert!(validator().is_valid(&value));
    assert_eq!(value["interrupted"], true);
    assert_eq!(value["score"]["weighted_p95_ms"], Value::Null);
}

#[test]
fn schema_rejects_a_summary_missing_required_fields() {
    let good = summary_value(&sample());
    let v = validator();
    assert!(v.is_valid(&good));
    for pointer in [
        "/verdict",
        "/score/weighted_p95_ms",
        "/actions/read/p95_ms",
        "/delivery/lost",
        "/seed",
    ] {
        let mut bad = good.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        bad.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap()
            .remove(key)
            .unwrap();
        assert!(
            !v.is_valid(&bad),
            "schema accepted a summary without {pointer}"
        );
    }
    let mut bad = good.clone();
    bad["verdict"] = "maybe".into();
    assert!(!v.is_valid(&bad));
}

#[test]
fn intervals_csv_has_the_documented_columns() {
    let mut out = Vec::new();
    write_intervals_csv(&sample(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "interval_start_s,interval_length_s,phase,action,count,errors,late_starts,p50_ms,p95_ms,p99_ms,max_ms,mean_ms,users_logged_on,client_cpu_percent"
    );
    assert_eq!(lines[0], INTERVALS_CSV_HEADER);
    assert_eq!(
        &lines[1..],
        &[
            "0,10,logon,,0,0,0,,,,,,2,12.3",
            "10,10,steady,read,4,0,0,20,40,40,40,25.009,2,",
            "10,10,steady,send,1,1,0,200,200,200,200,200,2,",
            "20,10,steady,read,1,1,0,1000,1000,1000,1000,1000.192,2,",
            "30,5,drain,,0,0,0,,,,,,2,",
        ]
    );
}

#[test]
fn errors_csv_lists_every_kind_and_quotes_commas() {
    let mut record = sample();
    record
        .server
        .error_examples
        .push(peakhour_analysis::ErrorExample::new(
            "send",
            "smtp.451, try later",
            "as user1: MAIL FROM refused: 451 4.3.0 try later",
            &peakhour_analysis::Redactor::default(),
        ));
    let mut out = Vec::new();
    write_errors_csv(&record, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        format!(
            "{ERRORS_CSV_HEADER}\n10,steady,send,\"smtp.451, try later\",1,as user1: MAIL FROM refused: 451 4.3.0 try later\n20,steady,read,timeout,1,\n"
        )
    );
    assert_eq!(
        ERRORS_CSV_HEADER,
        "interval_start_s,phase,action,error_kind,count,example"
    );
}

#[test]
fn issue_27_item_5_violations_are_inconsistent_rows_of_errors_csv_in_their_intervals() {
    use peakhour_analysis::{KindCount, StateChecks, StateViolation};
    let mut record = sample();
    let violation = |check: &str, client: &str, at_s: f64| StateViolation {
        check: check.into(),
        client: client.into(),
        mailbox: "INBOX".into(),
        seq: Some(2),
        uid: Some(1),
        expected: "UID > 1".into(),
        seen: "UID 1".into(),
        at_s: Some(at_s),
    };
    let mut checks = StateChecks {
        enabled: true,
        checks: 50,
        violations: 4,
        // Three uid_order (two kept), one search_missing found after the run.
        examples: vec![
            violation("uid_order", "user1@bench.test#1", 12.0),
            violation("uid_order", "user2@bench.test#1", 25.0),
            violation("search_missing", "user2@bench.test#1", 40.0),
        ],
        ..StateChecks::default()
    };
    checks.by_kind.insert(
        "uid_order".into(),
        KindCount {
            checks: 40,
            violations: 3,
        },
    );
    checks.by_kind.insert(
        "search_missing".into(),
        KindCount {
            checks: 10,
            violations: 1,
        },
    );
    checks.by_kind.insert(
        "uid_changed".into(),
        KindCount {
            checks: 40,
            violations: 0,
        },
    );
    checks
        .session_logs
        .insert("user1@bench.test#1".into(), "C: A1 NOOP\n".into());
    record.state_checks = Some(checks);
    let mut out = Vec::new();
    write_errors_csv(&record, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text.lines().skip(3).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[0].starts_with("10,steady,state_check,inconsistent:uid_order,1,\"uid_order: client user1@bench.test#1, mailbox \"\"INBOX\"\", seq 2, UID 1: expected UID > 1, seen UID 1; raw log: state-violations/user1@bench.test_1.log\""),
        "{text}"
    );
    // The violation past the kept ones is counted on its kind's last row.
    assert_eq!(
        rows[1], "20,steady,state_check,inconsistent:uid_order,2,",
        "{text}"
    );
    // Found after the last interval: counted in it; no raw log kept.
    assert!(
        rows[2].starts_with("30,drain,state_check,inconsistent:search_missing,1,search_missing: client user2@bench.test#1,")
            || rows[2].starts_with("30,drain,state_check,inconsistent:search_missing,1,\"search_missing: client user2@bench.test#1,"),
        "{text}"
    );
    assert!(!rows[2].contains("raw log"), "{text}");
}

#[test]
fn hlog_reads_back_with_hdrhistogram() {
    let record = sample();
    let mut out = Vec::new();
    write_hlog(&record, &mut out).unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.starts_with("#peakhour 0.1.0 run r1"), "{text}");

    let mut start = None;
    let mut base = None;
    let mut entries = Vec::new();
    for entry in IntervalLogIterator::new(&out) {
        match entry.unwrap() {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(h) => {
                let bytes = base64_decode(h.encoded_histogram());
                let hist: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut bytes.as_slice())
                    .unwrap();
                entries.push((
                    h.tag().map(|t| t.as_str().to_owned()),
                    h.start_timestamp().as_secs_f64(),
                    h.duration().as_secs_f64(),
                    hist.len(),
                    hist.max(),
                ));
            }
        }
    }
    assert_eq!(start, Some(Duration::from_secs(1_777_636_800)));
    assert_eq!(base, start);
    // Per interval: the untagged merge of all actions (what
    // HistogramLogProcessor reads without -tag), then each action.
    let tags: Vec<_> = entries.iter().map(|e| e.0.as_deref()).collect();
    assert_eq!(tags, [None, Some("read"), Some("send"), None, Some("read")]);
    assert_eq!(entries[1].1, 10.0);
    assert_eq!(entries[1].2, 10.0);
    assert_eq!(entries[1].3, 4);
    let (all, read, send) = (&entries[0], &entries[1], &entries[2]);
    assert_eq!((all.1, all.2), (10.0, 10.0));
    assert_eq!(all.3, read.3 + send.3, "{entries:?}");
    assert_eq!(all.4, read.4.max(send.4));
    assert_eq!(entries[4].1, 20.0);
    // 1000 ms in µs, within the histogram's 3 significant digits.
    assert!(
        (999_000..=1_001_000).contains(&entries[4].4),
        "{:?}",
        entries[4]
    );
}

/// Standard base64, enough for the test (no dependency just for this).
fn base64_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0_u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn terminal_summary_has_table_score_throughput_delivery_and_verdict() {
    let mut record = sample();
    record.meta.interrupted = true;
    let text = render_terminal(&Summary::compute(&record).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    let table_start = lines.iter().position(|l| l.starts_with("action")).unwrap();
    let table = &lines[table_start..table_start + 4];
    assert_eq!(
        table[0],
        "action  count  p50   p95   p99   max  errors  late   qos"
    );
    assert!(table[1].starts_with("------  -----"));
    assert_eq!(
        table[2],
        "read        5   30  1000  1000  1000       1     0  FAIL"
    );
    assert_eq!(
        table[3],
        "send        1  200   200   200   200       1     0  FAIL"
    );
    // (81.3 * 1000 + 14.18 * 200) / 95.48 = 881.190, shown to three significant digits
    assert!(
        text.contains("weighted p95 score:  881 ms (weights: profile actions per day"),
        "{text}"
    );
    assert!(
        text.contains("throughput:          180 messages submitted/h"),
        "{text}"
    );
    assert!(
        text.contains("0 message opens/s · 0 folder opens/s"),
        "{text}"
    );
    assert!(text.contains("delivery:            2 of 3 recipients delivered, 0 failed, 1 lost · p50 150 ms · p95 250 ms · max 250 ms"), "{text}");
    assert!(text.contains("  lost: m-9 -> user1@test.invalid"));
    assert!(text.contains("WARNING: interrupted"));
    assert!(!text.contains("client-bound"));
    assert!(text.contains("QoS verdict: FAIL\n"));
    assert!(text.contains("  - delivery: 1 recipients were never delivered"));
    assert!(!text.contains("mail queue still held"), "{text}");
}

#[test]
fn lost_copies_with_a_queue_at_the_end_may_still_be_queued() {
    let mut summary = Summary::compute(&sample()).unwrap();
    summary.delivery.mail_queue_at_end = Some(2621);
    let text = render_terminal(&summary);
    assert!(
        text.contains("  the mail queue still held 2621 messages when the run ended: delivery fell behind, so lost copies may still be queued rather than gone"),
        "{text}"
    );
    let value: Value = serde_json::from_str(&summary_json(&summary).unwrap()).unwrap();
    if let Err(e) = validator().validate(&value) {
        panic!("summary.json does not match the schema: {e}");
    }
    assert_eq!(value["delivery"]["mail_queue_at_end"], 2621);
    // An empty queue at the end says nothing more.
    summary.delivery.mail_queue_at_end = Some(0);
    assert!(!render_terminal(&summary).contains("mail queue still held"));
}

#[test]
fn issue_12_sessions_that_never_logged_on_point_at_a_connection_limit() {
    let mut summary = Summary::compute(&sample()).unwrap();
    assert!(!render_terminal(&summary).contains("per client address"));
    summary.errors_by_kind.insert("not-logged-on".into(), 30);
    summary.errors_by_kind.insert("imap:closed".into(), 139);
    let text = render_terminal(&summary);
    assert!(
        text.contains("169 errors are sessions that closed or never logged on"),
        "{text}"
    );
    assert!(text.contains("mail_max_userip_connections"), "{text}");
}

#[test]
fn terminal_pass_line_and_client_bound_warning() {
    let mut rec = IntervalRecorder::new(RecorderConfig::default()).unwrap();
    rec.enter_phase(Phase::Steady, s(0));
    ok(&mut rec, "check inbox", s(1), ms(12));
    rec.record_scheduling_lag(s(1), ms(50));
    let meta = RunMeta::new("r3", "p", 1, 1, "2026-05-01T12:00:00Z");
    let record = RunRecord::new(meta, rec.finish(s(10)), Default::default());
    let text = render_terminal(&Summary::compute(&record).unwrap());
    assert!(text.contains("WARNING: client-bound"), "{text}");
    assert!(text.contains("scheduling lag p99 was 50 ms"), "{text}");
    assert!(
        text.ends_with(
            "QoS verdict: PASS (weighted p95 within 1000 ms, actions with a limit of their own within it, errors <= 1%)\n"
        ),
        "{text}"
    );
    // A tag may not hold spaces: the hlog writes check_inbox.
    let mut out = Vec::new();
    write_hlog(&record, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("Tag=check_inbox,"));
}

fn with_monitor(mut summary: Summary) -> Summary {
    summary.bottleneck = Some(peakhour_analysis::Bottleneck {
        resource: "CPU".into(),
        evidence: "94% busy, run queue 3.1 per core, dovecot processes 71% of CPU".into(),
        line: "CPU: 94% busy, run queue 3.1 per core, dovecot processes 71% of CPU — CPU-bound"
            .into(),
    });
    let metric =
        |metric: &str, label: &str, mean, high, std_dev| peakhour_analysis::ResourceHighAverage {
            metric: metric.into(),
            label: label.into(),
            mean,
            p95: high + 1.0,
            max: high + 2.0,
            high_average: high,
            high_average_std_dev: std_dev,
            high_average_window_s: 30.0,
            shorter_than_window: false,
            samples: 60,
        };
    summary.resources = vec![
        metric("cpu_busy_pct", "CPU busy %", 90.0, 94.0, 2.5),
        metric(
            "mem_available_kb",
            "memory available",
            2_097_152.0,
            2_097_152.0,
            1024.0,
        ),
    ];
    summary
}

#[test]
fn bottleneck_and_high_averages_are_schema_valid_and_printed() {
    let summary = with_monitor(Summary::compute(&sample()).unwrap());
    let value: Value = serde_json::from_str(&summary_json(&summary).unwrap()).unwrap();
    let v = validator();
    if let Err(e) = v.validate(&value) {
        panic!("summary.json does not match the schema: {e}");
    }
    assert_eq!(value["bottleneck"]["resource"], "CPU");
    let mut bad = value.clone();
    bad["bottleneck"]
        .as_object_mut()
        .unwrap()
        .remove("evidence");
    assert!(
        !v.is_valid(&bad),
        "schema accepted a bottleneck without evidence"
    );

    let text = render_terminal(&summary);
    assert!(
        text.contains(
            "bottleneck:          CPU: 94% busy, run queue 3.1 per core, dovecot processes 71% of CPU — CPU-bound\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("server (monitor.csv, steady phase; high average = highest mean over 30 s"),
        "{text}"
    );
    assert!(
        text.contains("  CPU busy %            90.0      95.0      96.0        94.0 ± 2.5\n"),
        "{text}"
    );
    assert!(
        text.contains("  memory available  2048 MiB  2048 MiB  2048 MiB  2048 MiB ± 1 MiB\n"),
        "{text}"
    );
    // The verdict stays the last line.
    assert!(
        text.trim_end()
            .lines()
            .rev()
            .any(|l| l.starts_with("QoS verdict"))
    );
    let verdict_at = text.find("QoS verdict").unwrap();
    assert!(text.find("bottleneck:").unwrap() < verdict_at);

    // Without a monitor, no server section.
    let plain = render_terminal(&Summary::compute(&sample()).unwrap());
    assert!(!plain.contains("bottleneck"));
}

#[test]
fn nothing_saturated_is_said_plainly() {
    let mut summary = Summary::compute(&sample()).unwrap();
    summary.bottleneck = Some(peakhour_analysis::Bottleneck {
        resource: "none".into(),
        evidence: "no resource saturated (busiest: CPU 35% busy)".into(),
        line: "no resource saturated (busiest: CPU 35% busy)".into(),
    });
    let value: Value = serde_json::from_str(&summary_json(&summary).unwrap()).unwrap();
    assert!(validator().is_valid(&value));
    assert!(!summary.bottleneck.as_ref().unwrap().is_saturated());
    let text = render_terminal(&summary);
    assert!(text.contains("bottleneck:          no resource saturated (busiest: CPU 35% busy)\n"));
}

/// A caldav-office run as the issue saw it: 22 invitations skipped, no mail.
fn calendar_run() -> RunRecord {
    let mut rec = IntervalRecorder::new(RecorderConfig::default()).unwrap();
    rec.set_users_logged_on(s(5), 2);
    rec.enter_phase(Phase::Steady, s(10));
    ok(&mut rec, "create_event", s(12), ms(40));
    ok(&mut rec, "poll_calendar", s(13), ms(20));
    rec.count(s(12), "events_created", 5);
    rec.count(s(13), "events_changed", 3);
    rec.count(s(14), "skipped_no_scheduling", 22);
    rec.enter_phase(Phase::Drain, s(30));
    let intervals = rec.finish(s(35));
    let mut meta = RunMeta::new("r2", "caldav-office", 2, 7, "2026-05-01T12:00:00Z");
    meta.peakhour_version = "0.1.0".into();
    for action in ["create_event", "poll_calendar", "change_event"] {
        meta.protocols.insert(action.into(), "caldav".into());
    }
    RunRecord::new(meta, intervals, DeliveryRecorder::new().finish().unwrap())
}

#[test]
fn issue_31_item_6_a_calendar_run_speaks_of_events_and_invitations_not_mail() {
    let record = calendar_run();
    let mut summary = Summary::compute(&record).unwrap();
    for (protocol, offered) in [
        ("imap", "IDLE"),
        ("smtp", "PIPELINING"),
        ("caldav", "calendar-access"),
    ] {
        summary
            .server_capabilities
            .insert(protocol.into(), vec![offered.into()]);
    }
    let text = render_terminal(&summary);
    assert!(text.contains("calendar:            5 events created · 3 changed · 0 invitations sent · 22 invitations skipped: the server does not schedule"), "{text}");
    for mail in [
        "messages submitted",
        "recipients delivered",
        "of 0 recipients",
        "IMAP",
        "SMTP",
    ] {
        assert!(!text.contains(mail), "{mail:?} in a calendar run: {text}");
    }
    assert!(text.contains("CalDAV (DAV): calendar-access"), "{text}");

    let html = peakhour_report::render_html(&peakhour_report::ReportInput {
        record: &record,
        summary: &summary,
        config_toml: None,
        host: None,
        monitor: None,
    })
    .unwrap();
    assert!(
        html.contains("22 invitations skipped"),
        "the report says it too"
    );
    assert!(!html.contains("Messages Submitted"));
    assert!(!html.contains("IMAP (after login)") && !html.contains("SMTP (EHLO)"));
    assert!(html.contains("No mail: this run"));

    // A mail run keeps its mail lines.
    let mail = render_terminal(&Summary::compute(&sample()).unwrap());
    assert!(mail.contains("messages submitted/h") && mail.contains("recipients delivered"));
    assert!(!mail.contains("calendar:"));
}
