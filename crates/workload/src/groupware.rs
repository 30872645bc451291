//! The groupware side of a profile: the calendar a user keeps over CalDAV
//! (`[calendar]`, `[actions.poll_calendar]`, `[actions.create_event]`,
//! `[actions.change_event]`) and the mail a POP3 user downloads
//! (`[actions.download_mail]`), with the plan's deterministic choices for
//! them: when a new event starts, and which users leave mail on the server.

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::ProfileError;
use crate::plan::Plan;
use crate::profile::{ActionKind, Profile, unplaced};
use crate::rng::{Rng, domain};
use crate::units::HumanDuration;

/// The most events `init` may put into one calendar.
pub const MAX_INITIAL_EVENTS: i64 = 10_000;

fn default_calendar_name() -> String {
    "calendar".to_owned()
}
fn default_events() -> Spanned<i64> {
    unplaced(0)
}
fn default_event_length() -> Spanned<HumanDuration> {
    unplaced(HumanDuration(Duration::from_secs(3600)))
}
fn default_first_hour() -> Spanned<i64> {
    unplaced(8)
}
fn default_last_hour() -> Spanned<i64> {
    unplaced(16)
}
fn default_leave_on_server() -> Spanned<f64> {
    unplaced(0.0)
}

/// `[calendar]`: the calendar collection each user keeps over CalDAV.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarSpec {
    /// The collection's name under the user's calendar home
    /// (`/user1/calendar/`).
    #[serde(default = "default_calendar_name")]
    pub name: String,
    /// Events `peakhour init` puts into each calendar, in the working hours
    /// of the week it runs in.
    #[serde(default = "default_events")]
    pub events: Spanned<i64>,
    /// How long each event lasts.
    #[serde(default = "default_event_length")]
    pub event_length: Spanned<HumanDuration>,
    /// The earliest hour (UTC, 0–23) an event starts at.
    #[serde(default = "default_first_hour")]
    pub first_hour: Spanned<i64>,
    /// The latest hour (UTC, 0–23) an event starts at.
    #[serde(default = "default_last_hour")]
    pub last_hour: Spanned<i64>,
}

impl Default for CalendarSpec {
    fn default() -> Self {
        CalendarSpec {
            name: default_calendar_name(),
            events: default_events(),
            event_length: default_event_length(),
            first_hour: default_first_hour(),
            last_hour: default_last_hour(),
        }
    }
}

/// `[actions.poll_calendar]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollCalendar {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
}

/// `[actions.create_event]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
}

/// `[actions.change_event]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeEvent {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
}

/// `[actions.download_mail]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownloadMail {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// The fraction of users (0 to 1) who leave downloaded mail on the
    /// server; the others delete it (DELE) once downloaded.
    #[serde(default = "default_leave_on_server")]
    pub leave_on_server: Spanned<f64>,
}

impl Profile {
    /// True if the profile needs messages from its mix: it sends, or `init`
    /// fills folders.
    pub(crate) fn needs_messages(&self) -> bool {
        self.actions.send.is_some()
            || self
                .mailbox
                .folders
                .iter()
                .any(|f| *f.messages.get_ref() > 0 && *f.count.get_ref() > 0)
    }
}

/// Checks the groupware tables, each error pointing at its value.
pub(crate) fn validate(profile: &Profile, file: &str, src: &str) -> Result<(), ProfileError> {
    let err = |span: Range<usize>, field: &str, message: String| {
        ProfileError::at(file, src, Some(span), field, message)
    };
    // `[recipients]` may be left out only by a profile that sends nothing;
    // an unwritten value has an empty span at 0.
    if profile.actions.send.is_some() && profile.recipients.average.span() == (0..0) {
        return Err(ProfileError::at(
            file,
            src,
            None,
            "recipients",
            "missing: a profile that sends needs [recipients] (at least `average`)",
        ));
    }
    if let Some(calendar) = &profile.calendar {
        if calendar.name.is_empty()
            || calendar
                .name
                .chars()
                .any(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        {
            return Err(ProfileError::at(
                file,
                src,
                None,
                "calendar.name",
                format!(
                    "`{}` must be a non-empty path segment of letters, digits, `-`, `_` or `.`",
                    calendar.name
                ),
            ));
        }
        let events = *calendar.events.get_ref();
        if !(0..=MAX_INITIAL_EVENTS).contains(&events) {
            return Err(err(
                calendar.events.span(),
                "calendar.events",
                format!("must be between 0 and {MAX_INITIAL_EVENTS} (got {events})"),
            ));
        }
        let length = calendar.event_length.get_ref().0;
        if length.is_zero() || length > Duration::from_secs(24 * 3600) {
            return Err(err(
                calendar.event_length.span(),
                "calendar.event_length",
                format!(
                    "must be longer than 0 and at most 24h (got {})",
                    HumanDuration(length)
                ),
            ));
        }
        let first = *calendar.first_hour.get_ref();
        if !(0..=23).contains(&first) {
            return Err(err(
                calendar.first_hour.span(),
                "calendar.first_hour",
                format!("must be an hour from 0 to 23 (got {first})"),
            ));
        }
        let last = *calendar.last_hour.get_ref();
        if !(first..=23).contains(&last) {
            return Err(err(
                calendar.last_hour.span(),
                "calendar.last_hour",
                format!("must be an hour from first_hour ({first}) to 23 (got {last})"),
            ));
        }
    }
    if let Some(download) = &profile.actions.download_mail {
        let fraction = *download.leave_on_server.get_ref();
        if !(0.0..=1.0).contains(&fraction) {
            return Err(err(
                download.leave_on_server.span(),
                "actions.download_mail.leave_on_server",
                format!("must be a fraction between 0 and 1 (got {fraction})"),
            ));
        }
    }
    Ok(())
}

/// The calendar settings a run follows, resolved from `[calendar]` (or its
/// defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CalendarParams {
    /// The collection's name under each calendar home.
    pub name: String,
    /// Events `init` puts into each calendar.
    pub initial_events: u32,
    /// How long each event lasts.
    pub event_length: HumanDuration,
    /// The earliest start hour (UTC).
    pub first_hour: u32,
    /// The latest start hour (UTC).
    pub last_hour: u32,
}

/// The groupware parts of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupwareParams {
    pub(crate) calendar: CalendarParams,
    /// Fraction of POP3 users who leave mail on the server.
    pub(crate) leave_on_server: f64,
}

impl GroupwareParams {
    pub(crate) fn resolve(profile: &Profile) -> GroupwareParams {
        let spec = profile.calendar.clone().unwrap_or_default();
        let hour = |v: &Spanned<i64>| u32::try_from(*v.get_ref()).unwrap_or(0).min(23);
        GroupwareParams {
            calendar: CalendarParams {
                name: spec.name,
                initial_events: u32::try_from(*spec.events.get_ref()).unwrap_or(0),
                event_length: *spec.event_length.get_ref(),
                first_hour: hour(&spec.first_hour),
                last_hour: hour(&spec.last_hour),
            },
            leave_on_server: profile
                .actions
                .download_mail
                .as_ref()
                .map_or(0.0, |d| *d.leave_on_server.get_ref()),
        }
    }
}

/// When an event starts within its week: a working day and a time of day
/// on the half hour, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSlot {
    /// Days after Monday: 0 (Monday) to 4 (Friday).
    pub weekday: u32,
    /// Hour, from the calendar's `first_hour` to its `last_hour`.
    pub hour: u32,
    /// 0 or 30.
    pub minute: u32,
}

impl EventSlot {
    /// Seconds from the start of the week (Monday 00:00) to this slot.
    pub fn offset_in_week(&self) -> i64 {
        i64::from(self.weekday) * 86_400 + i64::from(self.hour) * 3600 + i64::from(self.minute) * 60
    }
}

/// The first `b` of the init's event stream: run-time creations count from
/// 0, init's events from here, so that the two never share a stream.
const INIT_EVENTS: u64 = 1 << 62;

impl Plan {
    /// True if any action works on the calendar.
    pub fn uses_calendar(&self) -> bool {
        self.actions().iter().any(|k| {
            matches!(
                k,
                ActionKind::UpdateCalendar
                    | ActionKind::PollCalendar
                    | ActionKind::CreateEvent
                    | ActionKind::ChangeEvent
            )
        })
    }

    /// True if any action needs a calendar server: those that exist only
    /// over CalDAV (`update_calendar` falls back to IMAP).
    pub fn needs_caldav(&self) -> bool {
        self.actions().iter().any(|k| {
            matches!(
                k,
                ActionKind::PollCalendar | ActionKind::CreateEvent | ActionKind::ChangeEvent
            )
        })
    }

    /// When the `nth` (0-based) event `user` creates during a run starts.
    /// Random access, like [`Plan::send_choice`].
    pub fn event_slot(&self, user: u32, nth: u64) -> EventSlot {
        self.slot(user, nth)
    }

    /// When the `index`th event `init` puts into `user`'s calendar starts.
    pub fn initial_event_slot(&self, user: u32, index: u32) -> EventSlot {
        self.slot(user, INIT_EVENTS + u64::from(index))
    }

    fn slot(&self, user: u32, b: u64) -> EventSlot {
        let calendar = self.calendar();
        let mut rng = Rng::derive(self.seed(), domain::CALENDAR, u64::from(user), b);
        let hours = u64::from(calendar.last_hour.saturating_sub(calendar.first_hour)) + 1;
        EventSlot {
            weekday: rng.below(5) as u32,
            hour: calendar.first_hour + rng.below(hours) as u32,
            minute: if rng.chance(0.5) { 30 } else { 0 },
        }
    }

    /// True if `user`, a POP3 user, leaves downloaded mail on the server
    /// (a fixed share of the users, picked by the seed).
    pub fn leaves_mail_on_server(&self, user: u32) -> bool {
        let fraction = self.leave_on_server_fraction();
        fraction > 0.0
            && Rng::derive(self.seed(), domain::POP3, u64::from(user), 0).chance(fraction)
    }
}
