//! What a node_exporter scrape receives: the whole HTTP response (status,
//! headers, plain or chunked body) and the text exposition in it. Errors,
//! never panics, and memory bounded by the input. Regression seeds
//! (fuzz/regressions/node_exporter/): a chunk size of `ffffffffffffffff`
//! overflowed and panicked; `cpu="4294967295"` asked for a 160 GB vector.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_monitor::{MAX_CPUS, parse_exposition, parse_scrape_response};

fuzz_target!(|data: &[u8]| {
    if let Ok(counters) = parse_scrape_response(data) {
        assert!(counters.cpu_cores.len() <= MAX_CPUS);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(counters) = parse_exposition(text) {
            assert!(counters.cpu_cores.len() <= MAX_CPUS);
        }
    }
});
