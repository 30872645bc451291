//! Prints, for each user of a run of USERS, the first run seed at which that
//! user's Thunderbird warm-start draw (where its folder sweep meets Sent and
//! the move target) is like the recording's: what `scripts/record/scripted.py`
//! runs each Thunderbird user's shard with, so that its extra connections
//! fall in the windows the recording has them in (docs/clients.md, "The same
//! position in the session").
//!
//! ```sh
//! cargo run --example thunderbird_draws -- PROFILE.toml USERS [MOVE_SEQ]
//! ```
//!
//! One line per user: `user seed sent_at target target_at folders`.

use std::process::ExitCode;

use peakhour_engine::{draw_like_recording, thunderbird_start_draw};
use peakhour_workload::{Overrides, Personality, Plan, Profile};

/// Seeds tried before giving up: the recording-like draws are about 1 in 150.
const MAX_TRIES: u64 = 1_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(users)) = (
        args.first(),
        args.get(1).and_then(|c| c.parse::<u32>().ok()),
    ) else {
        eprintln!("usage: thunderbird_draws PROFILE.toml USERS [MOVE_SEQ]");
        return ExitCode::from(2);
    };
    let move_seq = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let profile = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|src| Profile::parse(path, &src).map_err(|e| e.to_string()))
    {
        Ok(profile) => profile,
        Err(error) => {
            eprintln!("error: {path}: {error}");
            return ExitCode::from(2);
        }
    };
    let mut wanted: Vec<u32> = (0..users).collect();
    for seed in 1..MAX_TRIES {
        if wanted.is_empty() {
            return ExitCode::SUCCESS;
        }
        let overrides = Overrides {
            users: Some(users),
            seed: Some(seed),
            client: Some(Personality::Thunderbird),
            ..Overrides::default()
        };
        let plan = match Plan::resolve(&profile, &overrides) {
            Ok(plan) => plan,
            Err(error) => {
                eprintln!("error: {path}: {error}");
                return ExitCode::from(2);
            }
        };
        wanted.retain(|&user| {
            let draw = thunderbird_start_draw(&plan, user, move_seq);
            if !draw_like_recording(&draw) {
                return true;
            }
            println!(
                "{user} {seed} {} {} {} {}",
                draw.sent_at, draw.target, draw.target_at, draw.folders
            );
            false
        });
    }
    eprintln!("error: no seed below {MAX_TRIES} for users {wanted:?}");
    ExitCode::from(1)
}
