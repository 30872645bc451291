//! The exposition: [`LiveMetrics`] as OpenMetrics 1.0 text, or as the older
//! Prometheus text format 0.0.4 for a scraper that asks for it.
//!
//! The two differ only in framing: OpenMetrics names a counter's family
//! without `_total`, has `# UNIT`, `info` and `stateset` types, and ends
//! with `# EOF`; the Prometheus format names the sample in `# TYPE` and
//! serves info and stateset families as gauges. The samples are the same.

use std::fmt::Write as _;

use crate::catalogue::{self, Family, Kind, PHASE_STATES};
use crate::histogram::Histogram;
use crate::live::{LiveMetrics, RunPhase, Tally};

/// Which text format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0.
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Prometheus,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Writes every family of [`FAMILIES`](crate::catalogue::FAMILIES), in
/// its order, each with its help and type even when it has no samples yet.
/// `cpu_seconds` is the process's CPU time read for this scrape (none where
/// /proc cannot be read).
pub fn encode(metrics: &LiveMetrics, cpu_seconds: Option<f64>, format: Format) -> String {
    let mut out = Exposition {
        text: String::with_capacity(16 * 1024),
        format,
    };
    run_state(&mut out, metrics);
    actions(&mut out, metrics);
    tallies(&mut out, metrics);
    generator(&mut out, metrics, cpu_seconds);
    if format == Format::OpenMetrics {
        out.text.push_str("# EOF\n");
    }
    out.text
}

/// Who the run is, where it is, and its users.
fn run_state(out: &mut Exposition, m: &LiveMetrics) {
    let name = out.header(&catalogue::RUN);
    if let Some(run) = &m.run {
        let seed = run.seed.to_string();
        let labels = [
            ("run_id", run.run_id.as_str()),
            ("profile", run.profile.as_str()),
            ("seed", seed.as_str()),
            ("shard", run.shard.as_str()),
            ("version", run.version.as_str()),
        ];
        out.sample(&format!("{name}_info"), &labels, "1");
    }
    let name = out.header(&catalogue::PHASE);
    for state in PHASE_STATES {
        let on = if *state == m.stage.label() { "1" } else { "0" };
        out.sample(name, &[(name, state)], on);
    }
    out.gauge(&catalogue::ELAPSED, m.elapsed.as_secs_f64());
    out.gauge(&catalogue::USERS, f64::from(m.users));
    out.gauge(&catalogue::USERS_LOGGED_ON, f64::from(m.logged_on));
}

/// Actions, their errors, skips, late starts and latency, and commands.
fn actions(out: &mut Exposition, m: &LiveMetrics) {
    let timed = || m.actions.iter().filter(|(_, c)| c.timed);
    let name = out.header(&catalogue::ACTIONS);
    for (action, counts) in timed() {
        for phase in RunPhase::ALL {
            for (outcome, n) in [("ok", counts.ok), ("error", counts.failed)] {
                let labels = [
                    ("action", action.as_str()),
                    ("phase", phase.label()),
                    ("outcome", outcome),
                ];
                out.counter(name, &labels, n[phase as usize]);
            }
        }
    }
    let name = out.header(&catalogue::ERRORS);
    for (action, counts) in &m.actions {
        out.keyed_per_phase(name, action, "kind", &counts.errors);
    }
    let name = out.header(&catalogue::SKIPPED);
    for (action, counts) in &m.actions {
        out.keyed_per_phase(name, action, "reason", &counts.skipped);
    }
    let name = out.header(&catalogue::LATE_STARTS);
    for (action, counts) in timed() {
        for phase in RunPhase::ALL {
            let labels = [("action", action.as_str()), ("phase", phase.label())];
            out.counter(name, &labels, counts.late[phase as usize]);
        }
    }
    let name = out.header(&catalogue::ACTION_LATENCY);
    for (action, counts) in timed() {
        out.histogram(name, &[("action", action.as_str())], &counts.latency);
    }
    let name = out.header(&catalogue::COMMANDS);
    for (command, n) in &m.commands {
        out.counter(name, &[("command", command.as_str())], *n);
    }
}

/// The run's counters, per phase, and the delivery latency.
fn tallies(out: &mut Exposition, m: &LiveMetrics) {
    for tally in Tally::ALL {
        let name = out.header(tally.family());
        for phase in RunPhase::ALL {
            let n = m.tallies[tally as usize][phase as usize];
            out.counter(name, &[("phase", phase.label())], n);
        }
    }
    let name = out.header(&catalogue::DELIVERY_LATENCY);
    out.histogram(name, &[], &m.delivery);
}

/// The generator's own health, and the reconciliation's progress.
fn generator(out: &mut Exposition, m: &LiveMetrics, cpu_seconds: Option<f64>) {
    let name = out.header(&catalogue::GENERATOR_CPU);
    if let Some(seconds) = cpu_seconds {
        out.sample(&format!("{name}_total"), &[], &float(seconds));
    }
    out.gauge(&catalogue::GENERATOR_CPU_RATIO, m.cpu_ratio);
    let name = out.header(&catalogue::SCHEDULING_LAG);
    out.histogram(name, &[], &m.lag);
    out.gauge(&catalogue::SCHEDULING_LAG_MAX, m.lag_max.as_secs_f64());
    out.gauge(
        &catalogue::RECONCILE_MAILBOXES,
        m.reconcile_mailboxes as f64,
    );
    out.gauge(&catalogue::RECONCILE_SEARCHED, m.reconcile_searched as f64);
}

/// The text being written, in one format.
struct Exposition {
    text: String,
    format: Format,
}

impl Exposition {
    /// `# HELP`, `# TYPE` and (OpenMetrics only) `# UNIT` of a family;
    /// returns the family's name, which its samples are named from.
    fn header(&mut self, family: &'static Family) -> &'static str {
        let (name, kind) = match self.format {
            Format::OpenMetrics => (family.name.to_owned(), family.kind.openmetrics_name()),
            Format::Prometheus => match family.kind {
                Kind::Counter => (format!("{}_total", family.name), "counter"),
                Kind::Info => (format!("{}_info", family.name), "gauge"),
                Kind::StateSet | Kind::Gauge => (family.name.to_owned(), "gauge"),
                Kind::Histogram => (family.name.to_owned(), "histogram"),
            },
        };
        let _ = writeln!(self.text, "# HELP {name} {}", family.help);
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
        if let (Format::OpenMetrics, Some(unit)) = (self.format, family.unit) {
            let _ = writeln!(self.text, "# UNIT {name} {unit}");
        }
        family.name
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                self.text.push_str(label);
                self.text.push_str("=\"");
                escape_into(&mut self.text, value);
                self.text.push('"');
            }
            self.text.push('}');
        }
        self.text.push(' ');
        self.text.push_str(value);
        self.text.push('\n');
    }

    fn counter(&mut self, family: &str, labels: &[(&str, &str)], n: u64) {
        self.sample(&format!("{family}_total"), labels, &n.to_string());
    }

    /// A gauge family with one sample and no labels.
    fn gauge(&mut self, family: &'static Family, value: f64) {
        let name = self.header(family);
        self.sample(name, &[], &float(value));
    }

    /// A counter per `(action, phase, key)` of a map of per-phase counts;
    /// a phase with nothing counted is left out.
    fn keyed_per_phase(
        &mut self,
        family: &str,
        action: &str,
        key_label: &str,
        counts: &std::collections::BTreeMap<String, crate::live::PerPhase>,
    ) {
        for (key, per_phase) in counts {
            for phase in RunPhase::ALL {
                let n = per_phase[phase as usize];
                if n > 0 {
                    let labels = [
                        ("action", action),
                        ("phase", phase.label()),
                        (key_label, key.as_str()),
                    ];
                    self.counter(family, &labels, n);
                }
            }
        }
    }

    fn histogram(&mut self, family: &str, labels: &[(&str, &str)], h: &Histogram) {
        let bucket = format!("{family}_bucket");
        for (bound, n) in h.cumulative() {
            let le = float(bound);
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, &n.to_string());
        }
        self.sample(&format!("{family}_count"), labels, &h.count().to_string());
        self.sample(&format!("{family}_sum"), labels, &float(h.sum_seconds()));
    }
}

/// A number as both formats write it: `+Inf`, `-Inf`, `NaN`, else the
/// shortest decimal that reads back as the same `f64`.
pub(crate) fn float(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

/// A label value with `\`, `"` and line feeds escaped, as both formats want.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        escape_into(&mut out, "a\\b\"c\nd");
        assert_eq!(out, "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn numbers_read_back_exactly() {
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(1.0), "1");
        assert_eq!(float(0.0025), "0.0025");
        assert_eq!(float(f64::NAN), "NaN");
        let x = 0.1 + 0.2;
        assert_eq!(float(x).parse::<f64>().ok(), Some(x));
    }
}
