//! Every /proc parser of the local monitor (stat, loadavg, uptime,
//! pressure, meminfo, vmstat, diskstats, net/dev, PID stat, status and io,
//! net/tcp) over the same text: an error or a value, never a panic, and no
//! allocation beyond what the text justifies (`cpu4294967295` in
//! /proc/stat asked for a slot per core below it).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        peakhour_monitor::parse_every_proc_file(text);
    }
});
