//! A profile's per-user rates as the plan takes them (docs/planner.md,
//! "Inputs"): which measured task stands for what a user does, how often.

use std::collections::BTreeMap;

use super::TaskSet;

/// What a profile asks of each user, per real hour, at the speed planned
/// for.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRates {
    /// Every action of the profile: its resolved rate per real second × 3600.
    pub actions_per_hour: BTreeMap<String, f64>,
    /// Logons: one per simulated day.
    pub logons_per_hour: f64,
    /// Recipients per message sent, on average.
    pub recipients_average: f64,
}

/// The rates per user-hour of each measured task, and notes for the plan's
/// warnings:
///
/// * every action at its rate; `logon` once a simulated day;
/// * `idle_session`: the sessions each user holds (a session-hour task);
/// * `deliver` only when `send` was not measured: a `send` task's window
///   holds the deliveries its messages caused (Postfix and Dovecot's LMTP
///   run in the same lab), so adding `deliver` for every recipient would
///   charge them twice; without `send`, deliveries are send rate ×
///   recipients.
///
/// Rates of tasks that were not measured are left out, and named in a note.
pub fn per_user_rates(
    profile: &ProfileRates,
    sessions_per_user: f64,
    tasks: &TaskSet,
) -> (BTreeMap<String, f64>, Vec<String>) {
    let mut rates = profile.actions_per_hour.clone();
    let mut notes = Vec::new();
    rates.insert("logon".to_owned(), profile.logons_per_hour);
    rates.insert("idle_session".to_owned(), sessions_per_user);
    if let Some(send) = rates.get("send").copied() {
        if tasks.task("send").is_some() {
            notes.push(
                "deliver is not added: the send task's window already holds the deliveries its messages caused"
                    .to_owned(),
            );
        } else if tasks.task("deliver").is_some() {
            rates.insert("deliver".to_owned(), send * profile.recipients_average);
        }
    }
    let missing: Vec<String> = rates
        .keys()
        .filter(|name| tasks.task(name).is_none())
        .cloned()
        .collect();
    for name in &missing {
        rates.remove(name);
    }
    if !missing.is_empty() {
        notes.push(format!(
            "no measured task for {}: left out of the plan",
            missing.join(", ")
        ));
    }
    (rates, notes)
}
