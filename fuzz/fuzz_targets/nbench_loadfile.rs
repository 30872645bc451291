//! Arbitrary text into the dbench/NBENCH load-file parser.
//!
//! Lines of Debian's `/usr/share/dbench/client.txt` are good seeds as they are.
//!
//! Properties checked:
//!
//! * the parser never panics, whatever the text;
//! * the whole-file parser and the line parser agree: each item of `parse_loadfile`
//!   is what `parse_line` gives for that line, with that line number;
//! * a parsed path never escapes the target: no `..` component and no leading `/`,
//!   also after rewriting it for another client.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_workload::files::{LoadOp, LoadPath, parse_line, parse_loadfile};

fn check_path(path: &LoadPath) {
    for candidate in [path.as_str().to_owned(), path.for_client(7)] {
        assert!(!candidate.starts_with('/'), "{candidate}");
        assert!(!candidate.split('/').any(|c| c == ".."), "{candidate}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut from_file = parse_loadfile(text);
    for (i, line) in text.lines().enumerate() {
        let single = parse_line(i + 1, line);
        match single {
            Ok(None) => continue,
            other => assert_eq!(other.transpose(), from_file.next()),
        }
    }
    assert!(from_file.next().is_none());
    for line in parse_loadfile(text).flatten() {
        match &line.op {
            LoadOp::NtCreateX { path, .. }
            | LoadOp::Unlink { path, .. }
            | LoadOp::Deltree { path }
            | LoadOp::Rmdir { path }
            | LoadOp::Mkdir { path }
            | LoadOp::QueryPathInformation { path, .. } => check_path(path),
            LoadOp::FindFirst { pattern, .. } => check_path(pattern),
            LoadOp::Rename { from, to } => {
                check_path(from);
                check_path(to);
            }
            _ => {}
        }
    }
});
