//! What `peakhour report` reads back from a run directory: `record.json`
//! (and each line of a killed run's `intervals.jsonl`, the same interval
//! objects), `summary.json`, and the base64 HdrHistograms inside them.
//! Reading returns an error, never panics; a record that reads can be
//! summarised (or refused) and its histograms written as an hlog.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_analysis::{EncodedHistogram, IntervalRecord, RunRecord, Summary};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(record) = serde_json::from_str::<RunRecord>(text) {
        if let Ok(summary) = Summary::compute(&record) {
            let _ = peakhour_report::summary_json(&summary);
        }
        let _ = peakhour_report::write_hlog(&record, &mut Vec::new());
        let _ = peakhour_report::write_intervals_csv(&record, &mut Vec::new());
    }
    let _ = serde_json::from_str::<Summary>(text);
    for line in text.lines() {
        if let Ok(interval) = serde_json::from_str::<IntervalRecord>(line) {
            let _ = peakhour_report::write_interval_rows(&interval, &mut Vec::new());
        }
    }
    let _ = EncodedHistogram::from_base64(text.trim()).decode();
});
