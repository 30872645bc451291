//! The day's shape (issue 25, item 1): the peak hour's rates, the morning's logon
//! schedule, and the profile errors of `[day_shape]`.

use std::time::Duration;

use peakhour_workload::{ActionKind, Overrides, Plan, PlanError, Profile, Window, builtin};

fn mmb_source() -> &'static str {
    builtin("mmb-medium").expect("built in").source
}

fn mmb() -> Profile {
    Profile::parse("mmb-medium.toml", mmb_source()).expect("parses")
}

fn plan(window: Window, users: u32, speed: Option<f64>) -> Result<Plan, PlanError> {
    Plan::resolve(
        &mmb(),
        &Overrides {
            users: Some(users),
            speed,
            seed: Some(25),
            window,
            ..Overrides::default()
        },
    )
}

/// The day's actions of mmb-medium per user (seed 002, Table 3), from the plan itself.
fn day_actions(plan: &Plan) -> f64 {
    plan.rates().iter().map(|r| r.per_day).sum()
}

#[test]
fn issue_25_item_1_the_peak_hour_drives_the_day_rates_times_the_peak_factor() {
    let day = plan(Window::Day, 10, None).expect("day");
    let peak = plan(Window::PeakHour, 10, None).expect("peak hour");
    let factor = peak
        .day_shape()
        .expect("mmb-medium has a day shape")
        .peak_factor;
    assert!(
        factor > 1.0,
        "the peak hour is busier than the average hour"
    );
    for (d, p) in day.rates().iter().zip(peak.rates()) {
        assert_eq!(d.kind, p.kind);
        assert_eq!(d.per_day, p.per_day);
        assert!((p.per_second - d.per_second * factor).abs() < 1e-15);
        // The even day is unchanged: per_day over the day's seconds.
        assert!((d.per_second - d.per_day / day.day().as_secs_f64()).abs() < 1e-15);
    }
    // The busiest hour holds factor / day-in-hours of the day's actions.
    let hours = peak.day().as_secs_f64() / 3600.0;
    let expected = day_actions(&peak) * factor / hours;
    let per_user_hour = peak.peak_actions_per_user_hour().expect("poisson");
    assert!((per_user_hour - expected).abs() < 1e-9);
    assert!((peak.actions_per_user_hour().expect("poisson") - expected).abs() < 1e-9);
    // Day compression multiplies what the run drives, not the profile's peak.
    let compressed = plan(Window::PeakHour, 10, Some(16.0)).expect("peak hour at speed 16");
    assert!((compressed.peak_actions_per_user_hour().unwrap() - expected).abs() < 1e-9);
    assert!((compressed.actions_per_user_hour().unwrap() - 16.0 * expected).abs() < 1e-6);
}

#[test]
fn issue_25_item_1_a_peak_hour_schedule_arrives_at_the_peak_rate() {
    let users = 50;
    let peak = plan(Window::PeakHour, users, None).expect("peak hour");
    let horizon = Duration::from_secs(10 * 3600);
    let count: u64 = (0..users)
        .map(|u| peak.schedule(u).take_while(|a| a.at < horizon).count() as u64)
        .sum();
    let expected = f64::from(users) * peak.actions_per_user_hour().unwrap() * 10.0;
    // A sum of Poisson counts is Poisson: its standard deviation is sqrt(mean).
    let bound = 5.0 * expected.sqrt();
    assert!(
        (count as f64 - expected).abs() < bound,
        "{count} actions, expected {expected:.0} ± {bound:.0}"
    );
}

#[test]
fn issue_25_item_1_the_morning_logs_users_on_at_the_logon_rate_and_starts_with_the_first_actions() {
    let users = 40;
    let morning = plan(Window::Morning, users, None).expect("morning");
    let shape = morning.day_shape().expect("day shape").clone();
    let rate = f64::from(users) * shape.logon_share / shape.logon_within.0.as_secs_f64();
    assert!((morning.logons_per_second().unwrap() - rate).abs() < 1e-12);
    // One logon every 1/rate seconds, from the measured phase's start.
    for user in [0, 1, 17, users - 1] {
        let at = morning.logon_offset(user, Duration::from_secs(999));
        assert!((at.as_secs_f64() - f64::from(user) / rate).abs() < 1e-6);
    }
    // Nothing before the measurement; the storm, then the window's length.
    let length = Duration::from_secs(600);
    let (ramp, measured) = morning.window_phases(Duration::from_secs(20), length);
    assert_eq!(ramp, Duration::ZERO);
    let storm = f64::from(users) / rate;
    assert!((measured.as_secs_f64() - storm - 600.0).abs() < 1e-6);
    // Every user begins at its logon with the first actions, in order, then
    // its Poisson arrivals, never earlier.
    assert!(!shape.first_actions.is_empty());
    for user in [0, 5, users - 1] {
        let logon = morning.logon_offset(user, Duration::ZERO);
        let schedule: Vec<_> = morning.schedule(user).take(200).collect();
        let first: Vec<ActionKind> = schedule[..shape.first_actions.len()]
            .iter()
            .map(|a| a.kind)
            .collect();
        assert_eq!(first, shape.first_actions);
        assert!(schedule.iter().all(|a| a.at >= logon));
        assert!(schedule.windows(2).all(|w| w[0].at <= w[1].at));
        // The n-th of each kind is numbered across the first actions and the arrivals.
        for kind in [ActionKind::CheckInbox, ActionKind::Read] {
            let nths: Vec<u64> = schedule
                .iter()
                .filter(|a| a.kind == kind)
                .map(|a| a.nth)
                .collect();
            assert!(nths.iter().enumerate().all(|(i, n)| *n == i as u64));
        }
    }
    // Other windows are not shifted: the day's logons go over the ramp-up.
    let day = plan(Window::Day, users, None).expect("day");
    assert_eq!(
        day.logon_offset(10, Duration::from_secs(40)),
        Duration::from_secs(10)
    );
    assert_eq!(
        day.window_phases(Duration::from_secs(20), length),
        (Duration::from_secs(20), length)
    );
}

#[test]
fn issue_25_item_1_windows_the_profile_cannot_give_are_refused_with_the_reason() {
    let error = plan(Window::Morning, 10, Some(4.0)).expect_err("compressed morning");
    assert!(
        error
            .to_string()
            .starts_with("--speed: 4 with --window morning"),
        "{error}"
    );
    // A compressed peak hour is allowed: docs/capacity.md says what it stands for.
    assert!(plan(Window::PeakHour, 10, Some(4.0)).is_ok());
    let groupwise = builtin("groupwise-20x3").unwrap().profile().unwrap();
    let fixed = Plan::resolve(
        &groupwise,
        &Overrides {
            window: Window::PeakHour,
            ..Overrides::default()
        },
    )
    .expect_err("fixed mode");
    assert!(fixed.to_string().contains("mode = \"poisson\""), "{fixed}");
    let start = mmb_source().find("\n[day_shape]").unwrap();
    let end = mmb_source().find("\n[qos]").unwrap();
    let shapeless = format!("{}{}", &mmb_source()[..start], &mmb_source()[end..]);
    let profile = Profile::parse("plain.toml", &shapeless).expect("parses without a shape");
    let none = Plan::resolve(
        &profile,
        &Overrides {
            window: Window::Morning,
            ..Overrides::default()
        },
    )
    .expect_err("no day shape");
    assert!(none.to_string().contains("has none: add one"), "{none}");
    // Without a window, a profile without a shape runs as before.
    assert!(Plan::resolve(&profile, &Overrides::default()).is_ok());
}

#[test]
fn issue_25_item_1_malformed_day_shape_values_name_file_line_column_and_field() {
    let cases = [
        (
            "peak_factor = 2.0",
            "peak_factor = 0.5",
            "day_shape.peak_factor",
            "must be between 1",
        ),
        (
            "peak_factor = 2.0",
            "peak_factor = 9.0",
            "day_shape.peak_factor",
            "8 hours",
        ),
        (
            "connected_at_peak = 1.0",
            "connected_at_peak = 1.5",
            "day_shape.connected_at_peak",
            "at most 1 (got 1.5)",
        ),
        (
            "connections_per_user = 1",
            "connections_per_user = 0",
            "day_shape.connections_per_user",
            "between 1 and 64 (got 0)",
        ),
        (
            "logon_share = 0.8",
            "logon_share = 0",
            "day_shape.morning.logon_share",
            "above 0",
        ),
        (
            "logon_within = \"30m\"",
            "logon_within = \"0s\"",
            "day_shape.morning.logon_within",
            "between 1s",
        ),
        (
            "first_actions = [\"check_inbox\", \"read\"]",
            "first_actions = [\"check_inbox\", \"poll_calendar\"]",
            "day_shape.morning.first_actions",
            "`poll_calendar` is not one of the profile's [actions]",
        ),
        (
            "first_actions = [\"check_inbox\", \"read\"]",
            "first_actions = [\"check_inbox\", \"reed\"]",
            "day_shape.morning.first_actions[1]",
            "unknown variant `reed`",
        ),
        (
            "peak_factor = 2.0",
            "peak_factor = 2.0\npeak_hour = 3",
            "day_shape.peak_hour",
            "unknown field",
        ),
    ];
    for (good, bad, field, message) in cases {
        assert!(mmb_source().contains(good), "{good}");
        let source = mmb_source().replacen(good, bad, 1);
        let error = Profile::parse("shape.toml", &source).expect_err(bad);
        let text = error.to_string();
        // The line and column of the offending value (the last line of `bad`),
        // as every profile error.
        let at = source.find(bad).unwrap() + bad.rfind('\n').map_or(0, |i| i + 1);
        let line = source[..at].lines().count() + 1;
        assert!(
            text.starts_with(&format!("shape.toml:{line}:")),
            "{bad}: {text} (expected line {line})"
        );
        assert!(text.contains(&format!("field `{field}`")), "{bad}: {text}");
        assert!(text.contains(message), "{bad}: {text}");
    }
}

#[test]
fn issue_25_item_1_the_resolved_plan_records_the_window_and_reads_back() {
    let peak = plan(Window::PeakHour, 10, None).expect("peak hour");
    let text = peak.to_toml().expect("toml");
    assert!(text.contains("window = \"peak-hour\""), "{text}");
    assert!(text.contains("peak_actions_per_user_hour = "), "{text}");
    // The effective profile keeps its day shape, and parses back to the same rates.
    let again = Profile::parse("again.toml", &peak.profile().to_toml().unwrap()).unwrap();
    let replan = Plan::resolve(
        &again,
        &Overrides {
            users: Some(10),
            seed: Some(25),
            window: Window::PeakHour,
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(replan.rates(), peak.rates());
}
