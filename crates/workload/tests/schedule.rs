//! Per-user schedules and per-send choices: deterministic, independent, statistically right.

use std::collections::HashSet;
use std::time::Duration;

use peakhour_workload::{ActionKind, Overrides, Plan, ScheduledAction, builtin};

fn plan(users: u32, seed: u64) -> Plan {
    let profile = builtin("mmb-medium")
        .and_then(|b| Ok(b.profile()?))
        .expect("parses");
    Plan::resolve(
        &profile,
        &Overrides {
            users: Some(users),
            seed: Some(seed),
            ..Overrides::default()
        },
    )
    .expect("resolves")
}

fn first(plan: &Plan, user: u32, n: usize) -> Vec<ScheduledAction> {
    plan.schedule(user).take(n).collect()
}

#[test]
fn same_seed_same_schedule() {
    let (a, b) = (plan(200, 42), plan(200, 42));
    for user in [0, 7, 199] {
        assert_eq!(first(&a, user, 1000), first(&b, user, 1000));
        for nth in 0..50 {
            assert_eq!(a.send_choice(user, nth), b.send_choice(user, nth));
        }
        assert_eq!(a.initial_messages(user), b.initial_messages(user));
    }
    assert_eq!(a.lists(), b.lists());
    let c = plan(200, 43);
    assert_ne!(first(&a, 7, 100), first(&c, 7, 100));
    assert_ne!(a.lists(), c.lists());
}

#[test]
fn schedule_of_a_user_does_not_depend_on_the_population() {
    let small = plan(10, 5);
    let large = plan(1000, 5);
    assert_eq!(first(&small, 7, 2000), first(&large, 7, 2000));
}

#[test]
fn different_users_have_different_schedules() {
    let p = plan(100, 5);
    let schedules: HashSet<Vec<(Duration, ActionKind)>> = (0..100)
        .map(|u| p.schedule(u).take(20).map(|a| (a.at, a.kind)).collect())
        .collect();
    assert_eq!(schedules.len(), 100);
}

#[test]
fn schedule_is_ordered_and_numbered() {
    let p = plan(10, 9);
    let s = first(&p, 3, 5000);
    let mut nth = [0u64; ActionKind::ALL.len()];
    for (i, w) in s.windows(2).enumerate() {
        assert!(w[0].at <= w[1].at);
        assert_eq!(w[0].seq, i as u64);
    }
    for a in &s {
        let k = ActionKind::ALL
            .iter()
            .position(|k| *k == a.kind)
            .expect("known kind");
        assert_eq!(a.nth, nth[k]);
        nth[k] += 1;
    }
    assert!(!p.schedule(3).is_closed_loop());
}

/// Counts per action over many simulated days match count/day, within 4.5 standard
/// deviations of a Poisson count (the seed is fixed, so this cannot flake).
#[test]
fn poisson_counts_match_rates() {
    let p = plan(10, 2024);
    let days = 1000.0;
    let horizon = Duration::from_secs_f64(p.day().as_secs_f64() * days);
    for user in [0, 1] {
        let mut counts = [0f64; ActionKind::ALL.len()];
        let mut gaps: Vec<f64> = Vec::new();
        let mut last_send = None;
        for a in p.schedule(user).take_while(|a| a.at < horizon) {
            counts[ActionKind::ALL
                .iter()
                .position(|k| *k == a.kind)
                .expect("kind")] += 1.0;
            if a.kind == ActionKind::Send {
                if let Some(prev) = last_send {
                    gaps.push((a.at - prev).as_secs_f64());
                }
                last_send = Some(a.at);
            }
        }
        for r in p.rates() {
            let expected = r.per_day * days;
            let got = counts[ActionKind::ALL
                .iter()
                .position(|k| *k == r.kind)
                .expect("kind")];
            let sd = expected.sqrt();
            assert!(
                (got - expected).abs() < 4.5 * sd,
                "user {user} {}: {got} vs {expected} ± {sd}",
                r.kind
            );
        }
        // Exponential gaps: mean 1/rate and coefficient of variation 1.
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let send = p
            .rates()
            .iter()
            .find(|r| r.kind == ActionKind::Send)
            .expect("send");
        assert!((mean * send.per_second - 1.0).abs() < 0.05, "{mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
    }
}

#[test]
fn compressed_day_scales_arrivals() {
    let profile = builtin("mmb-medium")
        .and_then(|b| Ok(b.profile()?))
        .expect("parses");
    let fast = Plan::resolve(
        &profile,
        &Overrides {
            speed: Some(16.0),
            seed: Some(3),
            ..Overrides::default()
        },
    )
    .expect("resolves");
    let slow = plan(200, 3);
    // Same stream, time divided by 16 (to within rounding to the nanosecond).
    for (f, s) in fast.schedule(4).zip(slow.schedule(4)).take(500) {
        assert_eq!(f.kind, s.kind);
        let diff = (f.at.as_secs_f64() * 16.0 - s.at.as_secs_f64()).abs();
        assert!(diff < 1e-5, "{diff}");
    }
}

#[test]
fn mix_frequencies_follow_weights() {
    let p = plan(200, 77);
    let n = 100_000u64;
    let mut counts = vec![0u64; p.mix().len()];
    for nth in 0..n {
        counts[p.send_choice(nth as u32 % 200, nth).mix] += 1;
    }
    let total: u64 = p.mix().iter().map(|m| m.weight).sum();
    for (m, &c) in p.mix().iter().zip(&counts) {
        let q = m.weight as f64 / total as f64;
        let expected = q * n as f64;
        let sd = (n as f64 * q * (1.0 - q)).sqrt();
        assert!(
            (c as f64 - expected).abs() < 4.5 * sd,
            "{}: {c} vs {expected}",
            m.label
        );
    }
}

#[test]
fn recipients_average_4_7_with_30_percent_lists() {
    let p = plan(200, 11);
    let n = 50_000u64;
    let (mut delivered, mut with_list) = (0usize, 0u64);
    for nth in 0..n {
        let sender = (nth % 200) as u32;
        let c = p.send_choice(sender, nth);
        assert!(!c.direct.is_empty());
        assert!(!c.direct.contains(&sender), "never the sender directly");
        let unique: HashSet<_> = c.direct.iter().collect();
        assert_eq!(unique.len(), c.direct.len());
        if let Some(l) = c.list {
            with_list += 1;
            let members = &p.lists()[l as usize];
            assert!(
                c.direct.iter().all(|d| !members.contains(d)),
                "no double delivery"
            );
        }
        delivered += p.delivered_to(&c).len();
    }
    let fraction = with_list as f64 / n as f64;
    let sd = (0.3 * 0.7 / n as f64).sqrt();
    assert!(
        (fraction - 0.3).abs() < 4.5 * sd,
        "list fraction {fraction}"
    );
    let mean = delivered as f64 / n as f64;
    assert!((mean - 4.7).abs() < 0.05, "mean recipients {mean}");
}

#[test]
fn tiny_populations_do_not_hang() {
    for users in [1, 2, 3, 12] {
        let p = plan(users, 1);
        for nth in 0..200 {
            let c = p.send_choice(0, nth);
            assert!(c.direct.len() < users as usize);
            assert!(!c.direct.contains(&0));
        }
    }
}

#[test]
fn initial_messages_fill_the_folders() {
    let p = plan(200, 8);
    let msgs = p.initial_messages(9);
    assert_eq!(msgs.len(), 205);
    assert!(msgs.iter().all(|m| m.from != 9 && m.from < 200));
    let ids: HashSet<_> = msgs.iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), msgs.len());
    assert_eq!(p.folders()[msgs[0].folder].name, "INBOX");
    assert_eq!(p.pick(9, 4, 40), p.pick(9, 4, 40));
    assert!(p.pick(9, 4, 40) < 40);
}
