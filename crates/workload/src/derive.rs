//! Profiles derived from a profile for the planner's atomic tasks
//! (`peakhour tasks`): one action alone at a chosen rate, or the Inbox
//! topped up before an action that empties it. Each comes back as TOML that
//! [`Profile::parse`] accepts, since a `peakhour run` or `init` child reads it
//! from a file.

use crate::{Profile, ProfileError};

/// Why a profile could not be derived.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    /// The profile could not be written as TOML.
    #[error("cannot write the profile as TOML: {0}")]
    Write(#[from] toml::ser::Error),
    /// The written TOML could not be read back as a table.
    #[error("cannot read the profile's TOML back: {0}")]
    Read(#[from] toml::de::Error),
    /// The profile lacks what the derivation changes.
    #[error("the profile has no {0}")]
    Missing(String),
    /// The derived profile does not pass the profile's checks.
    #[error("the derived profile is not valid: {0}")]
    Invalid(#[from] ProfileError),
}

/// `profile` with only `action` left, at `per_day` a day and speed 1, named
/// `NAME-task-ACTION`.
pub fn one_action_profile(
    profile: &Profile,
    action: &str,
    per_day: f64,
) -> Result<String, DeriveError> {
    let mut doc: toml::Table = toml::from_str(&profile.to_toml()?)?;
    doc.insert(
        "name".into(),
        format!("{}-task-{action}", profile.name).into(),
    );
    doc.insert("speed".into(), 1.0.into());
    let actions = doc
        .get_mut("actions")
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| DeriveError::Missing("[actions]".into()))?;
    actions.retain(|k, _| k == action);
    let entry = actions
        .get_mut(action)
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| DeriveError::Missing(format!("[actions.{action}]")))?;
    entry.insert("per_day".into(), per_day.into());
    // The morning's first actions may name only the action kept.
    if let Some(first) = doc
        .get_mut("day_shape")
        .and_then(|shape| shape.get_mut("morning"))
        .and_then(|morning| morning.get_mut("first_actions"))
        .and_then(toml::Value::as_array_mut)
    {
        first.retain(|kind| kind.as_str() == Some(action));
    }
    checked(doc)
}

/// `profile` with its Inbox holding at least `messages` messages.
pub fn inbox_topped_up(profile: &Profile, messages: u64) -> Result<String, DeriveError> {
    let mut doc: toml::Table = toml::from_str(&profile.to_toml()?)?;
    let mailbox = doc
        .entry("mailbox")
        .or_insert_with(|| toml::Table::new().into())
        .as_table_mut()
        .ok_or_else(|| DeriveError::Missing("[mailbox] table".into()))?;
    let folders = mailbox
        .entry("folders")
        .or_insert_with(|| toml::Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| DeriveError::Missing("mailbox.folders list".into()))?;
    let inbox = folders.iter_mut().find_map(|f| {
        let t = f.as_table_mut()?;
        (t.get("name")?.as_str()? == "INBOX").then_some(t)
    });
    let messages = i64::try_from(messages).unwrap_or(i64::MAX);
    match inbox {
        Some(t) => {
            let had = t
                .get("messages")
                .and_then(toml::Value::as_integer)
                .unwrap_or(0);
            t.insert("messages".into(), had.max(messages).into());
        }
        None => {
            let mut t = toml::Table::new();
            t.insert("name".into(), "INBOX".into());
            t.insert("messages".into(), messages.into());
            folders.push(t.into());
        }
    }
    checked(doc)
}

/// The TOML, checked as `peakhour run` will read it.
fn checked(doc: toml::Table) -> Result<String, DeriveError> {
    let text = toml::to_string(&doc)?;
    Profile::parse("derived profile", &text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Overrides, Plan};

    fn medium() -> Profile {
        crate::builtin("mmb-medium")
            .and_then(|b| b.profile().map_err(Into::into))
            .expect("mmb-medium is built in")
    }

    #[test]
    fn a_derived_profile_keeps_one_action_at_the_asked_rate() {
        let text = one_action_profile(&medium(), "read", 14_400.0).expect("derives");
        let derived = Profile::parse("x", &text).expect("parses");
        let plan = Plan::resolve(&derived, &Overrides::default()).expect("resolves");
        let rates = plan.rates();
        assert_eq!(rates.len(), 1);
        assert_eq!(rates[0].kind.name(), "read");
        // 14,400 a day over an 8-hour day at speed 1: one every 2 s.
        assert!((rates[0].per_second - 0.5).abs() < 1e-9);
        assert!(one_action_profile(&medium(), "fly", 1.0).is_err());
    }

    #[test]
    fn the_inbox_is_topped_up_and_nothing_else_changes() {
        let text = inbox_topped_up(&medium(), 60).expect("derives");
        let derived = Profile::parse("x", &text).expect("parses");
        let plan = Plan::resolve(&derived, &Overrides::default()).expect("resolves");
        assert_eq!(plan.rates().len(), 6);
        let inbox: BTreeMap<_, _> = plan
            .folders()
            .iter()
            .map(|f| (f.name.clone(), f.messages))
            .collect();
        assert_eq!(inbox.get("INBOX"), Some(&60));
    }
}
