//! The groupware profiles (`caldav-office`, `pop3-user`), the `[calendar]`
//! table, and the plan's calendar and POP3 choices.

use std::time::Duration;

use peakhour_workload::{ActionKind, Overrides, Plan, Profile, builtin};

fn plan_of(name: &str, users: u32) -> Plan {
    let profile = builtin(name)
        .and_then(|b| Ok(b.profile()?))
        .expect("parses");
    Plan::resolve(
        &profile,
        &Overrides {
            users: Some(users),
            ..Overrides::default()
        },
    )
    .expect("resolves")
}

fn rates(plan: &Plan) -> Vec<(ActionKind, f64)> {
    plan.rates().iter().map(|r| (r.kind, r.per_day)).collect()
}

#[test]
fn caldav_office_follows_calendarserver_clients_plist() {
    let plan = plan_of("caldav-office", 10);
    assert_eq!(
        rates(&plan),
        [
            (ActionKind::PollCalendar, 960.0),
            (ActionKind::CreateEvent, 28.57),
            (ActionKind::ChangeEvent, 137.14),
        ]
    );
    assert!(plan.uses_calendar());
    assert!(plan.needs_caldav());
    let calendar = plan.calendar();
    assert_eq!(calendar.name, "calendar");
    assert_eq!(calendar.initial_events, 20);
    assert_eq!(calendar.event_length.0, Duration::from_secs(3600));
    assert_eq!((calendar.first_hour, calendar.last_hour), (8, 16));
    // It sends nothing, so it needs neither recipients nor a mix.
    assert!(plan.mix().is_empty());
    assert!(plan.initial_messages(0).is_empty());
}

#[test]
fn pop3_user_checks_every_ten_minutes_and_sends_without_a_server_copy() {
    let plan = plan_of("pop3-user", 1000);
    assert_eq!(
        rates(&plan),
        [(ActionKind::Send, 48.0), (ActionKind::DownloadMail, 48.0)]
    );
    assert!(!plan.params().save_copy);
    assert!(!plan.uses_calendar());
    assert_eq!(plan.direct_mean(), 2.0);
    let weights: Vec<u64> = plan.mix().iter().map(|m| m.weight).collect();
    assert_eq!(weights, [65, 30, 5]);
    assert!(plan.mix()[2].nominal_size() > 1024 * 1024);
    // 15 % of the users leave mail on the server: 150 of 1000, give or take
    // the draw (binomial sd about 11), and always the same ones.
    let keepers = (0..1000).filter(|&u| plan.leaves_mail_on_server(u)).count();
    assert!((110..=190).contains(&keepers), "{keepers}");
    let again = plan_of("pop3-user", 1000);
    assert!((0..1000).all(|u| plan.leaves_mail_on_server(u) == again.leaves_mail_on_server(u)));
}

#[test]
fn mmb_medium_keeps_its_numbers_and_gains_a_calendar() {
    let plan = plan_of("mmb-medium", 200);
    assert!(plan.uses_calendar());
    // update_calendar falls back to IMAP: no calendar server is required.
    assert!(!plan.needs_caldav());
    assert_eq!(plan.calendar().initial_events, 10);
    assert_eq!(plan.rates().len(), 6);
    assert_eq!(
        plan.rates()
            .iter()
            .find(|r| r.kind == ActionKind::UpdateCalendar)
            .map(|r| r.per_day),
        Some(5.0)
    );
}

#[test]
fn event_slots_fall_in_working_hours_and_are_reproducible() {
    let plan = plan_of("caldav-office", 5);
    let mut hours = std::collections::BTreeSet::new();
    let mut weekdays = std::collections::BTreeSet::new();
    for user in 0..5 {
        for nth in 0..200 {
            let slot = plan.event_slot(user, nth);
            assert!(slot.weekday < 5, "{slot:?}");
            assert!((8..=16).contains(&slot.hour), "{slot:?}");
            assert!(slot.minute == 0 || slot.minute == 30);
            assert_eq!(slot, plan.event_slot(user, nth));
            hours.insert(slot.hour);
            weekdays.insert(slot.weekday);
        }
        // init's events come from a stream of their own.
        let init: Vec<_> = (0..20).map(|i| plan.initial_event_slot(user, i)).collect();
        let run: Vec<_> = (0..20).map(|n| plan.event_slot(user, n)).collect();
        assert_ne!(init, run);
    }
    assert_eq!(hours.len(), 9, "every hour from 8 to 16 is used");
    assert_eq!(weekdays.len(), 5);
    let slot = plan.event_slot(0, 0);
    assert_eq!(
        slot.offset_in_week(),
        i64::from(slot.weekday) * 86_400
            + i64::from(slot.hour) * 3600
            + i64::from(slot.minute) * 60
    );
}

fn parse(text: &str) -> Result<Profile, String> {
    Profile::parse("test.toml", text).map_err(|e| e.to_string())
}

const CALENDAR_ONLY: &str = r#"
name = "cal"
description = "calendar only"
[users]
count = 3
[actions.create_event]
per_day = 10
"#;

#[test]
fn a_calendar_profile_needs_no_mix_but_a_sending_one_does() {
    let profile = parse(CALENDAR_ONLY).expect("no mix, no recipients");
    assert!(profile.calendar.is_none());
    let plan = Plan::resolve(&profile, &Overrides::default()).expect("resolves");
    // The defaults of [calendar].
    assert_eq!(plan.calendar().name, "calendar");
    assert_eq!(plan.calendar().initial_events, 0);
    let sending = format!("{CALENDAR_ONLY}[actions.send]\nper_day = 1\n");
    let error = parse(&sending).unwrap_err();
    assert!(error.contains("field `mix`"), "{error}");
}

#[test]
fn calendar_and_download_values_are_checked_where_they_are_written() {
    let cases = [
        ("[calendar]\nlast_hour = 24\n", "calendar.last_hour"),
        (
            "[calendar]\nfirst_hour = 10\nlast_hour = 9\n",
            "calendar.last_hour",
        ),
        ("[calendar]\nevents = -1\n", "calendar.events"),
        ("[calendar]\nevents = 10001\n", "calendar.events"),
        (
            "[calendar]\nevent_length = \"0s\"\n",
            "calendar.event_length",
        ),
        ("[calendar]\nname = \"a/b\"\n", "calendar.name"),
        (
            "[actions.download_mail]\nper_day = 1\nleave_on_server = 1.5\n",
            "actions.download_mail.leave_on_server",
        ),
    ];
    for (extra, field) in cases {
        let error = parse(&format!("{CALENDAR_ONLY}{extra}")).unwrap_err();
        assert!(
            error.contains(&format!("field `{field}`")),
            "{extra}: {error}"
        );
    }
}

#[test]
fn caldav_office_invites_a_fifth_of_its_events_within_the_population() {
    let plan = plan_of("caldav-office", 10);
    let params = plan.invitations();
    assert_eq!(params.share, 0.2);
    assert_eq!(
        (
            params.attendees_mode,
            params.attendees_median,
            params.attendees_max
        ),
        (6.0, 8.0, 60)
    );
    let population = 10;
    let mut invitations = 0;
    let mut attendees = 0;
    for user in 0..population {
        for nth in 0..200 {
            let invitees = plan.invitees(user, nth, population);
            // Random access: the same draw again.
            assert_eq!(invitees, plan.invitees(user, nth, population));
            if invitees.is_empty() {
                continue;
            }
            invitations += 1;
            attendees += invitees.len();
            assert!(invitees.iter().all(|&i| i < population && i != user));
            let mut unique = invitees.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), invitees.len(), "{invitees:?}");
        }
    }
    // 2,000 events, a fifth of them invitations: 400 expected.
    assert!((340..=460).contains(&invitations), "{invitations}");
    // A log-normal with median 8 and mode 6 has a mean above 8, but the 9 other
    // users cap every count: most invitations invite many of them.
    assert!(attendees > invitations * 5, "{attendees} / {invitations}");
    // Two users: the only attendee there is.
    let two: Vec<Vec<u32>> = (0..100).map(|n| plan.invitees(1, n, 2)).collect();
    assert!(two.iter().all(|i| i.is_empty() || i == &[0]));
    assert!(plan.invitees(0, 0, 1).is_empty());
}

#[test]
fn answers_wait_a_log_normal_delay_scaled_by_the_speed() {
    let plan = plan_of("caldav-office", 10);
    let mut delays: Vec<f64> = (0..2001)
        .map(|n| plan.answer_delay(3, n).as_secs_f64())
        .collect();
    delays.sort_by(f64::total_cmp);
    // The median is 1800 simulated seconds at speed 1.
    let median = delays[1000];
    assert!((1500.0..2150.0).contains(&median), "{median}");
    assert_eq!(plan.answer_delay(3, 7), plan.answer_delay(3, 7));
}

#[test]
fn invitation_knobs_are_checked() {
    let profile = |table: &str| {
        format!("name = \"x\"\ndescription = \"x\"\n[users]\ncount = 2\n[calendar]\n{table}")
    };
    for (table, field) in [
        (
            "[actions.create_event]\nper_day = 1\ninvitations = 1.5\n",
            "invitations",
        ),
        (
            "[actions.create_event]\nper_day = 1\nattendees_mode = 0\n",
            "attendees_mode",
        ),
        (
            "[actions.create_event]\nper_day = 1\nattendees_mode = 6\nattendees_median = 2\n",
            "attendees_median",
        ),
        (
            "[actions.create_event]\nper_day = 1\nattendees_max = 0\n",
            "attendees_max",
        ),
        (
            "[actions.poll_calendar]\nper_day = 1\nanswer_delay_mode = \"10m\"\nanswer_delay_median = \"5m\"\n",
            "answer_delay_median",
        ),
    ] {
        let error = Profile::parse("x.toml", &profile(table))
            .err()
            .unwrap_or_else(|| panic!("{table} was accepted"))
            .to_string();
        assert!(error.contains(field), "{table}: {error}");
    }
}
