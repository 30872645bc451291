//! `peakhour capacity`: the one command that answers peakhour's question.

use std::path::PathBuf;

use clap::Args;

use super::parse_duration;
use super::{ProfileArg, TargetArgs};

/// `--after-help` of `capacity`: what it does, in the order it does it.
pub(super) const CAPACITY_EXAMPLES: &str = "\
How it answers (docs/capacity.md):
  Each step holds N real users' sessions (no day compression) and drives N users'
  peak-hour actions, then the morning's logon storm, and judges both windows by the
  one QoS rule (the weighted p95 within the profile's limit, actions with limits of
  their own within them, errors within the ceiling, no queue or memory still growing).
  The first step is the planner's prediction (--model) or --first-users; then the
  steps double while they pass, halve while they fail, and bisect until the bracket
  [users_low, users_high] is no wider than 10% of the answer, or the budget is spent.
  On the lab, steps grow the lab's users and fill their mailboxes as they need.

Examples:
  peakhour lab up
  peakhour capacity --profile mmb-medium --target lab --budget 2h --out runs/capacity
  peakhour capacity --out runs/capacity --json      # interrupted? the same command resumes
  peakhour capacity --target explicit --imap imaps://mail.example --smtp submissions://mail.example \\
      --users-file users.csv --model runs/plan/plan.json

Exit code 0 when it answered (answer.json, answer.html in --out), 1 when a step could
not run, 2 for bad usage, 130 when interrupted (run it again to resume).";

/// `peakhour capacity`
#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// The workload profile; it needs a `[day_shape]` (the built-in mail profiles have one).
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The server and its users.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The longest the whole search may take; a step that would not fit is not started.
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = parse_duration)]
    pub budget: std::time::Duration,
    /// The output directory: one run directory per step and window, capacity-state.json
    /// (what a resumed search keeps), answer.json and answer.html. Run the same command
    /// with the same --out to resume an interrupted search without repeating its steps.
    #[arg(long, value_name = "DIR", default_value = "runs/capacity")]
    pub out: PathBuf,
    /// Print answer.json on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    /// The windows each step measures, in order; a step passes only if every one holds QoS.
    #[arg(
        long,
        value_name = "W,W",
        value_delimiter = ',',
        default_value = "peak-hour,morning"
    )]
    pub windows: Vec<String>,
    /// The measured part of each window (the peak hour's steady phase; the morning's first
    /// hour after its logon storm) [default: run's, 10m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Users log on staggered over this long before the peak hour is measured.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub ramp_up: std::time::Duration,
    /// After each window: time for in-flight actions and deliveries.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub drain: std::time::Duration,
    /// The first step's users when there is no model.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub first_users: u32,
    /// The largest step: the search says "at least N" rather than go beyond it (this
    /// generator's limits, or how far you care to know) [default: no limit on the lab; the
    /// users file's size on an explicit target].
    #[arg(long, value_name = "N")]
    pub max_users: Option<u32>,
    /// The planner's prediction as the first step: a plan.json from `peakhour plan`
    /// (its users at QoS, else where its first resource runs out).
    #[arg(long, value_name = "PLAN_JSON")]
    pub model: Option<PathBuf>,
    /// The bracket's largest width, as a share of the answer.
    #[arg(long, value_name = "RATIO", default_value_t = 0.10)]
    pub precision: f64,
    /// QoS: the weighted p95's limit in ms (default: the profile's, 1000 for MMB).
    #[arg(long, value_name = "MS")]
    pub qos_p95_ms: Option<f64>,
    /// Seed for every step and for init (recorded).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}
