//! What a run learnt about the server, for the terminal and the HTML
//! report alike: what it offers (capabilities, EHLO keywords), the errors
//! grouped with an example of each, a connection limit when logons look
//! limited, and the MTA's own delivery time beside the end-to-end latency.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use peakhour_analysis::{DELIVERY_LATENCY_INCLUDES, Summary};

use crate::html::escape;
use crate::number::{or_dash, plain};

fn ms(v: Option<f64>) -> String {
    or_dash(v, plain, "-")
}

/// Most error groups printed in the terminal (the rest are in errors.csv and
/// the report).
const TERMINAL_ERROR_GROUPS: usize = 8;

/// Protocols as people write them.
fn protocol_label(protocol: &str) -> String {
    match protocol {
        "imap" => "IMAP (after login)".into(),
        "smtp" => "SMTP (EHLO)".into(),
        "pop3" => "POP3 (CAPA)".into(),
        "caldav" => "CalDAV (DAV)".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The protocols the run's actions spoke (`smtp+imap` is both), or `None`
/// for a record made before they were kept.
fn protocols_used(s: &Summary) -> Option<BTreeSet<&str>> {
    if s.meta.protocols.is_empty() {
        return None;
    }
    Some(
        s.meta
            .protocols
            .values()
            .flat_map(|p| p.split('+'))
            .collect(),
    )
}

/// Whether the run sent or read mail: what its mail lines (throughput in
/// messages, delivery) are about. A calendar run does neither (issue 31).
pub(crate) fn moves_mail(s: &Summary) -> bool {
    s.delivery.submitted_recipients > 0
        || protocols_used(s).is_none_or(|used| {
            ["smtp", "imap", "pop3", "jmap"]
                .iter()
                .any(|p| used.contains(p))
        })
}

/// The capabilities of the protocols the run used (all of them for a record
/// that does not say): a calendar run asks IMAP and SMTP too, before it
/// knows it will not need them.
fn capabilities_used(s: &Summary) -> impl Iterator<Item = (&String, &Vec<String>)> {
    let used = protocols_used(s);
    s.server_capabilities
        .iter()
        .filter(move |(protocol, _)| used.as_ref().is_none_or(|u| u.contains(protocol.as_str())))
}

/// What a calendar run did, in words: events created and changed, and the
/// invitations sent or skipped, with why; `None` when the run spoke no
/// CalDAV.
pub(crate) fn calendar_words(s: &Summary) -> Option<String> {
    if !protocols_used(s).is_some_and(|u| u.contains("caldav")) {
        return None;
    }
    let count = |name: &str| s.counters.get(name).copied().unwrap_or(0);
    let mut words = format!(
        "{} events created · {} changed · {} invitations sent",
        count("events_created"),
        count("events_changed"),
        count("invitations_sent")
    );
    let skipped = count("skipped_no_scheduling");
    if skipped > 0 {
        let _ = write!(
            words,
            " · {skipped} invitations skipped: the server does not schedule (its DAV classes lack \
             calendar-auto-schedule, RFC 6638), so no invitation could be delivered"
        );
    }
    Some(words)
}

/// `server offers:` lines, one per protocol the run used.
pub(crate) fn capabilities_text(s: &Summary, out: &mut String) -> std::fmt::Result {
    for (i, (protocol, offered)) in capabilities_used(s).enumerate() {
        let head = if i == 0 { "server offers:" } else { "" };
        writeln!(
            out,
            "{head:<21}{}: {}",
            protocol_label(protocol),
            if offered.is_empty() {
                "nothing beyond the base protocol".to_owned()
            } else {
                offered.join(" ")
            }
        )?;
    }
    Ok(())
}

/// Errors by action and kind with an example each, and the connection
/// limit's note.
pub(crate) fn errors_text(s: &Summary, out: &mut String) -> std::fmt::Result {
    if !s.error_groups.is_empty() {
        writeln!(
            out,
            "errors (whole run, by action and kind, an example of each):"
        )?;
    }
    for g in s.error_groups.iter().take(TERMINAL_ERROR_GROUPS) {
        match &g.example {
            Some(example) => {
                writeln!(out, "  {:>6} × {} {}: {example}", g.count, g.action, g.kind)?
            }
            None => writeln!(out, "  {:>6} × {} {}", g.count, g.action, g.kind)?,
        }
    }
    if s.error_groups.len() > TERMINAL_ERROR_GROUPS {
        writeln!(
            out,
            "  ... {} more kinds in errors.csv and report.html",
            s.error_groups.len() - TERMINAL_ERROR_GROUPS
        )?;
    }
    if let Some(limit) = &s.connection_limit {
        writeln!(out, "  CONNECTION LIMIT? {}", limit.note)?;
    }
    Ok(())
}

/// What the end-to-end delivery latency includes, and the MTA's own time.
pub(crate) fn delivery_text(s: &Summary, out: &mut String) -> std::fmt::Result {
    let d = &s.delivery;
    let includes = if d.latency_includes.is_empty() {
        DELIVERY_LATENCY_INCLUDES
    } else {
        &d.latency_includes
    };
    writeln!(out, "  (latency: {includes})")?;
    match (&d.mta, &d.mta_unknown) {
        (Some(mta), _) => writeln!(
            out,
            "  MTA's own delivery time: p50 {} ms · p95 {} ms · max {} ms over {} deliveries ({})",
            ms(mta.p50_ms),
            ms(mta.p95_ms),
            ms(mta.max_ms),
            mta.deliveries,
            mta.source
        ),
        (None, Some(why)) => writeln!(out, "  MTA's own delivery time: {why}"),
        (None, None) => Ok(()),
    }
}

/// The HTML of the delivery section's labels: what the latency includes
/// and the MTA's own time beside it.
pub(crate) fn delivery_html(s: &Summary, out: &mut String) {
    let d = &s.delivery;
    let includes = if d.latency_includes.is_empty() {
        DELIVERY_LATENCY_INCLUDES
    } else {
        &d.latency_includes
    };
    let _ = write!(
        out,
        "<p>The end-to-end latency is measured {}; a server that notifies late adds its delay here, so it is not the MTA's delivery time alone.</p>",
        escape(includes)
    );
    match (&d.mta, &d.mta_unknown) {
        (Some(mta), _) => {
            let _ = write!(
                out,
                "<table id=\"mta-delivery\"><thead><tr><th class=\"l\">delivery time</th><th>p50 ms</th><th>p95 ms</th><th>max ms</th><th>deliveries</th></tr></thead><tbody><tr><td class=\"l\">end to end (submission to the client's notice)</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr><tr><td class=\"l\">the MTA's own ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></tbody></table>",
                ms(d.p50_ms),
                ms(d.p95_ms),
                ms(d.max_ms),
                d.delivered_recipients,
                escape(&mta.source),
                ms(mta.p50_ms),
                ms(mta.p95_ms),
                ms(mta.max_ms),
                mta.deliveries
            );
        }
        (None, Some(why)) => {
            let _ = write!(
                out,
                "<p id=\"mta-delivery\">The MTA's own delivery time: {}.</p>",
                escape(why)
            );
        }
        (None, None) => {}
    }
}

/// The report's section on the server: what it offers, and the errors
/// grouped with an example each.
pub(crate) fn server_html(s: &Summary, out: &mut String) {
    out.push_str("<section id=\"server\"><h2>The server</h2><h3>What it offers</h3>");
    if s.server_capabilities.is_empty() {
        out.push_str("<p class=\"nodata\">not recorded (a run made before capabilities were kept, or a file run)</p>");
    } else {
        out.push_str("<table><thead><tr><th class=\"l\">protocol</th><th class=\"l\">capabilities</th></tr></thead><tbody>");
        for (protocol, offered) in capabilities_used(s) {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                escape(&protocol_label(protocol)),
                escape(&offered.join(" "))
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("<h3>Errors</h3>");
    if let Some(limit) = &s.connection_limit {
        let _ = write!(
            out,
            "<p class=\"fail\">Connection limit? {}</p>",
            escape(&limit.note)
        );
    }
    if s.error_groups.is_empty() {
        out.push_str("<p>No errors in the whole run.</p>");
    } else {
        out.push_str("<table id=\"error-groups\"><thead><tr><th class=\"l\">action</th><th class=\"l\">kind</th><th>count</th><th class=\"l\">example (command, login sent, the server's text)</th></tr></thead><tbody>");
        for g in &s.error_groups {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                escape(&g.action),
                escape(&g.kind),
                g.count,
                escape(g.example.as_deref().unwrap_or("—"))
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>\n");
}
