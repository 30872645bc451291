//! A profile's rates as the planner takes them (`peakhour plan`): every
//! action's and the logons' rate per user and real hour at the profile's
//! speed (or another), and the recipients per message.

use peakhour_analysis::plan::ProfileRates;
use peakhour_workload::{Overrides, Plan, PlanError, Profile};

/// The rates per user and real hour of `profile`, at its own speed or `speed`.
pub fn profile_rates(profile: &Profile, speed: Option<f64>) -> Result<ProfileRates, PlanError> {
    let overrides = Overrides {
        speed,
        ..Overrides::default()
    };
    let plan = Plan::resolve(profile, &overrides)?;
    Ok(ProfileRates {
        actions_per_hour: plan
            .rates()
            .iter()
            .map(|r| (r.kind.name().to_owned(), r.per_second * 3600.0))
            .collect(),
        logons_per_hour: plan.speed() * 3600.0 / plan.day().as_secs_f64(),
        recipients_average: *profile.recipients.average.get_ref(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]
    use super::*;

    fn medium() -> Profile {
        peakhour_workload::builtin("mmb-medium")
            .unwrap()
            .profile()
            .unwrap()
    }

    #[test]
    fn rates_are_per_user_and_real_hour_and_scale_with_the_speed() {
        let profile = medium();
        let own = profile_rates(&profile, None).unwrap();
        let plan = Plan::resolve(&profile, &Overrides::default()).unwrap();
        assert_eq!(own.actions_per_hour.len(), plan.rates().len());
        let day_hours = plan.day().as_secs_f64() / 3600.0;
        assert_eq!(own.logons_per_hour, plan.speed() / day_hours);
        let doubled = profile_rates(&profile, Some(plan.speed() * 2.0)).unwrap();
        for (action, rate) in &own.actions_per_hour {
            let twice = doubled.actions_per_hour[action];
            assert!(
                (twice - 2.0 * rate).abs() < 1e-9 * twice.max(1.0),
                "{action}"
            );
        }
        assert_eq!(doubled.recipients_average, own.recipients_average);
    }
}
