//! Durations and sizes as profiles and flags write them (`90s`, `1h30m`,
//! `1.5MB`, `99999999999999999999h`): parsing returns a value or an error,
//! never panics (issue 11: `Duration::from_secs_f64` did), and a value
//! parsed is written back as text that parses again: to the same size, and
//! to the same duration to the millisecond (durations are written in whole
//! milliseconds; `433.2222222222s3s` is written `436222ms`: regression
//! inputs of this target).
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_workload::{ByteSize, HumanDuration};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(duration) = HumanDuration::parse(text) {
        let written = duration.to_string();
        let read = HumanDuration::parse(&written).unwrap_or_else(|e| panic!("{written:?}: {e}"));
        // To the millisecond, or to f64's precision for durations of
        // millions of years (`13333335556885.433s` reads back 2 µs off).
        let apart = read.0.abs_diff(duration.0).as_secs_f64();
        assert!(
            apart < 0.001_f64.max(duration.0.as_secs_f64() * 1e-12),
            "{text:?} -> {written:?} -> {read:?}"
        );
    }
    if let Ok(size) = ByteSize::parse(text) {
        let written = size.to_string();
        assert_eq!(ByteSize::parse(&written), Ok(size), "{text:?} -> {written:?}");
    }
});
