//! Arbitrary text as a profile (TOML): the parser must refuse it with an
//! error naming the field, never panic; a profile it accepts must resolve
//! into a plan (bounds checked at parse time keep that finite) whose first
//! user's schedule can be drawn. Seeds: the built-in profiles.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_workload::{Overrides, Plan, Profile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(profile) = Profile::parse("fuzz.toml", text) else {
        return;
    };
    // Few users: the size of a plan grows with them, and the bounds allow
    // a million.
    let overrides = Overrides {
        users: Some(3),
        ..Overrides::default()
    };
    if let Ok(plan) = Plan::resolve(&profile, &overrides) {
        let _ = plan.schedule(0).take(1_000).count();
    }
});
