//! The one number formatter of the reports.
//!
//! Two forms, for two places:
//!
//! - [`short`]: compact, for chart axes, table cells and badges: three
//!   significant digits, `k` from ten thousand, `M` from a million
//!   (`12.5k`, `0.275`, `1.2M`);
//! - [`format_number`]: exact enough to quote in a sentence: thousands
//!   separators from 1000 up, otherwise up to four significant digits
//!   (`12,475,980`, `82.85`). It is the analysis crate's, so that the
//!   capacity sentences written there and the figures beside them here read
//!   the same.

pub use peakhour_analysis::capacity::{format_number, group_thousands};

/// A compact number: 3 significant digits, thousands as `k`, millions as `M`.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(12.25), "12.2");
        assert_eq!(short(0.2754), "0.275");
        assert_eq!(short(12_500.0), "12.5k");
        assert_eq!(short(155_360.5), "155k");
        assert_eq!(short(1_250_000.0), "1.25M");
    }

    #[test]
    fn sentence_numbers() {
        assert_eq!(format_number(12_475_980.0), "12,475,980");
        assert_eq!(format_number(56.0), "56");
        assert_eq!(format_number(82.84582), "82.85");
        assert_eq!(format_number(0.0277), "0.0277");
    }
}
