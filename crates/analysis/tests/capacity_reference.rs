//! The capacity analysis against published figures:
//!
//! - the USL fit against the R package usl 3.0.3's own regression outputs
//!   (`tests/*.Rout.save` in <https://github.com/smoeding/usl>, commit
//!   480c97b), on its datasets `specsdm91` and `raytracer` (see
//!   `fixtures/usl/README.md`), to three significant digits;
//! - peak, shape and knee against Mindcraft's reading of its NetBench tables
//!   (seed 004, "NetBench Configuration and Results").

#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

use peakhour_analysis::capacity::{
    CapacityAnalysis, CapacityOptions, CurvePoint, Transition, UslFit, fit_usl,
};

/// Parses a fixture: `#` comment lines, a header, then `x,y` rows.
fn fixture(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .skip(1)
        .map(|l| {
            let (x, y) = l.split_once(',').unwrap();
            (x.trim().parse().unwrap(), y.trim().parse().unwrap())
        })
        .collect()
}

fn specsdm91() -> Vec<(f64, f64)> {
    fixture(include_str!("fixtures/usl/specsdm91.csv"))
}

fn raytracer() -> Vec<(f64, f64)> {
    fixture(include_str!("fixtures/usl/raytracer.csv"))
}

/// `x` rounded to `digits` significant digits, like R's `signif`. Compare a
/// published figure at no more digits than it was printed with.
fn signif(x: f64, digits: i32) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    let factor = 10_f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * factor).round() / factor
}

#[track_caller]
fn assert_sig(actual: f64, published: f64, digits: i32) {
    let (a, p) = (signif(actual, digits), signif(published, digits));
    assert!(
        (a - p).abs() <= 1e-9 * p.abs().max(1e-300),
        "{actual} is {a} to {digits} significant digits; published {published} ({p})"
    );
}

#[track_caller]
fn assert_rel(actual: f64, published: f64, tolerance: f64) {
    assert!(
        ((actual - published) / published).abs() <= tolerance,
        "{actual} vs published {published}: relative difference above {tolerance}"
    );
}

/// R usl's `confint`: coefficient ± std.err × qt(level, n − 1). (Sic: the
/// package uses the one-sided quantile and n − 1 degrees of freedom; we
/// reproduce its printed figures, not endorse them.) qt(0.95, 5) from R.
const QT_095_DF5: f64 = 2.015_048_372_669_157;

#[test]
fn specsdm91_matches_r_usl_summary() {
    let fit = fit_usl(&specsdm91()).unwrap();
    // tests/summary.Rout.save
    assert_sig(fit.alpha, 2.773e-02, 3);
    assert_sig(fit.beta, 1.044e-04, 3);
    assert_sig(fit.gamma, 9.000e+01, 3);
    let se = fit.std_errors.unwrap();
    assert_sig(se.alpha, 9.122e-03, 3);
    assert_sig(se.beta, 1.988e-05, 3);
    assert_sig(se.gamma, 1.421e+01, 3);
    assert_eq!(fit.degrees_of_freedom, 4);
    // tests/sigma.Rout.save: signif(sigma(u), 3) is 82.8.
    assert_sig(fit.residual_std_error.unwrap(), 82.8, 3);
    // The summary prints 4 digits; we match those too.
    assert_sig(fit.alpha, 2.773e-02, 4);
    assert_sig(fit.beta, 1.044e-04, 4);
    assert_sig(fit.residual_std_error.unwrap(), 82.85, 4);
    // tests/peak-, optimal- and limit-scalability.Rout.save use
    // all.equal(..., tolerance = 1e-4).
    assert_rel(fit.n_max.unwrap(), 96.51956, 1e-4);
    assert_rel(fit.n_opt.unwrap(), 36.06401, 1e-4);
    assert_rel(fit.x_lim.unwrap(), 3245.589, 1e-4);
    // "peak: throughput 1884 at load 96.52"
    assert_sig(fit.x_max.unwrap(), 1884.0, 4);
    assert!(fit.warnings.is_empty(), "{:?}", fit.warnings);
    assert!(fit.converged);
}

#[test]
fn specsdm91_fitted_values_and_residuals_match_r_usl() {
    let data = specsdm91();
    let fit = fit_usl(&data).unwrap();
    // tests/fitted.Rout.save (digits = 3)
    for ((n, _), published) in data
        .iter()
        .zip([90.0, 1078.0, 1541.0, 1850.0, 1879.0, 1822.0, 1646.0])
    {
        assert_rel(fit.predict(*n), published, 0.5 / published.max(100.0));
    }
    // tests/residuals.Rout.save
    for ((n, y), published) in data
        .iter()
        .zip([-25.10, -81.66, 111.09, 3.05, -49.99, -46.60, 56.00])
    {
        assert_sig(y - fit.predict(*n), published, 3);
    }
}

#[test]
fn raytracer_first_six_match_r_usl_confint() {
    let fit = fit_usl(&raytracer()[..6]).unwrap();
    // tests/confint.Rout.save: coef(u)
    assert_sig(fit.alpha, 0.02444, 3);
    assert_sig(fit.beta, 0.00163, 3);
    assert_sig(fit.gamma, 20.85605, 3);
    // R prints gamma to 7 significant digits here.
    assert_sig(fit.gamma, 20.85605, 7);
    // confint(u): 2.5 % and 97.5 % columns.
    let se = fit.std_errors.unwrap();
    let ci = |value: f64, se: f64| (value - se * QT_095_DF5, value + se * QT_095_DF5);
    let (lo, hi) = ci(fit.alpha, se.alpha);
    assert_sig(lo, 0.00754, 3);
    assert_sig(hi, 0.04135, 3);
    let (lo, hi) = ci(fit.beta, se.beta);
    assert_sig(lo, 0.00110, 3);
    assert_sig(hi, 0.00215, 3);
    let (lo, hi) = ci(fit.gamma, se.gamma);
    assert_sig(lo, 19.26717, 6);
    assert_sig(hi, 22.44492, 6);
}

#[test]
fn raytracer_first_five_warn_and_match_r_usl() {
    let fit = fit_usl(&raytracer()[..5]).unwrap();
    // tests/warn-accuracy.Rout.save: a warning, and (digits = 1, so R prints
    // 3 decimals) alpha 0.028, beta 0.001, gamma 21.059.
    assert!(
        fit.warnings.iter().any(|w| w.contains("only 5 points")),
        "{:?}",
        fit.warnings
    );
    assert!((fit.alpha - 0.028).abs() <= 0.0005, "{}", fit.alpha);
    assert!((fit.beta - 0.001).abs() <= 0.0005, "{}", fit.beta);
    assert!((fit.gamma - 21.059).abs() <= 0.0005, "{}", fit.gamma);
}

#[test]
fn synthetic_table_matches_r_usl_coef() {
    // tests/coef.Rout.save and tests/usl-nls.Rout.save
    let data = [
        (1.0, 1.0),
        (2.0, 1.8868),
        (4.0, 3.0769),
        (6.0, 3.5294),
        (8.0, 3.5398),
        (10.0, 3.3557),
    ];
    let fit = fit_usl(&data).unwrap();
    assert_sig(fit.alpha, 0.02, 3);
    assert_sig(fit.beta, 0.02, 3);
    assert_sig(fit.gamma, 1.00, 3);
}

#[test]
fn full_raytracer_fit_is_the_least_squares_minimum() {
    // No published output for all 11 points; check first-order optimality
    // instead: no coordinate move lowers the SSE.
    let data = raytracer();
    let fit = fit_usl(&data).unwrap();
    let sse = |f: &UslFit| {
        data.iter()
            .map(|(n, y)| (y - f.predict(*n)).powi(2))
            .sum::<f64>()
    };
    let best = sse(&fit);
    assert!((best - fit.sse).abs() <= 1e-9 * best);
    for j in 0..3 {
        for sign in [-1.0, 1.0] {
            let mut moved = fit.clone();
            let p = [&mut moved.alpha, &mut moved.beta, &mut moved.gamma];
            let v = p.into_iter().nth(j).unwrap();
            *v = (*v * (1.0 + sign * 1e-4) + sign * 1e-9)
                .clamp(0.0, if j == 2 { f64::MAX } else { 1.0 });
            assert!(
                sse(&moved) >= best * (1.0 - 1e-12),
                "coefficient {j} moved {sign}"
            );
        }
    }
}

/// Seed 004, Appendix: NetBench 5.01 "Total Throughput (bytes/sec)" per
/// "Clients Participating" (1, 8, 16 ... 72).
const CLIENTS: [f64; 10] = [1.0, 8.0, 16.0, 24.0, 32.0, 40.0, 48.0, 56.0, 64.0, 72.0];
const NT_ONE: [f64; 10] = [
    480_154.0,
    3_757_741.0,
    7_206_831.0,
    9_436_741.0,
    11_584_102.0,
    12_100_342.0,
    12_303_331.0,
    12_475_980.0,
    12_054_814.0,
    11_510_079.0,
];
const NT_TWO: [f64; 10] = [
    481_333.0,
    3_767_163.0,
    7_261_316.0,
    10_285_091.0,
    12_946_213.0,
    14_331_940.0,
    15_125_577.0,
    15_928_040.0,
    15_821_999.0,
    15_648_458.0,
];
const IW_ONE: [f64; 10] = [
    501_639.0,
    3_964_508.0,
    7_658_403.0,
    9_597_453.0,
    10_994_043.0,
    10_608_408.0,
    10_956_236.0,
    10_747_647.0,
    10_435_372.0,
    10_217_225.0,
];
const IW_TWO: [f64; 10] = [
    499_475.0,
    3_885_759.0,
    7_641_611.0,
    10_746_267.0,
    12_405_177.0,
    14_300_491.0,
    14_748_965.0,
    14_976_923.0,
    14_353_086.0,
    13_724_784.0,
];

fn netbench(throughput: &[f64; 10]) -> CapacityAnalysis {
    let points: Vec<CurvePoint> = CLIENTS
        .iter()
        .zip(throughput)
        .map(|(&load, &throughput)| CurvePoint {
            load,
            throughput,
            p95_ms: None,
        })
        .collect();
    CapacityAnalysis::compute(&points, &CapacityOptions::default()).unwrap()
}

#[test]
fn seed_004_peaks_shapes_and_knees() {
    // "Windows NT Server peak performance was 95.2 Mbits/second ... at 56 test systems"
    let nt1 = netbench(&NT_ONE);
    assert_eq!((nt1.peak.load, nt1.peak.throughput), (56.0, 12_475_980.0));
    assert_eq!(nt1.shape.approach, Some(Transition::Gradual));
    assert_eq!(nt1.shape.fall, Some(Transition::Gradual));
    assert_eq!(nt1.shape.statement, "falls 7.7% by 72");
    assert_eq!(nt1.knee.as_ref().unwrap().load, 32.0);
    assert!(nt1.usl.is_some());

    // "Windows NT Server continues to perform within 1.8% of its peak out to 72"
    let nt2 = netbench(&NT_TWO);
    assert_eq!((nt2.peak.load, nt2.peak.throughput), (56.0, 15_928_040.0));
    assert_eq!(nt2.shape.statement, "stays within 1.8% of peak out to 72");
    assert!(nt2.shape.plateau);
    assert_eq!(nt2.shape.approach, Some(Transition::Gradual));

    // "IntranetWare reached its peak at 32 test systems ... abruptly reaches its
    // peak and performance slowly degrades after that"
    let iw1 = netbench(&IW_ONE);
    assert_eq!((iw1.peak.load, iw1.peak.throughput), (32.0, 10_994_043.0));
    assert_eq!(iw1.shape.approach, Some(Transition::Abrupt));
    assert_eq!(iw1.shape.fall, Some(Transition::Gradual));

    // "IntranetWare performance grows smoothly to its peak at 56 test systems
    // and then declines at faster rate"
    let iw2 = netbench(&IW_TWO);
    assert_eq!((iw2.peak.load, iw2.peak.throughput), (56.0, 14_976_923.0));
    assert_eq!(iw2.shape.approach, Some(Transition::Gradual));
    assert!(iw2.shape.fall_ratio.unwrap() > nt2.shape.fall_ratio.unwrap() * 3.0);
    assert!(iw2.shape.fall_ratio.unwrap() > nt1.shape.fall_ratio.unwrap());
    assert!(iw2.shape.fall_ratio.unwrap() > iw1.shape.fall_ratio.unwrap());
}
