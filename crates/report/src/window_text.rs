//! Which part of the day a run measured (`run --window`), the rates that
//! implies per user and in total, and the morning's logon storm: the same
//! sentences at the end of the terminal's text and in the report's verdict.

use std::fmt::Write as _;

use peakhour_analysis::Summary;

use crate::html::escape;
use crate::number::{grouped, short};

/// The window's lines, none for the even day (what every run printed
/// before windows).
pub fn window_lines(s: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    if s.window == "day" {
        return lines;
    }
    let speed = s.meta.speed;
    let users = s.users;
    let mut first = format!("window: {}", s.window);
    if let (Some(per_user), Some(total)) = (s.peak_actions_per_user_hour, s.peak_actions_per_hour) {
        let _ = write!(
            first,
            " · the profile's busiest hour: {} actions per user per hour, {} for all {users} users",
            short(per_user),
            grouped(total)
        );
    }
    lines.push(first);
    if let Some(r) = &s.window_rates {
        let mut driven = format!(
            "window rates: driven {} actions per user per hour ({} in total)",
            short(r.planned_actions_per_user_hour),
            grouped(r.planned_actions_per_hour)
        );
        if speed != 1.0 {
            let stand_for = f64::from(users) * speed;
            let _ = write!(
                driven,
                " at speed {speed}: the actions of {} users' peak hour, from {users} sessions \
                 (the other {} users' sessions, logons and memory were not opened; seed 003: \
                 not the same test)",
                grouped(stand_for),
                grouped((stand_for - f64::from(users)).max(0.0))
            );
        }
        let _ = write!(
            driven,
            "; measured {} per user per hour ({} in total, {} actions)",
            short(r.measured_actions_per_user_hour),
            grouped(r.measured_actions_per_hour),
            r.actions
        );
        lines.push(driven);
    }
    if let Some(storm) = &s.logon_storm {
        lines.push(format!(
            "logon storm: {} of {users} users logged on ({} failed attempts) · {} logons/s measured \
             over {} s, {} planned · logon p95 {} ms, median {} ms",
            storm.logons,
            storm.errors,
            short(storm.logons_per_second),
            short(storm.seconds),
            short(storm.planned_logons_per_second),
            storm.p95_ms.map_or_else(|| "-".to_owned(), short),
            storm.p50_ms.map_or_else(|| "-".to_owned(), short),
        ));
    }
    lines
}

/// The window's lines as one paragraph of the report (nothing for the day).
pub(crate) fn window_html(out: &mut String, s: &Summary) {
    let lines = window_lines(s);
    if lines.is_empty() {
        return;
    }
    out.push_str("<p id=\"window\">");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        out.push_str(&escape(line));
    }
    out.push_str("</p>");
}
