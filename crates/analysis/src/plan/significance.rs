//! Which measured figures the plan may use as sizing numbers
//! (docs/planner.md, "What is significant").
//!
//! Every cost peakhour measures comes with its standard error. A figure
//! whose ±1 standard error reaches its value cannot be told from zero by the
//! measurement: printing it as "0 ± 55,492 KiB" or sizing a server from it
//! passes noise off as a number. The rule is the simplest honest one: a
//! figure is **significant** when it is above zero and above its standard
//! error (a z of 1: about a one-in-six chance that a true zero reads that
//! high). It is deliberately lenient, because the errors are already
//! under-stated (successive monitor samples are correlated); what it
//! removes is the figure the measurement cannot vouch for at all. Both are
//! compared as people read them, at three significant digits and no more
//! than six decimals (the reports' form): a figure a hair above its error
//! would otherwise be printed as "17.1 ± 17.1" or "0.000035 ± 0.000035".

use serde::{Deserialize, Serialize};

use super::MemoryFit;

/// Whether a figure stands above its own uncertainty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Significance {
    /// Above zero and above its ±1 standard error: a sizing number.
    Significant,
    /// At or below zero, or within its ±1 standard error of zero: "not
    /// significant" (below what the measurement can see). The number stays
    /// in the JSON; the outputs people read do not print it as a figure.
    #[default]
    NotSignificant,
}

impl Significance {
    /// `value` with standard error `sd`, judged by the rule above.
    pub fn of(value: f64, sd: f64) -> Self {
        if value.is_finite() && sd.is_finite() && value > 0.0 && as_printed(value) > as_printed(sd)
        {
            Significance::Significant
        } else {
            Significance::NotSignificant
        }
    }

    /// True for [`Significance::Significant`].
    pub fn is_significant(self) -> bool {
        self == Significance::Significant
    }
}

/// `x` rounded as the reports print figures (`peakhour_report`'s
/// `grouped`): three significant digits, at most six decimals.
fn as_printed(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let decimals = (2.0 - x.abs().log10().floor()).min(6.0);
    let step = 10f64.powf(-decimals);
    (x / step).round() * step
}

/// The coefficient of determination below which a memory fit is not used
/// for sizing. Below 0.5 the session count explains less than half of how
/// the memory points vary. With the three points `peakhour tasks` measures
/// (0, half and all of its sessions) that is exactly where the slope falls
/// within one standard error of zero (t² = R² (n − 2) / (1 − R²) = 1), so
/// the threshold is the significance rule above, stated for the fit; with
/// more points it is the stricter of the two.
pub const MIN_MEMORY_R_SQUARED: f64 = 0.5;

/// Whether a memory fit may size memory, and if not, why and what would
/// make it usable.
pub fn memory_fit_verdict(fit: &MemoryFit) -> Result<(), String> {
    let largest = fit.points.iter().map(|p| p.sessions).fold(0.0, f64::max);
    let cure = format!(
        "measure memory at session counts that span the plan (peakhour tasks --sessions, now {largest} at most)"
    );
    // A NaN R² (no variance at all) is no fit either.
    if fit.r_squared.is_nan() || fit.r_squared < MIN_MEMORY_R_SQUARED {
        return Err(format!(
            "memory per session is not used: its fit over {} points up to {largest} sessions has R² {:.2} (below {MIN_MEMORY_R_SQUARED}): the session count explains too little of the memory; {cure}",
            fit.points.len(),
            fit.r_squared
        ));
    }
    if !Significance::of(fit.per_session_bytes, fit.per_session_sd_bytes).is_significant() {
        return Err(format!(
            "memory per session is not used: {:.0} ± {:.0} bytes is within its standard error of zero; {cure}",
            fit.per_session_bytes, fit.per_session_sd_bytes
        ));
    }
    Ok(())
}

/// A plan for more users than this many times the largest measured point
/// says so in its headline: a line measured from 0 to n and used at 3n
/// already rests more on the straight-line assumption than on measurement.
pub const EXTRAPOLATION_FACTOR: f64 = 3.0;

/// How far a plan reaches beyond what was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extrapolation {
    /// The most sessions the tasks held open at once (the memory fit's
    /// largest point, or the largest workstation count without one).
    pub largest_measured_sessions: f64,
    /// Sessions at the plan's largest user count.
    pub planned_sessions: f64,
    /// `planned_sessions / largest_measured_sessions`.
    pub factor: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_25_item_5_a_figure_within_its_standard_error_is_not_significant() {
        assert_eq!(
            Significance::of(0.0, 55_492.0),
            Significance::NotSignificant
        );
        assert_eq!(Significance::of(3.0, 3.0), Significance::NotSignificant);
        assert_eq!(Significance::of(-1.0, 0.0), Significance::NotSignificant);
        assert_eq!(
            Significance::of(f64::NAN, 0.0),
            Significance::NotSignificant
        );
        assert_eq!(Significance::of(3.1, 3.0), Significance::Significant);
        // An exact counter (no error) above zero is a figure.
        assert_eq!(Significance::of(2.0, 0.0), Significance::Significant);
    }

    #[test]
    fn issue_25_item_5_a_figure_that_would_print_as_its_own_error_is_not_significant() {
        use Significance::{NotSignificant, Significant};
        for (value, sd, verdict) in [
            // Seen in plans: "disk KiB/s 17.1 ± 17.1", "cores 0.000035 ± 0.000035".
            (17.13, 17.08, NotSignificant),
            (17.2, 17.1, Significant),
            (0.001_234_4, 0.001_233_6, NotSignificant),
            (0.001_25, 0.001_23, Significant),
            // Below 0.0001 the reports print six decimals, fewer than three digits.
            (0.000_035_4, 0.000_034_6, NotSignificant),
            (0.000_037, 0.000_035, Significant),
        ] {
            assert_eq!(Significance::of(value, sd), verdict, "{value} ± {sd}");
        }
    }
}

/// The significance of each figure of a resource-use line
/// ([`PerUserDemand`](super::PerUserDemand) or a [`PlanRow`](super::PlanRow)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Significances {
    /// CPU, cores.
    pub cpu_cores: Significance,
    /// Memory (`None` without a memory model).
    pub memory_bytes: Option<Significance>,
    /// Storage requests per second (an exact counter: significant when above 0).
    pub disk_iops: Significance,
    /// Storage throughput.
    pub disk_kib_per_s: Significance,
    /// Network throughput.
    pub net_kib_per_s: Significance,
}

impl Significances {
    /// Judges each figure, given as (value, ±1 sd), of a resource-use line.
    /// Memory is significant only when its model is used (`memory_used`);
    /// storage requests are an exact counter.
    pub(crate) fn judge(
        cpu_cores: (f64, f64),
        memory_bytes: Option<(f64, f64)>,
        memory_used: bool,
        disk_iops: f64,
        disk_kib_per_s: (f64, f64),
        net_kib_per_s: (f64, f64),
    ) -> Self {
        Self {
            cpu_cores: Significance::of(cpu_cores.0, cpu_cores.1),
            memory_bytes: memory_bytes.map(|(value, sd)| {
                if memory_used {
                    Significance::of(value, sd)
                } else {
                    Significance::NotSignificant
                }
            }),
            disk_iops: Significance::of(disk_iops, 0.0),
            disk_kib_per_s: Significance::of(disk_kib_per_s.0, disk_kib_per_s.1),
            net_kib_per_s: Significance::of(net_kib_per_s.0, net_kib_per_s.1),
        }
    }
}
