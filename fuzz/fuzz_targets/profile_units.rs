//! Durations and sizes as profiles and flags write them (`90s`, `1h30m`,
//! `1.5MB`, `99999999999999999999h`): parsing returns a value or an error,
//! never panics (issue 11: `Duration::from_secs_f64` did), and a value
//! parsed is written back as text that parses again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_workload::{ByteSize, HumanDuration};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(duration) = HumanDuration::parse(text) {
        let written = duration.to_string();
        assert_eq!(HumanDuration::parse(&written), Ok(duration), "{text:?} -> {written:?}");
    }
    if let Ok(size) = ByteSize::parse(text) {
        let written = size.to_string();
        assert_eq!(ByteSize::parse(&written), Ok(size), "{text:?} -> {written:?}");
    }
});
