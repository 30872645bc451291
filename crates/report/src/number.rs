//! The one number formatter of the reports.
//!
//! Four forms, for four places, each with its dash for no value:
//!
//! - [`short`]: compact, for chart axes, HTML table cells and badges: three
//!   significant digits, `k` from ten thousand, `M` from a million
//!   (`12.5k`, `0.275`, `1.2M`);
//! - [`plain`]: for the terminal's tables, where columns are wide enough:
//!   three significant digits below 100, whole numbers above, never a
//!   suffix (`374769`, `10.5`, `0.123`);
//! - [`grouped`]: for the plan's sizing tables: three significant digits
//!   below 1000, whole and grouped above (`12,345`);
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

/// A number for a terminal table: three significant digits below 100, whole
/// numbers above, without a pointless `.0`.
pub fn plain(v: f64) -> String {
    trim(v)
}

/// A number for a sizing table: three significant digits below 1000, whole
/// and grouped above (`12,345`), no trailing zeros; `–` for a value that is
/// not finite.
pub fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return DASH.to_owned();
    }
    if v.abs() >= 1000.0 {
        return group_thousands(v);
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The dash of HTML pages and sizing tables for a value that is missing.
pub const DASH: &str = "–";

/// `format(v)`, or `dash` when there is no value.
pub fn or_dash(v: Option<f64>, format: fn(f64) -> String, dash: &str) -> String {
    v.map_or_else(|| dash.to_owned(), format)
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
    fn plain_numbers() {
        assert_eq!(plain(374_769.4), "374769");
        assert_eq!(plain(10.5), "10.5");
        assert_eq!(plain(5.57), "5.57");
        assert_eq!(plain(0.1234), "0.123");
        assert_eq!(plain(0.0), "0");
    }

    #[test]
    fn grouped_numbers() {
        assert_eq!(grouped(12_345.4), "12,345");
        assert_eq!(grouped(-1_234.0), "-1,234");
        assert_eq!(grouped(123.4), "123");
        assert_eq!(grouped(12.34), "12.3");
        assert_eq!(grouped(0.012_34), "0.0123");
        assert_eq!(grouped(f64::NAN), "–");
        assert_eq!(or_dash(None, grouped, DASH), "–");
        assert_eq!(or_dash(Some(2.0), plain, "-"), "2");
    }

    #[test]
    fn sentence_numbers() {
        assert_eq!(format_number(12_475_980.0), "12,475,980");
        assert_eq!(format_number(56.0), "56");
        assert_eq!(format_number(82.84582), "82.85");
        assert_eq!(format_number(0.0277), "0.0277");
    }
}
