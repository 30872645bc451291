//! What a command prints when it is done: a mail run's summary with its
//! closing notes, `peakhour monitor`'s findings and cost, and the name a run
//! goes by in a comparison.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_analysis::monitor::{MonitorReport, TimeWindow, findings};

use crate::terminal::{render_monitor, render_terminal, safety_notes};

/// `peakhour run`'s closing text: the summary, a note when the deliveries
/// were not reconciled (the run was interrupted), the safety notes, and
/// where the results are ([`results_line`]; `not_written` is why they are
/// not, a full disk).
pub fn render_run_end(
    summary: &Summary,
    reconciled: bool,
    dir: &Path,
    not_written: Option<&str>,
) -> String {
    let mut out = render_terminal(summary);
    if !reconciled {
        out.push_str("deliveries were not reconciled (the run was interrupted)\n");
    }
    for note in safety_notes(summary.panics, &summary.delivery) {
        let _ = writeln!(out, "{note}");
    }
    for line in crate::window_lines(summary) {
        let _ = writeln!(out, "{line}");
    }
    out.push_str(&results_line(dir, not_written));
    out
}

/// The last line of a run: where its results are, or that they could not
/// be written (the figures above are then all the terminal has; a later
/// `peakhour report DIR` rebuilds what reached the disk).
pub fn results_line(dir: &Path, not_written: Option<&str>) -> String {
    match not_written {
        None => format!("results: {}\n", dir.display()),
        Some(why) => format!(
            "results: NOT written to {} ({why}); the figures above are what was measured, \
             and `peakhour report {}` rebuilds what reached the disk once there is room\n",
            dir.display(),
            dir.display()
        ),
    }
}

/// `peakhour monitor`'s closing text (also its `summary.txt`): what was
/// watched, the samples, the key metrics and the bottleneck over the whole
/// session with high averages over `high_average_window`, and the cost.
pub fn render_monitor_session(
    what: &str,
    report: &MonitorReport,
    high_average_window: Duration,
) -> String {
    let found = findings(&report.table, TimeWindow::ALL, high_average_window);
    let mut text = format!(
        "peakhour monitor · {what} · {} samples over {:.0} s\n",
        report.table.len(),
        report.cost.wall.as_secs_f64()
    );
    text.push_str(&render_monitor(
        "monitor.csv, whole run",
        &found.resources,
        Some(&found.bottleneck),
    ));
    text.push_str(&report.cost_line());
    text.push('\n');
    text
}

/// A run's name in a comparison: its directory's last component, or the
/// path as given when it has none (`/`, `.`).
pub fn run_label(dir: &Path) -> String {
    dir.components()
        .next_back()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != ".")
        .unwrap_or_else(|| dir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_labelled_by_its_last_directory() {
        assert_eq!(
            run_label(Path::new("runs/20261121T090000Z-x-5u")),
            "20261121T090000Z-x-5u"
        );
        assert_eq!(run_label(Path::new("runs/a/")), "a");
        assert_eq!(run_label(Path::new(".")), ".");
        assert_eq!(run_label(Path::new("/")), "/");
    }
}
