//! The second step of a command line, through the public API: raw arguments
//! parsed by clap, then checked into settings, with the message a user sees
//! when a value is out of bounds (the binary prints it after `error: ` and
//! exits with code 2).

use std::time::Duration;

use clap::Parser as _;
use peakhour_command_line::args::{Cli, Command, InitArgs, RunArgs, SweepArgs};
use peakhour_command_line::config::{
    EXIT_USAGE, InitConfig, MAX_INIT_PARALLEL, RunConfig, Shape, UsageError,
};

fn parse(argv: &[&str]) -> Result<Command, clap::Error> {
    let argv = std::iter::once("peakhour").chain(argv.iter().copied());
    Cli::try_parse_from(argv).map(|cli| cli.command)
}

fn run_args(extra: &[&str]) -> RunArgs {
    let argv: Vec<&str> = std::iter::once("run")
        .chain(extra.iter().copied())
        .collect();
    match parse(&argv).expect("parses") {
        Command::Run(args) => args,
        other => panic!("not a run: {other:?}"),
    }
}

fn init_args(extra: &[&str]) -> InitArgs {
    let argv: Vec<&str> = std::iter::once("init")
        .chain(extra.iter().copied())
        .collect();
    match parse(&argv).expect("parses") {
        Command::Init(args) => args,
        other => panic!("not an init: {other:?}"),
    }
}

fn run_refusal(extra: &[&str]) -> UsageError {
    RunConfig::check(&run_args(extra)).expect_err("out of bounds")
}

#[test]
fn an_absurd_duration_is_refused_by_the_parser_not_a_panic() {
    for flag in ["--duration", "--ramp-up", "--drain", "--interval"] {
        let error = parse(&["run", flag, "99999999999999999999h"]).expect_err("refused");
        assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
        assert_eq!(error.exit_code(), i32::from(EXIT_USAGE));
        let message = error.to_string();
        assert!(message.contains(flag), "{message}");
        assert!(message.contains("too long to be a duration"), "{message}");
    }
}

#[test]
fn out_of_bounds_values_are_refused_with_the_bounds_a_user_sees() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--interval", "1ms"],
            "--interval 1ms is out of bounds: it must be between 1s and 1h",
        ),
        (
            &["--drain", "9999h"],
            "--drain 9999h is out of bounds: it must be between 0s and 24h",
        ),
        (
            &["--users", "0"],
            "--users 0 is out of bounds: it must be between 1 and 1000000",
        ),
        (
            &["--qos-p95-ms", "NaN"],
            "--qos-p95-ms NaN is out of bounds: it must be a number above 0 and at most 3600000",
        ),
        (
            &["--speed", "1e300"],
            "--speed 1e300 is out of bounds: it must be a number above 0 and at most 100000",
        ),
        (
            &["--duration", "720h", "--interval", "1s"],
            "--duration 720h in intervals of 1s makes 2592000 intervals, more than the 100000 \
             a run may hold: choose a longer --interval",
        ),
        (
            &["--allow-domain", "*.corp.example"],
            "--allow-domain \"*.corp.example\" is not a domain name such as mail.corp.example",
        ),
    ];
    for (argv, expected) in cases {
        assert_eq!(run_refusal(argv).to_string(), *expected, "{argv:?}");
    }
}

#[test]
fn the_bounds_themselves_are_allowed() {
    let config = RunConfig::check(&run_args(&[
        "--duration",
        "1s",
        "--interval",
        "1s",
        "--action-timeout",
        "1h",
        "--ramp-up",
        "24h",
        "--drain",
        "0s",
        "--users",
        "1000000",
        "--qos-p95-ms",
        "3600000",
    ]))
    .expect("every value on a bound");
    assert_eq!(config.users, Some(1_000_000));
    assert_eq!(config.shape.ramp_up, Duration::from_secs(24 * 3600));
    assert_eq!(config.shape.action_timeout, Duration::from_secs(3600));
    assert_eq!(config.shape.qos_p95_ms, Some(3_600_000.0));
}

#[test]
fn init_checks_its_users_and_parallelism() {
    let limit = MAX_INIT_PARALLEL.to_string();
    let config = InitConfig::check(&init_args(&["--parallel", &limit])).expect("on the bound");
    assert_eq!(config.parallel, MAX_INIT_PARALLEL);
    let over = (MAX_INIT_PARALLEL + 1).to_string();
    let error = InitConfig::check(&init_args(&["--parallel", &over])).expect_err("over");
    assert_eq!(
        error.to_string(),
        format!("--parallel {over} is out of bounds: it must be between 1 and {limit}")
    );
    let error = InitConfig::check(&init_args(&["--users", "0"])).expect_err("no users");
    assert!(error.0.starts_with("--users 0 is out of bounds"), "{error}");
}

#[test]
fn every_sweep_step_gets_the_run_shape_checks() {
    let sweep = |extra: &[&str]| -> SweepArgs {
        let mut argv = vec!["sweep", "--users", "10,20"];
        argv.extend_from_slice(extra);
        match parse(&argv).expect("parses") {
            Command::Sweep(args) => args,
            other => panic!("not a sweep: {other:?}"),
        }
    };
    let shape = Shape::check(&sweep(&[]).shape).expect("defaults");
    assert_eq!(shape.duration, Duration::from_secs(120));
    let error = Shape::check(&sweep(&["--action-timeout", "0s"]).shape).expect_err("zero");
    assert!(
        error.0.starts_with("--action-timeout 0s is out of bounds"),
        "{error}"
    );
}
