//! Absurd numbers in a profile are refused with the field named, never a
//! panic or an allocation the size of the number (issue 11, point 5).

use peakhour_workload::{Profile, ProfileError};

/// A valid minimal profile to break.
const MINIMAL: &str = r#"name = "t"
description = "test"
day = "8h"

[users]
count = 10

[recipients]
average = 2

[actions.send]
per_day = 10

[[mix]]
weight = 1
body = "1KB"
"#;

fn parse_err(src: &str) -> ProfileError {
    Profile::parse("bad.toml", src).expect_err("must not parse")
}

#[test]
fn issue_11_absurd_profile_numbers_are_refused_at_their_field() {
    let cases = [
        (MINIMAL.replace("count = 10", "count = 2000000"), "users.count"),
        (
            MINIMAL.replace("per_day = 10", "per_day = 1e12"),
            "actions.send.per_day",
        ),
        (
            MINIMAL.replace("body = \"1KB\"", "body = \"900MB\""),
            "mix[0]",
        ),
        (
            MINIMAL.replace("body = \"1KB\"", "body = \"99999999999999999999MB\""),
            "mix[0].body",
        ),
        (
            MINIMAL.replace("weight = 1", "weight = 9223372036854775807"),
            "mix[0].weight",
        ),
        (
            MINIMAL.replace(
                "weight = 1\nbody = \"1KB\"",
                "weight = 9223372036854775807\nbody = \"1KB\"\n[[mix]]\nweight = 9223372036854775807\nbody = \"1KB\"",
            ),
            "mix[0].weight",
        ),
        (
            MINIMAL.replace("day = \"8h\"", "day = \"99999999999999999999h\""),
            "day",
        ),
        (MINIMAL.replace("day = \"8h\"", "day = \"800h\""), "day"),
        (
            MINIMAL.replace("day = \"8h\"", "day = \"8h\"\nspeed = 1e9"),
            "speed",
        ),
        (format!("{MINIMAL}\n[qos]\np95_ms = 1e300\n"), "qos.p95_ms"),
        (
            format!("{MINIMAL}\n[[mailbox.folders]]\nname = \"F{{n}}\"\ncount = 5000\n"),
            "mailbox.folders[0].count",
        ),
        (
            format!(
                "{MINIMAL}\n[[mailbox.folders]]\nname = \"F{{n}}\"\ncount = 900\nmessages = 900000\n"
            ),
            "mailbox.folders",
        ),
    ];
    for (src, field) in cases {
        let e = parse_err(&src);
        assert!(e.field().starts_with(field), "{field}: {e}");
        assert!(e.line_column().is_some(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("limit") || text.contains("too"),
            "the error says why: {text}"
        );
    }
}

#[test]
fn issue_26_item_9_a_huge_number_in_a_profile_reads_as_written_not_as_309_digits() {
    let cases = [
        (
            MINIMAL.replace("per_day = 10", "per_day = 1e308"),
            "actions.send.per_day",
            "1e308",
        ),
        (
            format!("{MINIMAL}\n[qos]\np95_ms = 1e300\n"),
            "qos.p95_ms",
            "1e300",
        ),
        (
            MINIMAL.replace("average = 2", "average = 1e200"),
            "recipients.average",
            "1e200",
        ),
        (
            MINIMAL.replace("day = \"8h\"", "day = \"8h\"\nspeed = 5e100"),
            "speed",
            "5e100",
        ),
    ];
    for (src, field, shown) in cases {
        let e = parse_err(&src);
        let text = e.to_string();
        assert_eq!(e.field(), field, "{text}");
        let (line, _) = e.line_column().expect("a place");
        assert!(text.starts_with(&format!("bad.toml:{line}:")), "{text}");
        assert!(text.contains(shown), "{text}");
        assert!(text.len() < 200, "no 300-digit number: {text}");
    }
}

#[test]
fn issue_26_item_4_a_name_pattern_that_routes_elsewhere_is_refused_at_its_key() {
    let cases = [
        (
            "[users]\ncount = 10",
            "[users]\ncount = 10\nname = \"user{n}%gmail.com\"",
            "users.name",
            "'%'",
        ),
        (
            "[users]\ncount = 10",
            "[users]\ncount = 10\nname = \"@gmail.com:user{n}\"",
            "users.name",
            "more than one @",
        ),
        (
            "[users]\ncount = 10",
            "[users]\ncount = 10\nname = \"gmail.com!user{n}\"",
            "users.name",
            "'!'",
        ),
        (
            "[users]\ncount = 10",
            "[users]\ncount = 10\nname = \"\\\"u{n}@gmail.com\\\"\"",
            "users.name",
            "more than one @",
        ),
        (
            "[users]\ncount = 10",
            "[users]\ncount = 10\ndomain = \"gmail.com@bench.test\"",
            "users.domain",
            "'@'",
        ),
        (
            "[recipients]",
            "[lists]\nname = \"list{n}%gmail.com\"\n\n[recipients]",
            "lists.name",
            "'%'",
        ),
    ];
    for (from, to, field, says) in cases {
        let src = MINIMAL.replace(from, to);
        assert_ne!(src, MINIMAL);
        let e = parse_err(&src);
        let text = e.to_string();
        assert_eq!(e.field(), field, "{text}");
        assert!(text.contains(says), "{text}");
        if field != "users.domain" {
            let (line, _) = e.line_column().expect("a place");
            assert!(
                src.lines().nth(line - 1).unwrap().contains("name ="),
                "{text}"
            );
        }
    }
}
