//! Endpoint URLs (`--imap imaps://host:993`, `--smtp smtp+starttls://...`):
//! parsed or refused with an error, never a panic, whatever the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_engine::Endpoint;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for allowed in [&["imap", "imaps"][..], &["smtp", "smtps", "submissions"][..]] {
        if let Ok(endpoint) = Endpoint::parse(text, allowed) {
            let _ = endpoint.to_string();
        }
    }
});
