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
use crate::units::{HumanDuration, Readable};

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
    /// After each PUT of an event the client reads it back (GET), as a
    /// client that refreshes an item it stored. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_back: bool,
}

impl Default for CalendarSpec {
    fn default() -> Self {
        CalendarSpec {
            name: default_calendar_name(),
            events: default_events(),
            event_length: default_event_length(),
            first_hour: default_first_hour(),
            last_hour: default_last_hour(),
            read_back: false,
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
    /// How long after an invitation is seen in the schedule inbox the user
    /// answers it: a log-normal delay with this mode (its peak), in
    /// simulated time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_delay_mode: Option<Spanned<HumanDuration>>,
    /// ... and this median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_delay_median: Option<Spanned<HumanDuration>>,
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
    /// The share of new events (0 to 1) that are invitations: the user
    /// organizes them and invites other users of the population, where the
    /// server schedules (RFC 6638). 0 (the default) invites no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invitations: Option<Spanned<f64>>,
    /// Attendees an invitation has: a log-normal count with this mode ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attendees_mode: Option<Spanned<f64>>,
    /// ... this median ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attendees_median: Option<Spanned<f64>>,
    /// ... and at most this many (and never more than the other users).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attendees_max: Option<Spanned<i64>>,
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
    if let Some(create) = &profile.actions.create_event {
        validate_invitations(create, &err)?;
    }
    if let Some(poll) = &profile.actions.poll_calendar
        && let (Some(mode), Some(median)) = (&poll.answer_delay_mode, &poll.answer_delay_median)
        && mode.get_ref().0 > median.get_ref().0
    {
        return Err(err(
            median.span(),
            "actions.poll_calendar.answer_delay_median",
            "must be at least answer_delay_mode (a log-normal's median is at or above its mode)"
                .into(),
        ));
    }
    if let Some(download) = &profile.actions.download_mail {
        let fraction = *download.leave_on_server.get_ref();
        if !(0.0..=1.0).contains(&fraction) {
            return Err(err(
                download.leave_on_server.span(),
                "actions.download_mail.leave_on_server",
                format!(
                    "must be a fraction between 0 and 1 (got {})",
                    Readable(fraction)
                ),
            ));
        }
    }
    Ok(())
}

fn validate_invitations(
    create: &CreateEvent,
    err: &impl Fn(Range<usize>, &str, String) -> ProfileError,
) -> Result<(), ProfileError> {
    if let Some(share) = &create.invitations
        && !(0.0..=1.0).contains(share.get_ref())
    {
        return Err(err(
            share.span(),
            "actions.create_event.invitations",
            format!(
                "must be a fraction between 0 and 1 (got {})",
                Readable(*share.get_ref())
            ),
        ));
    }
    let mode = create.attendees_mode.as_ref().map_or(1.0, |m| *m.get_ref());
    if let Some(m) = &create.attendees_mode
        && !(1.0..=1000.0).contains(&mode)
    {
        return Err(err(
            m.span(),
            "actions.create_event.attendees_mode",
            format!("must be between 1 and 1000 (got {})", Readable(mode)),
        ));
    }
    if let Some(median) = &create.attendees_median
        && !(mode..=1000.0).contains(median.get_ref())
    {
        return Err(err(
            median.span(),
            "actions.create_event.attendees_median",
            format!(
                "must be between attendees_mode ({}) and 1000 (got {})",
                Readable(mode),
                Readable(*median.get_ref())
            ),
        ));
    }
    if let Some(max) = &create.attendees_max
        && !(1..=1000).contains(max.get_ref())
    {
        return Err(err(
            max.span(),
            "actions.create_event.attendees_max",
            format!("must be between 1 and 1000 (got {})", max.get_ref()),
        ));
    }
    Ok(())
}

/// How users invite each other and answer invitations, resolved from
/// `[actions.create_event]` and `[actions.poll_calendar]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvitationParams {
    /// The share of new events that are invitations.
    pub share: f64,
    /// The attendee count's log-normal mode.
    pub attendees_mode: f64,
    /// Its median.
    pub attendees_median: f64,
    /// Its cap.
    pub attendees_max: u32,
    /// The answer delay's log-normal mode (simulated time).
    pub answer_delay_mode: HumanDuration,
    /// Its median.
    pub answer_delay_median: HumanDuration,
}

impl InvitationParams {
    fn resolve(profile: &Profile) -> InvitationParams {
        let create = profile.actions.create_event.as_ref();
        let poll = profile.actions.poll_calendar.as_ref();
        let real = |v: Option<&Spanned<f64>>, default: f64| v.map_or(default, |v| *v.get_ref());
        let delay = |v: Option<&Spanned<HumanDuration>>, default: u64| {
            v.map_or(HumanDuration(Duration::from_secs(default)), |v| {
                *v.get_ref()
            })
        };
        // The defaults, for a profile that invites but leaves these out, are
        // the CalendarServer simulator's (docs/profiles.md, `caldav-office`).
        InvitationParams {
            share: real(create.and_then(|c| c.invitations.as_ref()), 0.0),
            attendees_mode: real(create.and_then(|c| c.attendees_mode.as_ref()), 6.0),
            attendees_median: real(create.and_then(|c| c.attendees_median.as_ref()), 8.0),
            attendees_max: create
                .and_then(|c| c.attendees_max.as_ref())
                .map_or(60, |m| u32::try_from(*m.get_ref()).unwrap_or(60)),
            answer_delay_mode: delay(poll.and_then(|p| p.answer_delay_mode.as_ref()), 300),
            answer_delay_median: delay(poll.and_then(|p| p.answer_delay_median.as_ref()), 1800),
        }
    }
}

/// A log-normal draw with `mode` and `median` (both > 0, mode <= median):
/// `mu = ln median`, `sigma^2 = ln(median / mode)`, from two uniforms
/// (Box-Muller).
fn log_normal(rng: &mut Rng, mode: f64, median: f64) -> f64 {
    let mu = median.ln();
    let sigma = (median / mode).ln().max(0.0).sqrt();
    let u1 = 1.0 - rng.unit(); // in (0, 1]: ln is finite
    let u2 = rng.unit();
    let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (mu + sigma * normal).exp()
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
    /// Each PUT of an event is read back (GET).
    pub read_back: bool,
}

/// The groupware parts of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupwareParams {
    pub(crate) calendar: CalendarParams,
    pub(crate) invitations: InvitationParams,
    /// Fraction of POP3 users who leave mail on the server.
    pub(crate) leave_on_server: f64,
}

impl GroupwareParams {
    pub(crate) fn resolve(profile: &Profile) -> GroupwareParams {
        let spec = profile.calendar.clone().unwrap_or_default();
        let hour = |v: &Spanned<i64>| u32::try_from(*v.get_ref()).unwrap_or(0).min(23);
        GroupwareParams {
            invitations: InvitationParams::resolve(profile),
            calendar: CalendarParams {
                name: spec.name,
                initial_events: u32::try_from(*spec.events.get_ref()).unwrap_or(0),
                event_length: *spec.event_length.get_ref(),
                first_hour: hour(&spec.first_hour),
                last_hour: hour(&spec.last_hour),
                read_back: spec.read_back,
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

/// The first `b` of the streams that decide whether an event is an
/// invitation and whom it invites.
const INVITATIONS: u64 = 1 << 61;
/// The first `b` of the answer delays' stream.
const ANSWER_DELAYS: u64 = 1 << 60;

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

    /// The attendees (0-based user indexes, never `user` itself, none
    /// twice, all below `population`) of the `nth` event `user` creates, if
    /// that event is an invitation; empty if it is not. The CalendarServer
    /// simulator's Inviter: a log-normal count, each attendee drawn "close
    /// to" the organizer (its index plus 0 to 98, ten tries each), here
    /// wrapping around the population rather than falling off its end.
    pub fn invitees(&self, user: u32, nth: u64, population: u32) -> Vec<u32> {
        let params = self.invitations();
        let mut rng = Rng::derive(
            self.seed(),
            domain::CALENDAR,
            u64::from(user),
            INVITATIONS + nth,
        );
        if population < 2 || !rng.chance(params.share) {
            return Vec::new();
        }
        let drawn = log_normal(&mut rng, params.attendees_mode, params.attendees_median);
        // int() of the draw, as the simulator; at least one, or it is no invitation.
        let count = (drawn.floor() as u32)
            .clamp(1, params.attendees_max.max(1))
            .min(population - 1);
        let mut invitees = Vec::with_capacity(count as usize);
        for _ in 0..count {
            for _ in 0..10 {
                let offset = rng.below(99);
                let candidate = ((u64::from(user) + offset) % u64::from(population)) as u32;
                if candidate != user && !invitees.contains(&candidate) {
                    invitees.push(candidate);
                    break;
                }
            }
        }
        invitees
    }

    /// How long, in real time (the simulated delay over the speed), `user`
    /// waits before answering the `n`th invitation it sees.
    pub fn answer_delay(&self, user: u32, n: u64) -> Duration {
        let params = self.invitations();
        let mut rng = Rng::derive(
            self.seed(),
            domain::CALENDAR,
            u64::from(user),
            ANSWER_DELAYS + n,
        );
        let mode = params.answer_delay_mode.0.as_secs_f64().max(0.001);
        let median = params.answer_delay_median.0.as_secs_f64().max(mode);
        let simulated = log_normal(&mut rng, mode, median).min(7.0 * 86_400.0);
        Duration::from_secs_f64(simulated / self.speed())
    }

    /// True if `user`, a POP3 user, leaves downloaded mail on the server
    /// (a fixed share of the users, picked by the seed).
    pub fn leaves_mail_on_server(&self, user: u32) -> bool {
        let fraction = self.leave_on_server_fraction();
        fraction > 0.0
            && Rng::derive(self.seed(), domain::POP3, u64::from(user), 0).chance(fraction)
    }
}
