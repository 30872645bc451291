//! `answer.html`: `peakhour capacity`'s answer as a page a person can read
//! and defend: the statement, then every step with its figures. Built from
//! the [`Answer`] alone.

use std::fmt::Write as _;

use peakhour_analysis::capacity::answer::Answer;

use crate::html::escape;

/// A step's failed checks, and the lab's restart after it when there was one.
fn why_failed(s: &peakhour_analysis::capacity::answer::AnswerStep) -> String {
    let mut out = s.qos_failures.join("; ");
    if s.lab_restarted {
        let found = s.lab_unhealthy.as_deref().unwrap_or("unhealthy");
        out.push_str(&format!("; then the lab was restarted ({found})"));
    }
    out
}

/// The self-contained HTML page of `answer`.
pub fn render_answer_html(answer: &Answer) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>peakhour capacity: {}</title>\
         <style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:right}}.fail{{color:#b00}}</style></head><body>\
         <h1>How many users: {}</h1>",
        escape(&answer.profile),
        escape(&answer.profile)
    );
    for sentence in &answer.statement {
        let _ = write!(page, "<p>{}</p>", escape(sentence));
    }
    page.push_str(
        "<h2>Steps</h2><table><tr><th>users</th><th>window</th><th>sessions held (server)</th>\
         <th>weighted p95 ms</th><th>QoS</th><th>bottleneck</th><th>why it failed</th><th>run</th></tr>",
    );
    for s in &answer.steps {
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td><a href=\"{}/report.html\">{}</a></td></tr>",
            s.users,
            escape(&s.window),
            s.sessions_held
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
            s.weighted_p95_ms
                .map_or_else(|| "-".to_owned(), |v| v.to_string()),
            if s.qos_pass { "pass" } else { "fail" },
            if s.qos_pass { "pass" } else { "fail" },
            escape(s.bottleneck.as_deref().unwrap_or("-")),
            escape(&why_failed(s)),
            escape(&s.run_dir),
            escape(&s.run_dir),
        );
    }
    let _ = writeln!(
        page,
        "</table><p>Search: {} ({}), precision {:.0}%, {:.0} s of a {:.0} s budget. Method and limits: docs/capacity.md.</p></body></html>",
        escape(&answer.ended),
        if answer.complete {
            "bracketed"
        } else {
            "not bracketed"
        },
        answer.precision * 100.0,
        answer.elapsed_s,
        answer.budget_s
    );
    page
}
