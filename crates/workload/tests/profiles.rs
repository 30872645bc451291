//! Profile parsing, validation errors, built-ins and the resolved plan.

use std::time::Duration;

use peakhour_workload::{
    ActionKind, AttachmentKind, ClientMix, Mode, Overrides, Personality, Plan, PlanError, Profile,
    ProfileError, builtin, builtins,
};

fn mmb() -> Profile {
    builtin("mmb-medium")
        .and_then(|b| Ok(b.profile()?))
        .expect("mmb-medium parses")
}

fn groupwise() -> Profile {
    builtin("groupwise-20x3")
        .and_then(|b| Ok(b.profile()?))
        .expect("groupwise parses")
}

#[test]
fn builtins_are_listed_and_parse() {
    let names: Vec<_> = builtins().iter().map(|b| b.name).collect();
    assert_eq!(
        names,
        ["mmb-medium", "groupwise-20x3", "caldav-office", "pop3-user"]
    );
    for b in builtins() {
        let p = b.profile().expect("parses");
        assert_eq!(p.name, b.name);
        assert_eq!(p.description, b.description, "listing and file agree");
    }
    assert!(matches!(builtin("nope"), Err(PlanError::UnknownBuiltin(_))));
}

#[test]
fn mmb_medium_matches_seed_002_table_3_and_4() {
    let plan = Plan::resolve(&mmb(), &Overrides::default()).expect("resolves");
    assert_eq!(plan.mode(), Mode::Poisson);
    assert_eq!(plan.day(), Duration::from_secs(8 * 3600));
    let per_day: Vec<(ActionKind, f64)> =
        plan.rates().iter().map(|r| (r.kind, r.per_day)).collect();
    assert_eq!(
        per_day,
        [
            (ActionKind::CheckInbox, 12.0),
            (ActionKind::Send, 14.18),
            (ActionKind::Read, 81.3),
            (ActionKind::Move, 16.3),
            (ActionKind::Delete, 32.5),
            (ActionKind::UpdateCalendar, 5.0),
        ]
    );
    let weights: Vec<u64> = plan.mix().iter().map(|m| m.weight).collect();
    assert_eq!(weights, [60, 16, 4, 6, 4, 4, 2, 4]);
    assert_eq!(plan.mix_cumulative(), [60, 76, 80, 86, 90, 94, 96, 100]);
    let sizes: Vec<(u64, Option<(AttachmentKind, u64)>)> = plan
        .mix()
        .iter()
        .map(|m| (m.body, m.attachment.map(|a| (a.kind, a.size))))
        .collect();
    assert_eq!(
        sizes,
        [
            (1024, None),
            (2048, None),
            (4096, None),
            (1024, Some((AttachmentKind::Text, 10 * 1024))),
            (1024, Some((AttachmentKind::Spreadsheet, 15 * 1024))),
            (1024, Some((AttachmentKind::Document, 16 * 1024))),
            (512, Some((AttachmentKind::Bitmap, 43 * 1024))),
            (1024, Some((AttachmentKind::EmbeddedSpreadsheet, 17 * 1024))),
        ]
    );
    assert!((plan.expected_recipients() - 4.7).abs() < 1e-9);
    assert!((plan.direct_mean() - 1.7).abs() < 1e-9);
    // LoadSim Medium initial state: Inbox 4, 40 folders x 5, Deleted Items 1.
    let f = plan.folders();
    assert_eq!(f[0].name, "INBOX");
    assert_eq!(f[0].messages, 4);
    assert_eq!(
        f.iter().filter(|f| f.name.starts_with("Folder")).count(),
        40
    );
    assert!(
        f.iter()
            .filter(|f| f.name.starts_with("Folder"))
            .all(|f| f.messages == 5)
    );
    let trash = f.iter().find(|f| f.name == "Trash").expect("trash");
    assert_eq!(trash.messages, 1);
    for special in ["Sent", "Calendar"] {
        assert!(
            f.iter().any(|f| f.name == special && f.messages == 0),
            "{special}"
        );
    }
    assert_eq!(plan.initial_messages(0).len(), 4 + 200 + 1);
    assert_eq!(plan.params().move_targets.len(), 40);
    assert!(!plan.params().empty_trash);
    assert!(plan.params().unread_first);
    assert_eq!(plan.params().page_size, 50);
    for kind in ActionKind::ALL {
        assert_eq!(plan.qos_p95_ms(kind), 1000.0);
    }
    assert_eq!(plan.lists().len(), 20);
    assert!(plan.lists().iter().all(|l| l.len() == 10));
}

#[test]
fn groupwise_is_20_sends_to_3_recipients() {
    let plan = Plan::resolve(&groupwise(), &Overrides::default()).expect("resolves");
    assert_eq!(plan.mode(), Mode::Fixed);
    assert_eq!(plan.fixed_counts(), [(ActionKind::Send, 20)]);
    assert_eq!(plan.users(), 70);
    let sched: Vec<_> = plan.schedule(5).collect();
    assert_eq!(sched.len(), 20);
    assert!(plan.schedule(5).is_closed_loop());
    for (i, a) in sched.iter().enumerate() {
        assert_eq!(
            (a.kind, a.nth, a.seq),
            (ActionKind::Send, i as u64, i as u64)
        );
        let c = plan.send_choice(5, a.nth);
        assert_eq!(c.direct.len(), 3);
        assert_eq!(c.list, None);
        assert!(!c.direct.contains(&5));
        let mut d = c.direct.clone();
        d.dedup();
        assert_eq!(d.len(), 3);
    }
}

#[test]
fn day_compression_gives_rates_per_real_second() {
    let over = Overrides {
        speed: Some(16.0),
        users: Some(10),
        ..Overrides::default()
    };
    let plan = Plan::resolve(&mmb(), &over).expect("resolves");
    assert_eq!(plan.real_day(), Duration::from_secs(30 * 60));
    let send = plan
        .rates()
        .iter()
        .find(|r| r.kind == ActionKind::Send)
        .expect("send");
    assert!((send.per_second - 14.18 / 1800.0).abs() < 1e-12);
    assert_eq!(plan.users(), 10);
    let over = Overrides {
        day: Some(Duration::from_secs(2 * 3600)),
        ..Overrides::default()
    };
    let plan = Plan::resolve(&mmb(), &over).expect("resolves");
    assert_eq!(plan.real_day(), Duration::from_secs(7200));
    let bad = Overrides {
        users: Some(0),
        ..Overrides::default()
    };
    let err = Plan::resolve(&mmb(), &bad).expect_err("0 users");
    assert_eq!(err.to_string(), "--users: must be at least 1");
}

#[test]
fn resolved_profile_round_trips_through_toml() {
    for profile in [mmb(), groupwise()] {
        let over = Overrides {
            users: Some(33),
            speed: Some(4.0),
            seed: Some(99),
            ..Overrides::default()
        };
        let plan = Plan::resolve(&profile, &over).expect("resolves");
        let text = plan.profile().to_toml().expect("serializes");
        let back = Profile::parse("resolved.toml", &text).expect("reparses");
        let again = Plan::resolve(
            &back,
            &Overrides {
                seed: Some(99),
                ..Overrides::default()
            },
        )
        .expect("resolves");
        assert_eq!(again.users(), 33);
        assert_eq!(again.speed(), 4.0);
        assert_eq!(again.folders(), plan.folders());
        assert_eq!(again.lists(), plan.lists());
        let a: Vec<_> = plan.schedule(3).take(200).collect();
        let b: Vec<_> = again.schedule(3).take(200).collect();
        assert_eq!(a, b);
        let doc = plan.to_toml().expect("plan serializes");
        assert!(doc.contains("seed = 99"), "{doc}");
        assert!(doc.contains("[profile]"), "{doc}");
    }
}

#[test]
fn print_resolved_plan() {
    let plan = Plan::resolve(&mmb(), &Overrides::default()).expect("resolves");
    println!("{}", plan.to_toml().expect("serializes"));
}

/// A valid minimal profile to break in the error tests.
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
fn minimal_profile_parses() {
    let p = Profile::parse("ok.toml", MINIMAL).expect("parses");
    let plan = Plan::resolve(&p, &Overrides::default()).expect("resolves");
    assert_eq!(plan.users(), 10);
    assert_eq!(plan.user_name(0), "user1");
    assert_eq!(plan.address(9), "user10@bench.test");
}

#[test]
fn unknown_field_names_file_line_column_and_field() {
    let src = MINIMAL.replace("per_day = 10", "per_day = 10\nper_week = 3");
    let e = parse_err(&src);
    assert_eq!(e.field(), "actions.send.per_week");
    assert_eq!(e.line_column(), Some((13, 1)));
    let text = e.to_string();
    assert!(
        text.starts_with("bad.toml:13:1: field `actions.send.per_week`: unknown field `per_week`"),
        "{text}"
    );
}

#[test]
fn wrong_type_names_field() {
    let src = MINIMAL.replace("count = 10", "count = \"ten\"");
    let e = parse_err(&src);
    assert_eq!(e.field(), "users.count");
    assert_eq!(e.line_column(), Some((6, 9)));
    assert!(
        e.to_string()
            .starts_with("bad.toml:6:9: field `users.count`: invalid type"),
        "{e}"
    );
}

#[test]
fn negative_count_is_rejected_at_its_value() {
    let src = MINIMAL.replace("count = 10", "count = -3");
    let e = parse_err(&src);
    assert_eq!(
        e.to_string(),
        "bad.toml:6:9: field `users.count`: must not be negative (got -3)"
    );
    let src = MINIMAL.replace("per_day = 10", "per_day = -1.5");
    let e = parse_err(&src);
    assert_eq!(
        e.to_string(),
        "bad.toml:12:11: field `actions.send.per_day`: must be a count of 0 or more (got -1.5)"
    );
}

#[test]
fn weights_summing_to_zero_are_rejected() {
    let src = MINIMAL.replace("weight = 1", "weight = 0");
    let e = parse_err(&src);
    assert_eq!(e.field(), "mix");
    assert!(e.line_column().is_some(), "{e}");
    assert!(e.to_string().ends_with("the weights sum to zero"), "{e}");
    let src = MINIMAL.replace("weight = 1", "weight = -2");
    assert_eq!(
        parse_err(&src).to_string(),
        "bad.toml:15:10: field `mix[0].weight`: must not be negative (got -2)"
    );
}

#[test]
fn other_semantic_errors() {
    let cases = [
        (MINIMAL.replace("day = \"8h\"", "day = \"8x\""), "day"),
        (MINIMAL.replace("day = \"8h\"", "day = \"0s\""), "day"),
        (
            MINIMAL.replace("average = 2", "average = 0.5"),
            "recipients.average",
        ),
        (
            MINIMAL.replace("average = 2", "average = 2\nlist_fraction = 0.3"),
            "recipients.list_fraction",
        ),
        (
            MINIMAL.replace("per_day = 10", "count = 10"),
            "actions.send.count",
        ),
        (
            MINIMAL.replace("body = \"1KB\"", "body = \"1XB\""),
            "mix[0].body",
        ),
        (
            MINIMAL.replace("count = 10", "count = 10\nname = \"bob\""),
            "users.name",
        ),
        (format!("{MINIMAL}\n[qos]\np95_ms = 0\n"), "qos.p95_ms"),
        (
            format!("{MINIMAL}\n[qos.actions]\nsned = 5\n"),
            "qos.actions",
        ),
        (
            format!("{MINIMAL}\n[[mailbox.folders]]\nname = \"F\"\ncount = 3\n"),
            "mailbox.folders[0].name",
        ),
        ("name = \"x\"\n[broken".to_owned(), "(document)"),
    ];
    for (src, field) in cases {
        let e = parse_err(&src);
        assert!(e.field().starts_with(field), "{field}: {e}");
        assert!(e.to_string().starts_with("bad.toml:"), "{e}");
        assert!(e.line_column().is_some(), "{e}");
    }
    // A missing required table has no single place.
    let e = parse_err(&MINIMAL.replace("[recipients]\naverage = 2\n", ""));
    assert_eq!(e.field(), "recipients");
    println!("{e}");
}

#[test]
fn print_error_examples() {
    for src in [
        MINIMAL.replace("per_day = 10", "per_day = 10\nper_week = 3"),
        MINIMAL.replace("weight = 1", "weight = 0"),
    ] {
        println!("{}", parse_err(&src));
    }
}

#[test]
fn issue_27_item_2_sessions_per_account_shares_an_account_among_users() {
    let src = MINIMAL.replace("count = 10", "count = 5\nsessions_per_account = 2");
    let p = Profile::parse("ok.toml", &src).expect("parses");
    let plan = Plan::resolve(&p, &Overrides::default()).expect("resolves");
    assert_eq!(plan.sessions_per_account(), 2);
    let accounts: Vec<u32> = (0..5).map(|u| plan.account_of(u)).collect();
    assert_eq!(accounts, [0, 0, 2, 2, 4]);
    // The default: every user its own account.
    let plan = Plan::resolve(
        &Profile::parse("ok.toml", MINIMAL).unwrap(),
        &Overrides::default(),
    )
    .expect("resolves");
    assert_eq!((plan.sessions_per_account(), plan.account_of(7)), (1, 7));
}

#[test]
fn issue_27_item_1_shared_accounts_shares_only_whole_groups_of_the_first_users() {
    let src = MINIMAL.replace(
        "count = 10",
        "count = 10\nsessions_per_account = 2\nshared_accounts = 0.5",
    );
    let p = Profile::parse("ok.toml", &src).expect("parses");
    let plan = Plan::resolve(&p, &Overrides::default()).expect("resolves");
    // Half of 10 users is 5, whole groups of 2: users 0 to 3 share.
    let accounts: Vec<u32> = (0..10).map(|u| plan.account_of(u)).collect();
    assert_eq!(accounts, [0, 0, 2, 2, 4, 5, 6, 7, 8, 9]);
    let sessions: Vec<u32> = [0, 2, 4, 5, 9].map(|a| plan.sessions_on(a)).to_vec();
    assert_eq!(sessions, [2, 2, 1, 1, 1]);
    // Without the share every group shares; a last group cut short by the
    // user count holds fewer sessions.
    let src = MINIMAL.replace("count = 10", "count = 5\nsessions_per_account = 2");
    let plan = Plan::resolve(
        &Profile::parse("ok.toml", &src).unwrap(),
        &Overrides::default(),
    )
    .expect("resolves");
    assert_eq!((plan.sessions_on(2), plan.sessions_on(4)), (2, 1));
    // And it reads back from the written profile.
    let again = Profile::parse("again.toml", &p.to_toml().expect("writes")).expect("parses");
    assert_eq!(again.users.shared_accounts.map(|s| *s.get_ref()), Some(0.5));
}

#[test]
fn issue_27_item_1_label_share_tags_about_that_share_of_reads_with_thunderbirds_labels() {
    let src = MINIMAL.replace(
        "[actions.send]",
        "[actions.read]\nper_day = 10\nlabel_share = 0.2\n\n[actions.send]",
    );
    let plan = Plan::resolve(
        &Profile::parse("ok.toml", &src).expect("parses"),
        &Overrides::default(),
    )
    .expect("resolves");
    let labels: Vec<Option<&str>> = (0..10_000).map(|n| plan.label_of_read(3, n)).collect();
    let tagged = labels.iter().flatten().count();
    assert!(
        (1_800..=2_200).contains(&tagged),
        "{tagged} of 10,000 reads tagged"
    );
    for label in ["$label1", "$label2", "$label3", "$label4", "$label5"] {
        assert!(labels.contains(&Some(label)), "{label} never drawn");
    }
    // The same seed, user and read: the same decision.
    assert_eq!(plan.label_of_read(3, 17), labels[17]);
    // Without the field no read tags.
    let plan = Plan::resolve(
        &Profile::parse("ok.toml", MINIMAL).unwrap(),
        &Overrides::default(),
    )
    .expect("resolves");
    assert!((0..1_000).all(|n| plan.label_of_read(3, n).is_none()));
}

#[test]
fn issue_27_item_1_a_share_outside_0_to_1_is_named_at_its_line() {
    let src = MINIMAL.replace("count = 10", "count = 10\nshared_accounts = 1.5");
    assert_eq!(
        parse_err(&src).to_string(),
        "bad.toml:7:19: field `users.shared_accounts`: must be between 0 and 1 (got 1.5)"
    );
    let src = MINIMAL.replace(
        "[actions.send]",
        "[actions.read]\nper_day = 1\nlabel_share = -0.1\n\n[actions.send]",
    );
    assert!(
        parse_err(&src)
            .to_string()
            .contains("field `actions.read.label_share`: must be between 0 and 1 (got -0.1)"),
        "{}",
        parse_err(&src)
    );
}

#[test]
fn issue_27_item_2_a_bad_sessions_per_account_is_named_at_its_line() {
    let src = MINIMAL.replace("count = 10", "count = 10\nsessions_per_account = 0");
    let e = parse_err(&src);
    assert_eq!(
        e.to_string(),
        "bad.toml:7:24: field `users.sessions_per_account`: must be 1 to 64 (got 0)"
    );
}

/// The client-mix profiles of docs/clients.md ("Capacity per client mix") differ from
/// mmb-medium in their name, their first comment and `[clients]` alone, so that the
/// capacities measured with them differ by the client mix and nothing else.
#[test]
fn issue_28_item_4_the_client_mix_profiles_are_mmb_medium_but_for_their_clients() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/clients");
    let expected: [(&str, &[(Personality, f64)]); 4] = [
        ("mmb-medium-peakhour", &[(Personality::Peakhour, 1.0)]),
        ("mmb-medium-thunderbird", &[(Personality::Thunderbird, 1.0)]),
        ("mmb-medium-roundcube", &[(Personality::Roundcube, 1.0)]),
        (
            "mmb-medium-mix",
            &[
                (Personality::Thunderbird, 0.6),
                (Personality::Mbsync, 0.1),
                (Personality::Roundcube, 0.3),
            ],
        ),
    ];
    let mmb_toml = mmb().to_toml().expect("mmb-medium serialises");
    for (name, shares) in expected {
        let path = dir.join(format!("{name}.toml"));
        let source =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut profile =
            Profile::parse(&path.display().to_string(), &source).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(profile.name, name);
        let weights = profile.clients.take().expect("a [clients] table");
        let mix = ClientMix::from_weights(weights.get_ref()).expect("a valid mix");
        let mut got = mix.shares().to_vec();
        got.sort_by_key(|(p, _)| *p);
        let mut want = shares.to_vec();
        want.sort_by_key(|(p, _)| *p);
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
        for ((gp, gw), (wp, ww)) in got.iter().zip(&want) {
            assert_eq!(gp, wp, "{name}");
            assert!((gw - ww).abs() < 1e-9, "{name}: {gp:?} {gw} != {ww}");
        }
        profile.name = "mmb-medium".to_owned();
        assert_eq!(
            profile.to_toml().expect("serialises"),
            mmb_toml,
            "{name}.toml no longer matches mmb-medium outside [clients]"
        );
    }
}
