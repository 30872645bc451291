//! The summary printed at the end of a run.

use std::fmt::Write as _;

use peakhour_analysis::{
    Bottleneck, DeliverySummary, ResourceHighAverage, Summary, Verdict, WeightSource,
};

use crate::number::{or_dash, plain};

/// Renders the end-of-run summary as plain text (no colour codes, so it can
/// be logged or piped): the per-action table, the weighted p95 score,
/// MMB-style throughput, delivery, the server's high averages and the
/// bottleneck line (when a monitor ran), warnings and the QoS verdict line
/// last.
pub fn render_terminal(summary: &Summary) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = render_into(summary, &mut out);
    out
}

/// What a summary holds that the terminal table does not say, one line
/// each: tasks that panicked, and lost copies that were never looked for or
/// are counted but not named.
pub fn safety_notes(panics: u64, d: &DeliverySummary) -> Vec<String> {
    let mut notes = Vec::new();
    if panics > 0 {
        notes.push(format!(
            "FAILED: {panics} of peakhour's tasks panicked (a bug in peakhour); their work is missing \
             from the figures and counted as errors of kind `panic`"
        ));
    }
    if d.lost_unsearched > 0 {
        notes.push(format!(
            "{} of the {} lost copies are in mailboxes the reconciliation could not search \
             (the search failed, timed out or panicked): not seen, but not looked for either",
            d.lost_unsearched, d.lost
        ));
    }
    if d.lost_not_listed > 0 {
        notes.push(format!(
            "summary.json names the first {} lost copies; {} more are counted, not named",
            d.lost_recipients.len(),
            d.lost_not_listed
        ));
    }
    notes
}

fn render_into(s: &Summary, out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "peakhour run {} · profile {} · {} users · seed {}",
        s.run_id, s.profile, s.users, s.seed
    )?;
    writeln!(
        out,
        "steady state: {} s in {} intervals, from {} s after start; latency in ms from the intended start",
        plain(s.steady.length_s),
        s.steady.intervals,
        plain(s.steady.start_s)
    )?;
    writeln!(out)?;

    actions_into(s, out)?;
    figures_into(s, out)?;
    if s.throughput.bytes_per_second.is_none() {
        if crate::server_facts::moves_mail(s) {
            delivery_into(s, out)?;
        } else {
            // A calendar run sends no mail: no delivery line to print.
            common_tail(s, out)?;
        }
    }
    verdict_into(s, out)
}

/// The per-action table: counts, percentiles, errors, late starts, QoS.
fn actions_into(s: &Summary, out: &mut String) -> std::fmt::Result {
    let header = [
        "action", "count", "p50", "p95", "p99", "max", "errors", "late", "qos",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    for (name, a) in &s.actions {
        rows.push([
            name.clone(),
            a.count.to_string(),
            ms(a.p50_ms),
            ms(a.p95_ms),
            ms(a.p99_ms),
            ms(a.max_ms),
            a.errors.to_string(),
            a.late_starts.to_string(),
            if a.qos_pass { "ok" } else { "FAIL" }.to_owned(),
        ]);
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if i == 0 {
                l.push_str(cell);
                l.push_str(&" ".repeat(pad));
            } else {
                l.push_str("  ");
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            }
        }
        l.trim_end().to_owned()
    };
    writeln!(out, "{}", line(&header))?;
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(
        out,
        "{}",
        line(&rule.iter().map(String::as_str).collect::<Vec<_>>())
    )?;
    for row in &rows {
        writeln!(out, "{}", line(&row.each_ref().map(String::as_str)))?;
    }
    if rows.is_empty() {
        writeln!(out, "(no action was measured in the steady state)")?;
    }
    writeln!(out)?;

    Ok(())
}

/// The score, the throughput and, for a fixed workload, its completion.
fn figures_into(s: &Summary, out: &mut String) -> std::fmt::Result {
    let source = match s.score.weight_source {
        WeightSource::Profile => "weights: profile actions per day",
        WeightSource::Measured => "weights: measured counts",
    };
    writeln!(
        out,
        "weighted p95 score:  {} ms ({source}; all samples pooled: {} ms)",
        ms(s.score.weighted_p95_ms),
        ms(s.score.pooled_p95_ms)
    )?;
    let t = &s.throughput;
    if let Some(bytes) = t.bytes_per_second {
        // A file run: NetBench's throughput, and no mail to deliver.
        writeln!(
            out,
            "throughput:          {} bytes/s · {} Mbit/s (bytes read and written per second; Mbit = 2^20 bits, as seed 004) · {} operations/s",
            plain(bytes),
            plain(t.megabits_per_second.unwrap_or(0.0)),
            plain(t.actions_per_second)
        )?;
        return common_tail(s, out);
    }
    if crate::server_facts::moves_mail(s) {
        writeln!(
            out,
            "throughput:          {} messages submitted/h · {} recipients delivered/h",
            plain(t.messages_submitted_per_hour),
            plain(t.recipients_delivered_per_hour)
        )?;
        writeln!(
            out,
            "                     {} message opens/s · {} folder opens/s · {} actions/s",
            plain(t.message_opens_per_second),
            plain(t.folder_opens_per_second),
            plain(t.actions_per_second)
        )?;
    } else {
        writeln!(
            out,
            "throughput:          {} actions/s",
            plain(t.actions_per_second)
        )?;
    }
    if let Some(words) = crate::server_facts::calendar_words(s) {
        writeln!(out, "calendar:            {words}")?;
    }
    if let Some(completion) = &s.meta.completion {
        let minutes = completion.time_to_finish.as_secs_f64() / 60.0;
        let per_minute = if minutes > 0.0 {
            s.delivery.delivered_recipients as f64 / minutes
        } else {
            0.0
        };
        writeln!(
            out,
            "fixed workload:      {} of {} users finished in {} s · {} recipients delivered per minute",
            completion.users_finished,
            s.users,
            plain(completion.time_to_finish.as_secs_f64()),
            plain(per_minute)
        )?;
    }
    Ok(())
}

/// Delivery: what reconciled, what was lost, late starts and errors by kind.
fn delivery_into(s: &Summary, out: &mut String) -> std::fmt::Result {
    let d = &s.delivery;
    writeln!(
        out,
        "delivery:            {} of {} recipients delivered, {} failed, {} lost · p50 {} ms · p95 {} ms · max {} ms",
        d.delivered_recipients,
        d.submitted_recipients,
        d.failed_recipients,
        d.lost,
        ms(d.p50_ms),
        ms(d.p95_ms),
        ms(d.max_ms)
    )?;
    if d.delivered_recipients > 0 {
        crate::server_facts::delivery_text(s, out)?;
    }
    if let Some(queued) = d.mail_queue_at_end.filter(|q| d.lost > 0 && *q > 0) {
        writeln!(
            out,
            "  the mail queue still held {queued} messages when the run ended: delivery fell behind, so lost copies may still be queued rather than gone"
        )?;
    }
    for lost in d.lost_recipients.iter().take(10) {
        writeln!(out, "  lost: {} -> {}", lost.message_id, lost.recipient)?;
    }
    if d.lost_recipients.len() > 10 {
        writeln!(
            out,
            "  ... and {} more (see summary.json)",
            d.lost_recipients.len() - 10
        )?;
    }
    if !d.reconciled {
        writeln!(
            out,
            "WARNING: delivery does not reconcile: submitted != delivered + failed + lost"
        )?;
    }
    common_tail(s, out)
}

/// What mail and file runs print alike after their throughput: late starts, errors,
/// the monitor, warnings and the verdict.
fn common_tail(s: &Summary, out: &mut String) -> std::fmt::Result {
    if s.late_starts > 0 {
        writeln!(out, "late starts:         {}", s.late_starts)?;
    }
    if !s.errors_by_kind.is_empty() {
        let kinds: Vec<String> = s
            .errors_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(out, "errors by kind:      {}", kinds.join(" · "))?;
        if s.connection_limit.is_none()
            && let Some(hint) = connection_limit_hint(s)
        {
            writeln!(out, "  {hint}")?;
        }
    }
    crate::server_facts::errors_text(s, out)?;
    crate::server_facts::capabilities_text(s, out)?;
    Ok(())
}

/// What users that could not log on (or lost their session) most often
/// mean on a server that is not the lab: a limit on connections per client
/// address, since every simulated user connects from the same one.
fn connection_limit_hint(s: &Summary) -> Option<String> {
    let count = |kind: &str| s.errors_by_kind.get(kind).copied().unwrap_or(0);
    let logons = count("not-logged-on") + count("imap:closed");
    (logons > 0).then(|| {
        format!(
            "{logons} errors are sessions that closed or never logged on: if the server limits \
             connections per client address (Dovecot's mail_max_userip_connections, Courier's \
             MAXPERIP), the users past its limit fail this way; raise it for the test or run \
             fewer users (docs/servers.md, \"Connection limits\")"
        )
    })
}

/// The monitor's findings, the warnings and the QoS verdict.
fn verdict_into(s: &Summary, out: &mut String) -> std::fmt::Result {
    writeln!(out)?;
    if let Some(l) = &s.limits {
        writeln!(out, "server limits:       {}", l.describe())?;
    }
    if !s.resources.is_empty() || s.bottleneck.is_some() {
        monitor_into(
            "monitor.csv, steady phase",
            &s.resources,
            s.bottleneck.as_ref(),
            out,
        )?;
        writeln!(out)?;
    }
    if s.client_bound {
        writeln!(
            out,
            "WARNING: client-bound: these figures may describe peakhour, not the server"
        )?;
        for reason in &s.client_bound_reasons {
            writeln!(out, "  - {reason}")?;
        }
    }
    if s.interrupted {
        writeln!(
            out,
            "WARNING: interrupted: the run was stopped early; figures cover what was measured"
        )?;
    }
    // Wherever the results are shown, so is what weakened the run's
    // security (issue 26: `--insecure-skip-tls-verify`).
    for shortcut in &s.security_shortcuts {
        writeln!(out, "WARNING: security shortcut: {shortcut}")?;
    }
    // `run --check-state`: a violation is also among the verdict's failures.
    if let Some(checks) = &s.state_checks {
        writeln!(out, "{}", checks.line())?;
        // Each kind found, counted, with its first violation (issue 27 item 5).
        for (kind, count, first) in checks.violated_kinds() {
            let first = first.map_or_else(
                || "(see state-violations.csv)".to_owned(),
                ToString::to_string,
            );
            writeln!(
                out,
                "  inconsistent:{kind} x {} of {} checks; first: {first}",
                count.violations, count.checks
            )?;
        }
    }
    match s.verdict {
        // The one QoS rule (analysis `qos`): the weighted p95 against its
        // limit; an action is judged alone only where it has a limit of its own.
        Verdict::Pass => writeln!(
            out,
            "QoS verdict: PASS (weighted p95 within {} ms, actions with a limit of their own within it, errors <= {}%)",
            plain(s.meta.qos.default_p95_ms),
            plain(s.meta.qos.max_error_ratio * 100.0)
        )?,
        Verdict::Fail => {
            writeln!(out, "QoS verdict: FAIL")?;
            for f in &s.qos.failures {
                writeln!(out, "  - {}: {}", f.subject, f.reason)?;
            }
        }
    }
    Ok(())
}

/// The server monitor's part of a summary: a table of each key metric's
/// mean, p95, max and high average (± its standard deviation), then the
/// bottleneck line. `scope` says what the figures cover, e.g.
/// `monitor.csv, steady phase`. `peakhour run` prints it inside
/// [`render_terminal`]; `peakhour monitor` prints it on its own.
pub fn render_monitor(
    scope: &str,
    resources: &[ResourceHighAverage],
    bottleneck: Option<&Bottleneck>,
) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = monitor_into(scope, resources, bottleneck, &mut out);
    out
}

fn monitor_into(
    scope: &str,
    resources: &[ResourceHighAverage],
    bottleneck: Option<&Bottleneck>,
    out: &mut String,
) -> std::fmt::Result {
    if !resources.is_empty() {
        let window = resources
            .iter()
            .map(|r| r.high_average_window_s)
            .fold(0.0, f64::max);
        writeln!(
            out,
            "server ({scope}; high average = highest mean over {} s, ± its std dev):",
            plain(window)
        )?;
        let header = ["metric", "mean", "p95", "max", "high average"];
        let rows: Vec<[String; 5]> = resources
            .iter()
            .map(|r| {
                let high = format!(
                    "{} ± {}{}",
                    value(&r.metric, r.high_average),
                    value(&r.metric, r.high_average_std_dev),
                    if r.shorter_than_window {
                        " (whole phase)"
                    } else {
                        ""
                    }
                );
                [
                    r.label.clone(),
                    value(&r.metric, r.mean),
                    value(&r.metric, r.p95),
                    value(&r.metric, r.max),
                    high,
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 5]| {
            let mut l = String::from("  ");
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
                if i == 0 {
                    l.push_str(cell);
                    l.push_str(&pad);
                } else {
                    l.push_str("  ");
                    l.push_str(&pad);
                    l.push_str(cell);
                }
            }
            l.trim_end().to_owned()
        };
        writeln!(out, "{}", line(header))?;
        for row in &rows {
            writeln!(out, "{}", line(row.each_ref().map(String::as_str)))?;
        }
    }
    if let Some(b) = bottleneck {
        writeln!(out, "bottleneck:          {}", b.line)?;
    }
    Ok(())
}

/// A monitor value in its column's unit: KiB are shown as MiB.
fn value(metric: &str, v: f64) -> String {
    if metric.ends_with("_kb") {
        format!("{:.0} MiB", v / 1024.0)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn ms(v: Option<f64>) -> String {
    or_dash(v, plain, "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> DeliverySummary {
        DeliverySummary {
            submitted_recipients: 10,
            delivered_recipients: 7,
            failed_recipients: 0,
            lost: 3,
            lost_recipients: Vec::new(),
            lost_not_listed: 0,
            lost_unsearched: 0,
            awaiting_merge: 0,
            reconciled: true,
            p50_ms: None,
            p95_ms: None,
            max_ms: None,
            mail_queue_at_end: None,
            latency_includes: String::new(),
            mta: None,
            mta_unknown: None,
        }
    }

    #[test]
    fn a_clean_run_has_no_safety_notes() {
        assert!(safety_notes(0, &delivery()).is_empty());
    }

    #[test]
    fn panics_and_unsearched_or_unnamed_copies_are_each_noted() {
        let mut d = delivery();
        d.lost_unsearched = 2;
        d.lost_not_listed = 3;
        let notes = safety_notes(1, &d);
        assert_eq!(notes.len(), 3);
        assert!(notes[0].starts_with("FAILED: 1 of peakhour's tasks panicked"));
        assert!(notes[1].starts_with("2 of the 3 lost copies are in mailboxes"));
        assert_eq!(
            notes[2],
            "summary.json names the first 0 lost copies; 3 more are counted, not named"
        );
    }
}
