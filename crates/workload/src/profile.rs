//! The profile: what a simulated user does in a day, declared in TOML.
//!
//! A profile is parsed, then validated with the spans of its values kept
//! ([`toml::Spanned`]), so every error names the file, line, column and field.
//! `docs/profiles.md` documents the format field by field.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::ProfileError;
pub use crate::groupware::{CalendarSpec, ChangeEvent, CreateEvent, DownloadMail, PollCalendar};
use crate::units::{ByteSize, HumanDuration, Readable};

/// One user-visible operation, as in seed 002 Table 3 ("User Action").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Select the Inbox and fetch flags and envelopes of the newest page.
    CheckInbox,
    /// Submit a message over SMTP and file a copy in Sent.
    Send,
    /// Open a message, unread ones first.
    Read,
    /// Move a message from the Inbox to one of the user's folders.
    Move,
    /// Delete a message: it moves to Trash, which is not emptied.
    Delete,
    /// Update the calendar: over CalDAV when the target has a calendar
    /// server (a `calendar-query` REPORT for the week, then a PUT that creates
    /// an event or changes one), else append or replace an item in an IMAP
    /// folder.
    UpdateCalendar,
    /// Poll the calendar home over CalDAV (PROPFIND Depth 1 for the change
    /// tags) and, when the calendar changed, fetch the week (REPORT).
    PollCalendar,
    /// Create an event in working hours over CalDAV (PUT `If-None-Match: *`).
    CreateEvent,
    /// Change an event of the week over CalDAV: REPORT, then PUT with
    /// `If-Match` on its ETag.
    ChangeEvent,
    /// Check the maildrop over POP3 and download what is new (STAT, UIDL,
    /// RETR, then DELE unless the user leaves mail on the server).
    DownloadMail,
}

impl ActionKind {
    /// Every action: seed 002 Table 3's in its order, then the groupware
    /// ones (appended, so that adding them shifted no existing schedule).
    /// Schedules break time ties in this order.
    pub const ALL: [ActionKind; 10] = [
        ActionKind::CheckInbox,
        ActionKind::Send,
        ActionKind::Read,
        ActionKind::Move,
        ActionKind::Delete,
        ActionKind::UpdateCalendar,
        ActionKind::PollCalendar,
        ActionKind::CreateEvent,
        ActionKind::ChangeEvent,
        ActionKind::DownloadMail,
    ];

    /// The name used in profiles, results and reports (`check_inbox`, `send`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::CheckInbox => "check_inbox",
            ActionKind::Send => "send",
            ActionKind::Read => "read",
            ActionKind::Move => "move",
            ActionKind::Delete => "delete",
            ActionKind::UpdateCalendar => "update_calendar",
            ActionKind::PollCalendar => "poll_calendar",
            ActionKind::CreateEvent => "create_event",
            ActionKind::ChangeEvent => "change_event",
            ActionKind::DownloadMail => "download_mail",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How actions are issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Each action arrives as a Poisson process at `per_day` per simulated day (LoadSim, MMB).
    #[default]
    Poisson,
    /// Each user performs each action `count` times, one after the other, then stops
    /// (the GroupWise procedure, seed 000).
    Fixed,
}

/// How many direct recipients a message gets around the mean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spread {
    /// At least one, plus a Poisson-distributed number, so the mean is as configured.
    #[default]
    Poisson,
    /// Exactly the mean, which must then be a whole number.
    Fixed,
}

/// The kind of an attachment, which decides its Content-Type and content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttachmentKind {
    /// A Notepad text file: `text/plain`, sent as 7bit text.
    Text,
    /// A Microsoft Excel spreadsheet: `application/vnd.ms-excel`, base64.
    Spreadsheet,
    /// A Microsoft Word document: `application/msword`, base64.
    Document,
    /// A bitmap picture: `image/bmp` (a valid 24-bit BMP), base64.
    Bitmap,
    /// A spreadsheet object embedded in the body: an inline `application/vnd.ms-excel`
    /// part with a Content-ID, base64.
    EmbeddedSpreadsheet,
}

impl AttachmentKind {
    /// The MIME type of the part.
    pub fn content_type(self) -> &'static str {
        match self {
            AttachmentKind::Text => "text/plain",
            AttachmentKind::Spreadsheet | AttachmentKind::EmbeddedSpreadsheet => {
                "application/vnd.ms-excel"
            }
            AttachmentKind::Document => "application/msword",
            AttachmentKind::Bitmap => "image/bmp",
        }
    }

    /// The file-name extension of the part.
    pub fn extension(self) -> &'static str {
        match self {
            AttachmentKind::Text => "txt",
            AttachmentKind::Spreadsheet | AttachmentKind::EmbeddedSpreadsheet => "xls",
            AttachmentKind::Document => "doc",
            AttachmentKind::Bitmap => "bmp",
        }
    }
}

fn default_day() -> Spanned<HumanDuration> {
    unplaced(HumanDuration(Duration::from_secs(8 * 3600)))
}
fn default_speed() -> Spanned<f64> {
    unplaced(1.0)
}
fn default_one_i() -> Spanned<i64> {
    unplaced(1)
}
fn default_zero_i() -> Spanned<i64> {
    unplaced(0)
}
fn default_zero_f() -> Spanned<f64> {
    unplaced(0.0)
}
fn default_members() -> Spanned<f64> {
    unplaced(10.0)
}
fn default_page_size() -> Spanned<i64> {
    unplaced(50)
}
fn default_p95() -> Spanned<f64> {
    unplaced(1000.0)
}
fn default_user_name() -> Spanned<String> {
    unplaced("user{n}".to_owned())
}
fn default_list_name() -> Spanned<String> {
    unplaced("list{n}".to_owned())
}
fn default_domain() -> String {
    "bench.test".to_owned()
}
fn default_inbox() -> String {
    "INBOX".to_owned()
}
fn default_sent() -> String {
    "Sent".to_owned()
}
fn default_trash() -> String {
    "Trash".to_owned()
}
fn default_calendar() -> String {
    "Calendar".to_owned()
}
fn default_true() -> bool {
    true
}
fn default_first() -> u32 {
    1
}
fn default_sessions_per_account() -> Spanned<i64> {
    Spanned::new(0..0, 1)
}
fn is_one_session(v: &Spanned<i64>) -> bool {
    *v.get_ref() == 1
}
/// The most sessions that may share one account (`users.sessions_per_account`):
/// imaptest's checkpoints compare a handful; more only add load on one mailbox.
pub(crate) const MAX_SESSIONS_PER_ACCOUNT: i64 = 64;

/// A value that was not written in the file (span 0..0: errors about it have no place).
pub(crate) fn unplaced<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// A whole profile, as written in TOML.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name, e.g. `mmb-medium`.
    pub name: String,
    /// One line saying what the profile models.
    pub description: String,
    /// Length of the simulated day (`"8h"`); `per_day` counts are spread over it.
    #[serde(default = "default_day")]
    pub day: Spanned<HumanDuration>,
    /// Day compression: the simulated day runs in `day / speed` of real time.
    #[serde(default = "default_speed")]
    pub speed: Spanned<f64>,
    /// `poisson` (rates per day) or `fixed` (a fixed count per user, then stop).
    #[serde(default)]
    pub mode: Mode,
    /// Settings of `fixed` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<Fixed>,
    /// The user population.
    pub users: Users,
    /// Distribution lists.
    #[serde(default)]
    pub lists: Lists,
    /// Recipients per message (a profile that sends nothing may leave it out).
    #[serde(default)]
    pub recipients: Recipients,
    /// Starting state of every mailbox, brought about by `peakhour init`.
    #[serde(default)]
    pub mailbox: Mailbox,
    /// Response-time thresholds for the verdict.
    #[serde(default)]
    pub qos: Qos,
    /// The calendar each user keeps over CalDAV, for the calendar actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<CalendarSpec>,
    /// When the users work: the busiest hour, who is connected then, the
    /// morning logon (`run --window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_shape: Option<crate::day_shape::DayShape>,
    /// What users do, and how often.
    pub actions: Actions,
    /// The mail clients the users imitate, by weight (`thunderbird = 0.6,
    /// roundcube = 0.4`); every user is peakhour's own client without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<Spanned<BTreeMap<String, f64>>>,
    /// The message mix, chosen by weight for every message sent or created
    /// (a profile that neither sends nor fills folders may leave it out).
    #[serde(default = "no_mix")]
    pub mix: Spanned<Vec<MixEntry>>,
}

fn no_mix() -> Spanned<Vec<MixEntry>> {
    unplaced(Vec::new())
}

/// Settings of `fixed` mode.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixed {
    /// Pause between one action's end and the next one's start. Default 0: back to back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Spanned<HumanDuration>>,
    /// A scripted session: each user does these actions in this order, each
    /// at its offset from the steady phase's start (LoadSim's test script
    /// with the times a recorded user clicked). Replaces the counts' order
    /// and the pause; each action's `count` must equal how often it appears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<Spanned<ScriptStep>>>,
}

/// One step of a scripted session (`fixed.script`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    /// What the user does.
    pub action: ActionKind,
    /// When, from the steady phase's start; a step whose predecessor is still
    /// running starts when it ends, and its latency counts from this time.
    pub at: HumanDuration,
}

/// The user population.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Users {
    /// How many users (overridable with `--users`).
    pub count: Spanned<i64>,
    /// Login name pattern; `{n}` is the user number.
    #[serde(default = "default_user_name")]
    pub name: Spanned<String>,
    /// The number of the first user.
    #[serde(default = "default_first")]
    pub first: u32,
    /// The mail domain.
    #[serde(default = "default_domain")]
    pub domain: String,
    /// How many simulated users' IMAP sessions log on to one account, as
    /// imaptest's users share mailboxes (issue 27): with 2, users 0 and 1
    /// both open the first one's mailbox. Default 1: one account each.
    #[serde(
        default = "default_sessions_per_account",
        skip_serializing_if = "is_one_session"
    )]
    pub sessions_per_account: Spanned<i64>,
    /// The share of the users (0 to 1) whose sessions share accounts by
    /// `sessions_per_account`; the others each have their own. Default 1:
    /// every user shares. A run that mixes both makes its checkpoints
    /// compare shared mailboxes and its sole writers' STOREs checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_accounts: Option<Spanned<f64>>,
}

/// Distribution lists.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    /// One list per this many users, rounded up; 0 means no lists.
    #[serde(default = "default_zero_i")]
    pub per_users: Spanned<i64>,
    /// Average number of members of a list.
    #[serde(default = "default_members")]
    pub members: Spanned<f64>,
    /// Address pattern of a list; `{n}` is the list number (from 1).
    #[serde(default = "default_list_name")]
    pub name: Spanned<String>,
}

impl Default for Lists {
    fn default() -> Self {
        Lists {
            per_users: default_zero_i(),
            members: default_members(),
            name: default_list_name(),
        }
    }
}

/// Recipients per message.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipients {
    /// Average delivered recipients per message, list members included.
    pub average: Spanned<f64>,
    /// Fraction of messages that have one distribution-list recipient.
    #[serde(default = "default_zero_f")]
    pub list_fraction: Spanned<f64>,
    /// How the number of direct recipients varies around its mean.
    #[serde(default)]
    pub spread: Spread,
}

/// One direct recipient and no lists: what a profile that sends nothing
/// gets when it leaves `[recipients]` out.
impl Default for Recipients {
    fn default() -> Self {
        Recipients {
            average: unplaced(1.0),
            list_fraction: default_zero_f(),
            spread: Spread::default(),
        }
    }
}

/// Starting state of every mailbox.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mailbox {
    /// Folders and how many messages each holds.
    #[serde(default)]
    pub folders: Vec<FolderSpec>,
}

/// One folder, or `count` folders named by a pattern.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderSpec {
    /// Folder name; with `count` > 1 it must contain `{n}` (numbered from 1).
    pub name: Spanned<String>,
    /// How many folders this entry makes.
    #[serde(default = "default_one_i")]
    pub count: Spanned<i64>,
    /// Messages in each of these folders, drawn from the mix.
    #[serde(default = "default_zero_i")]
    pub messages: Spanned<i64>,
}

/// Response-time thresholds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Qos {
    /// Every action's 95th percentile must be at most this many milliseconds.
    #[serde(default = "default_p95")]
    pub p95_ms: Spanned<f64>,
    /// Per-action thresholds that replace `p95_ms` for that action.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actions: BTreeMap<ActionKind, Spanned<f64>>,
}

impl Default for Qos {
    fn default() -> Self {
        Qos {
            p95_ms: default_p95(),
            actions: BTreeMap::new(),
        }
    }
}

/// What users do. An absent action is never performed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actions {
    /// Check the Inbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_inbox: Option<CheckInbox>,
    /// Send a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<Send>,
    /// Read a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Read>,
    /// Move a message.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "move")]
    pub move_message: Option<Move>,
    /// Delete a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<Delete>,
    /// Update the calendar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_calendar: Option<UpdateCalendar>,
    /// Poll the calendar home (CalDAV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_calendar: Option<PollCalendar>,
    /// Create an event (CalDAV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_event: Option<CreateEvent>,
    /// Change an event (CalDAV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_event: Option<ChangeEvent>,
    /// Download new mail over POP3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_mail: Option<DownloadMail>,
}

/// How often an action happens: `per_day` in `poisson` mode, `count` in `fixed` mode.
#[derive(Debug, Clone)]
pub(crate) struct Frequency {
    pub(crate) per_day: Option<Spanned<f64>>,
    pub(crate) count: Option<Spanned<i64>>,
}

/// `[actions.check_inbox]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckInbox {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// How many of the newest messages have their flags and envelopes fetched.
    #[serde(default = "default_page_size")]
    pub page_size: Spanned<i64>,
    /// The folder checked.
    #[serde(default = "default_inbox")]
    pub folder: String,
}

/// `[actions.send]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Send {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// File a copy of each sent message in `sent_folder`.
    #[serde(default = "default_true")]
    pub save_copy: bool,
    /// Where copies of sent messages go.
    #[serde(default = "default_sent")]
    pub sent_folder: String,
}

/// `[actions.read]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Read {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// Open unread messages before read ones.
    #[serde(default = "default_true")]
    pub unread_first: bool,
    /// The share (0 to 1) of opened messages the user also tags with a
    /// label, as Thunderbird's tags (keywords `$label1` to `$label5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_share: Option<Spanned<f64>>,
}

/// `[actions.move]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Move {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// The folder messages are moved out of.
    #[serde(default = "default_inbox")]
    pub from: String,
}

/// `[actions.delete]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delete {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// Deleted messages are moved here.
    #[serde(default = "default_trash")]
    pub trash: String,
    /// Expunge the trash during the run (MMB: no).
    #[serde(default)]
    pub empty_trash: bool,
}

/// `[actions.update_calendar]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateCalendar {
    /// Actions per simulated day (`poisson` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<Spanned<f64>>,
    /// Actions per user in total (`fixed` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Spanned<i64>>,
    /// The IMAP folder that holds calendar items when the target has no
    /// CalDAV server.
    #[serde(default = "default_calendar")]
    pub folder: String,
}

/// One kind of message in the mix.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    /// A name for the entry (LoadSim's `.msg` file name, for instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Relative weight when a message is chosen at random.
    pub weight: Spanned<i64>,
    /// Size of the text body.
    pub body: Spanned<ByteSize>,
    /// An optional attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<AttachmentSpec>,
}

/// An attachment of a mix entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentSpec {
    /// Size of the attachment's raw content (before base64).
    pub size: Spanned<ByteSize>,
    /// What the attachment is.
    #[serde(rename = "type")]
    pub kind: AttachmentKind,
}

impl Actions {
    /// (kind, per_day, count) of every present action, in [`ActionKind::ALL`] order.
    pub(crate) fn frequencies(&self) -> Vec<(ActionKind, Frequency)> {
        let mut out = Vec::new();
        macro_rules! push {
            ($field:ident, $kind:expr) => {
                if let Some(a) = &self.$field {
                    out.push((
                        $kind,
                        Frequency {
                            per_day: a.per_day.clone(),
                            count: a.count.clone(),
                        },
                    ));
                }
            };
        }
        push!(check_inbox, ActionKind::CheckInbox);
        push!(send, ActionKind::Send);
        push!(read, ActionKind::Read);
        push!(move_message, ActionKind::Move);
        push!(delete, ActionKind::Delete);
        push!(update_calendar, ActionKind::UpdateCalendar);
        push!(poll_calendar, ActionKind::PollCalendar);
        push!(create_event, ActionKind::CreateEvent);
        push!(change_event, ActionKind::ChangeEvent);
        push!(download_mail, ActionKind::DownloadMail);
        out
    }
}

impl Profile {
    /// Parses and validates a profile. `file` is used only in error messages.
    pub fn parse(file: &str, source: &str) -> Result<Profile, ProfileError> {
        let de = toml::Deserializer::parse(source)
            .map_err(|e| toml_error(file, source, &e, String::new()))?;
        let profile: Profile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            toml_error(file, source, e.inner(), path)
        })?;
        profile.validate(file, source)?;
        Ok(profile)
    }

    /// Writes the profile as TOML (without comments); [`Profile::parse`] reads it back.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }

    /// The simulated day.
    pub fn day(&self) -> Duration {
        self.day.get_ref().0
    }

    /// Semantic checks after parsing, each pointing at the offending value.
    pub(crate) fn validate(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        if self.day.get_ref().0.is_zero() {
            return Err(err(self.day.span(), "day", "must be longer than 0".into()));
        }
        positive_f(&self.speed, "speed", file, src)?;
        if let Some(clients) = &self.clients {
            crate::clients::ClientMix::from_weights(clients.get_ref())
                .map_err(|e| err(clients.span(), "clients", e.to_string()))?;
        }
        let users = non_negative(&self.users.count, "users.count", file, src)?;
        if users == 0 {
            return Err(err(
                self.users.count.span(),
                "users.count",
                "must be at least 1".into(),
            ));
        }
        pattern(&self.users.name, "users.name", file, src)?;
        let sharing = &self.users.sessions_per_account;
        if !(1..=MAX_SESSIONS_PER_ACCOUNT).contains(sharing.get_ref()) {
            return Err(err(
                sharing.span(),
                "users.sessions_per_account",
                format!(
                    "must be 1 to {MAX_SESSIONS_PER_ACCOUNT} (got {})",
                    sharing.get_ref()
                ),
            ));
        }
        let shares = [
            (&self.users.shared_accounts, "users.shared_accounts"),
            (
                &self
                    .actions
                    .read
                    .as_ref()
                    .and_then(|r| r.label_share.clone()),
                "actions.read.label_share",
            ),
        ];
        for (share, field) in shares {
            if let Some(share) = share
                && !(0.0..=1.0).contains(share.get_ref())
            {
                return Err(err(
                    share.span(),
                    field,
                    format!(
                        "must be between 0 and 1 (got {})",
                        Readable(*share.get_ref())
                    ),
                ));
            }
        }
        let lists_per = non_negative(&self.lists.per_users, "lists.per_users", file, src)?;
        positive_f(&self.lists.members, "lists.members", file, src)?;
        pattern(&self.lists.name, "lists.name", file, src)?;
        self.validate_addresses(file, src)?;

        self.validate_actions(file, src)?;
        self.validate_recipients(file, src, lists_per)?;
        self.validate_mix(file, src)?;
        self.validate_mailbox(file, src)?;
        // QoS.
        positive_f(&self.qos.p95_ms, "qos.p95_ms", file, src)?;
        for (kind, v) in &self.qos.actions {
            positive_f(v, &format!("qos.actions.{kind}"), file, src)?;
        }
        crate::groupware::validate(self, file, src)?;
        crate::day_shape::validate(self, file, src)?;
        if self.mode == Mode::Poisson && self.fixed.is_some() {
            return Err(ProfileError::at(
                file,
                src,
                None,
                "fixed",
                "the [fixed] table needs mode = \"fixed\"",
            ));
        }
        self.validate_script(file, src)?;
        self.check_bounds(file, src)
    }

    /// A scripted session's steps come in time order, name configured
    /// actions, and tally to the actions' counts, so that the counts the
    /// results report are what the script does.
    fn validate_script(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let Some(fixed) = &self.fixed else {
            return Ok(());
        };
        let Some(script) = &fixed.script else {
            return Ok(());
        };
        let err = |span: Option<Range<usize>>, field: String, msg: String| {
            ProfileError::at(file, src, span, field, msg)
        };
        if let Some(pause) = &fixed.pause {
            return Err(err(
                Some(pause.span()),
                "fixed.pause".into(),
                "a scripted session times each step itself: give `fixed.pause` or \
                 `fixed.script`, not both"
                    .into(),
            ));
        }
        if script.len() > bounds::MAX_SCRIPT_STEPS {
            return Err(err(
                None,
                "fixed.script".into(),
                format!(
                    "{} steps; at most {} are allowed",
                    script.len(),
                    bounds::MAX_SCRIPT_STEPS
                ),
            ));
        }
        let counts: BTreeMap<ActionKind, i64> = self
            .actions
            .frequencies()
            .into_iter()
            .filter_map(|(kind, f)| f.count.map(|c| (kind, *c.get_ref())))
            .collect();
        let mut previous = Duration::ZERO;
        let mut tally: BTreeMap<ActionKind, i64> = BTreeMap::new();
        for (i, step) in script.iter().enumerate() {
            let field = format!("fixed.script[{i}]");
            let ScriptStep { action, at } = *step.get_ref();
            if !counts.contains_key(&action) {
                return Err(err(
                    Some(step.span()),
                    field,
                    format!("`{action}` is not among the profile's [actions.*]"),
                ));
            }
            if at.0 < previous {
                return Err(err(
                    Some(step.span()),
                    field,
                    format!(
                        "at {at} comes before the step above it ({}): steps go in time order",
                        HumanDuration(previous)
                    ),
                ));
            }
            if at.0 > bounds::MAX_DAY {
                return Err(err(
                    Some(step.span()),
                    field,
                    format!("at {at} is beyond {}", HumanDuration(bounds::MAX_DAY)),
                ));
            }
            previous = at.0;
            *tally.entry(action).or_default() += 1;
        }
        for (kind, count) in counts {
            let named = tally.get(&kind).copied().unwrap_or(0);
            if named != count {
                return Err(err(
                    None,
                    format!("actions.{kind}.count"),
                    format!(
                        "is {count}, but fixed.script names `{kind}` {named} times: with a \
                         script, each count is how often the script does the action"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The users' and the lists' addresses, as their patterns give them, pass
    /// the one address check ([`crate::address::check_address`]): a pattern
    /// such as `user{n}%gmail.com` or `@gmail.com:user{n}` is refused here,
    /// before any run (issue 26, item 4). The number does not change the
    /// verdict (digits are allowed wherever `{n}` stands), so one is tried.
    fn validate_addresses(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let domain = &self.users.domain;
        if let Err(fault) = crate::address::check_domain(domain) {
            let message = format!("{domain:?} is not a mail domain: it {fault}");
            return Err(ProfileError::at(file, src, None, "users.domain", message));
        }
        for (name, field) in [
            (&self.users.name, "users.name"),
            (&self.lists.name, "lists.name"),
        ] {
            let address = format!("{}@{domain}", name.get_ref().replace("{n}", "1"));
            if let Err(error) = crate::address::check_address(&address) {
                let message = format!("`{}` gives {error}", name.get_ref());
                return Err(ProfileError::at(
                    file,
                    src,
                    Some(name.span()),
                    field,
                    message,
                ));
            }
        }
        Ok(())
    }

    /// Every action has a frequency in the profile's mode, and a page size of at least 1.
    fn validate_actions(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        let freqs = self.actions.frequencies();
        if freqs.is_empty() {
            return Err(ProfileError::at(
                file,
                src,
                None,
                "actions",
                "no action is configured",
            ));
        }
        for (kind, f) in &freqs {
            let base = format!("actions.{kind}");
            match self.mode {
                Mode::Poisson => {
                    if let Some(c) = &f.count {
                        return Err(err(
                            c.span(),
                            &format!("{base}.count"),
                            "`count` is for mode = \"fixed\"; use `per_day` in poisson mode".into(),
                        ));
                    }
                    match &f.per_day {
                        Some(p) => {
                            let v = *p.get_ref();
                            if !v.is_finite() || v < 0.0 {
                                return Err(err(
                                    p.span(),
                                    &format!("{base}.per_day"),
                                    format!("must be a count of 0 or more (got {})", Readable(v)),
                                ));
                            }
                        }
                        None => {
                            return Err(ProfileError::at(
                                file,
                                src,
                                None,
                                format!("{base}.per_day"),
                                "missing: how many times per simulated day",
                            ));
                        }
                    }
                }
                Mode::Fixed => {
                    if let Some(p) = &f.per_day {
                        return Err(err(
                            p.span(),
                            &format!("{base}.per_day"),
                            "`per_day` is for mode = \"poisson\"; use `count` in fixed mode".into(),
                        ));
                    }
                    match &f.count {
                        Some(c) => {
                            non_negative(c, &format!("{base}.count"), file, src)?;
                        }
                        None => {
                            return Err(ProfileError::at(
                                file,
                                src,
                                None,
                                format!("{base}.count"),
                                "missing: how many times each user does it",
                            ));
                        }
                    }
                }
            }
        }
        if let Some(ci) = &self.actions.check_inbox
            && *ci.page_size.get_ref() < 1
        {
            return Err(err(
                ci.page_size.span(),
                "actions.check_inbox.page_size",
                "must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Recipients per message: at least one direct, lists only if there are some.
    fn validate_recipients(
        &self,
        file: &str,
        src: &str,
        lists_per: i64,
    ) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        // Recipients.
        let avg = *self.recipients.average.get_ref();
        if !avg.is_finite() || avg < 1.0 {
            return Err(err(
                self.recipients.average.span(),
                "recipients.average",
                format!("must be at least 1 (got {})", Readable(avg)),
            ));
        }
        let lf = *self.recipients.list_fraction.get_ref();
        if !(0.0..=1.0).contains(&lf) {
            return Err(err(
                self.recipients.list_fraction.span(),
                "recipients.list_fraction",
                format!("must be between 0 and 1 (got {})", Readable(lf)),
            ));
        }
        if lf > 0.0 && lists_per == 0 {
            return Err(err(
                self.recipients.list_fraction.span(),
                "recipients.list_fraction",
                "messages go to lists but there are none: set lists.per_users".into(),
            ));
        }
        let direct = avg - lf * self.lists.members.get_ref();
        if direct < 1.0 - 1e-9 {
            return Err(err(
                self.recipients.average.span(),
                "recipients.average",
                format!(
                    "{} is too small: lists alone add {} on average and every message has \
                     at least one direct recipient",
                    Readable(avg),
                    Readable(lf * self.lists.members.get_ref())
                ),
            ));
        }
        if self.recipients.spread == Spread::Fixed && (direct - direct.round()).abs() > 1e-9 {
            return Err(err(
                self.recipients.average.span(),
                "recipients.average",
                format!(
                    "spread = \"fixed\" needs a whole number of direct recipients (got {})",
                    Readable(direct)
                ),
            ));
        }
        Ok(())
    }

    /// The message mix, when the profile sends or fills folders.
    fn validate_mix(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        // Mix: needed by a profile that sends or fills folders.
        let mix = self.mix.get_ref();
        if mix.is_empty() && self.needs_messages() {
            return Err(err(
                self.mix.span(),
                "mix",
                "needs at least one entry".into(),
            ));
        }
        let mut total = 0i64;
        for (i, m) in mix.iter().enumerate() {
            // Saturating: each weight's own bound is checked later.
            total = total.saturating_add(non_negative(
                &m.weight,
                &format!("mix[{i}].weight"),
                file,
                src,
            )?);
        }
        if total == 0 && !mix.is_empty() {
            return Err(err(
                self.mix.span(),
                "mix",
                "the weights sum to zero".into(),
            ));
        }
        Ok(())
    }

    /// The starting folders: named, and told apart by `{n}` when several.
    fn validate_mailbox(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let err = |span: Range<usize>, field: &str, msg: String| {
            ProfileError::at(file, src, Some(span), field, msg)
        };
        // Mailbox.
        for (i, f) in self.mailbox.folders.iter().enumerate() {
            let count = non_negative(&f.count, &format!("mailbox.folders[{i}].count"), file, src)?;
            non_negative(
                &f.messages,
                &format!("mailbox.folders[{i}].messages"),
                file,
                src,
            )?;
            let name = f.name.get_ref();
            if name.trim().is_empty() {
                return Err(err(
                    f.name.span(),
                    &format!("mailbox.folders[{i}].name"),
                    "must not be empty".into(),
                ));
            }
            if count > 1 && !name.contains("{n}") {
                return Err(err(
                    f.name.span(),
                    &format!("mailbox.folders[{i}].name"),
                    format!("{count} folders need `{{n}}` in the name to tell them apart"),
                ));
            }
        }
        Ok(())
    }

    /// Upper bounds on every number, so that a typo (`per_day = 1e12`,
    /// `body = "900MB"`) is refused with the field named instead of
    /// exhausting memory, overflowing arithmetic or flooding the server.
    /// [`bounds`] gives the limits; docs/reliability.md lists them.
    fn check_bounds(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let too_big = |span: Range<usize>, field: &str, got: String, max: String| {
            ProfileError::at(
                file,
                src,
                Some(span),
                field,
                format!("{got} is more than the limit of {max}"),
            )
        };
        let count = |v: &Spanned<i64>, field: &str, max: i64| {
            let x = *v.get_ref();
            (x <= max)
                .then_some(())
                .ok_or_else(|| too_big(v.span(), field, x.to_string(), max.to_string()))
        };
        let number = |v: &Spanned<f64>, field: &str, max: f64| {
            let x = *v.get_ref();
            (x <= max).then_some(()).ok_or_else(|| {
                let (x, max) = (Readable(x), Readable(max));
                too_big(v.span(), field, x.to_string(), max.to_string())
            })
        };
        let duration = |v: &Spanned<HumanDuration>, field: &str, max: Duration| {
            let x = v.get_ref().0;
            (x <= max).then_some(()).ok_or_else(|| {
                too_big(
                    v.span(),
                    field,
                    HumanDuration(x).to_string(),
                    HumanDuration(max).to_string(),
                )
            })
        };
        duration(&self.day, "day", bounds::MAX_DAY)?;
        number(&self.speed, "speed", bounds::MAX_SPEED)?;
        count(&self.users.count, "users.count", bounds::MAX_USERS)?;
        count(&self.lists.per_users, "lists.per_users", bounds::MAX_USERS)?;
        number(
            &self.lists.members,
            "lists.members",
            bounds::MAX_LIST_MEMBERS,
        )?;
        number(
            &self.recipients.average,
            "recipients.average",
            bounds::MAX_RECIPIENTS,
        )?;
        if let Some(pause) = self.fixed.as_ref().and_then(|f| f.pause.as_ref()) {
            duration(pause, "fixed.pause", bounds::MAX_DAY)?;
        }
        for (kind, f) in self.actions.frequencies() {
            if let Some(p) = &f.per_day {
                number(p, &format!("actions.{kind}.per_day"), bounds::MAX_PER_DAY)?;
            }
            if let Some(c) = &f.count {
                count(c, &format!("actions.{kind}.count"), bounds::MAX_FIXED_COUNT)?;
            }
        }
        if let Some(ci) = &self.actions.check_inbox {
            count(
                &ci.page_size,
                "actions.check_inbox.page_size",
                bounds::MAX_PAGE_SIZE,
            )?;
        }
        let mix = self.mix.get_ref();
        if mix.len() > bounds::MAX_MIX_ENTRIES {
            return Err(too_big(
                self.mix.span(),
                "mix",
                format!("{} entries", mix.len()),
                bounds::MAX_MIX_ENTRIES.to_string(),
            ));
        }
        for (i, m) in mix.iter().enumerate() {
            count(&m.weight, &format!("mix[{i}].weight"), bounds::MAX_WEIGHT)?;
            let attachment = m.attachment.as_ref().map_or(0, |a| a.size.get_ref().0);
            let size = m.body.get_ref().0.saturating_add(attachment);
            if size > bounds::MAX_MESSAGE_BYTES {
                return Err(too_big(
                    m.body.span(),
                    &format!("mix[{i}]"),
                    format!("a message of {} (body and attachment)", ByteSize(size)),
                    ByteSize(bounds::MAX_MESSAGE_BYTES).to_string(),
                ));
            }
        }
        self.check_mailbox_bounds(file, src)?;
        number(&self.qos.p95_ms, "qos.p95_ms", bounds::MAX_QOS_MS)?;
        for (kind, v) in &self.qos.actions {
            number(v, &format!("qos.actions.{kind}"), bounds::MAX_QOS_MS)?;
        }
        Ok(())
    }

    /// The starting mailbox's part of [`Profile::check_bounds`].
    fn check_mailbox_bounds(&self, file: &str, src: &str) -> Result<(), ProfileError> {
        let too_big = |span: Range<usize>, field: &str, got: String, max: String| {
            ProfileError::at(
                file,
                src,
                Some(span),
                field,
                format!("{got} is more than the limit of {max}"),
            )
        };
        let count = |v: &Spanned<i64>, field: &str, max: i64| {
            let x = *v.get_ref();
            (x <= max)
                .then_some(())
                .ok_or_else(|| too_big(v.span(), field, x.to_string(), max.to_string()))
        };
        let mut folders = 0_i64;
        let mut messages = 0_i64;
        for (i, f) in self.mailbox.folders.iter().enumerate() {
            count(
                &f.count,
                &format!("mailbox.folders[{i}].count"),
                bounds::MAX_FOLDERS,
            )?;
            count(
                &f.messages,
                &format!("mailbox.folders[{i}].messages"),
                bounds::MAX_MESSAGES_PER_FOLDER,
            )?;
            folders += f.count.get_ref();
            messages += f.count.get_ref() * f.messages.get_ref();
            if folders > bounds::MAX_FOLDERS || messages > bounds::MAX_MESSAGES_PER_MAILBOX {
                return Err(too_big(
                    f.count.span(),
                    "mailbox.folders",
                    format!("{folders} folders holding {messages} messages"),
                    format!(
                        "{} folders and {} messages per mailbox",
                        bounds::MAX_FOLDERS,
                        bounds::MAX_MESSAGES_PER_MAILBOX
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The largest values a profile may hold. Each is far beyond any workload
/// the seeds describe, and small enough that memory and arithmetic stay
/// bounded.
pub mod bounds {
    use std::time::Duration;

    /// Simulated users (`users.count`), as many as the lab can create.
    pub const MAX_USERS: i64 = 1_000_000;
    /// The simulated day: a month.
    pub const MAX_DAY: Duration = Duration::from_secs(31 * 24 * 3600);
    /// Day compression.
    pub const MAX_SPEED: f64 = 100_000.0;
    /// One action's `per_day`, per user (the heaviest MMB user does a few
    /// hundred actions a day).
    pub const MAX_PER_DAY: f64 = 100_000.0;
    /// One action's `count` per user in fixed mode.
    pub const MAX_FIXED_COUNT: i64 = 1_000_000;
    /// Steps of a scripted session (`fixed.script`).
    pub const MAX_SCRIPT_STEPS: usize = 100_000;
    /// Members of a distribution list, on average.
    pub const MAX_LIST_MEMBERS: f64 = 10_000.0;
    /// Recipients of a message, on average.
    pub const MAX_RECIPIENTS: f64 = 1_000.0;
    /// Messages fetched by a check of the Inbox.
    pub const MAX_PAGE_SIZE: i64 = 10_000;
    /// Entries of the message mix.
    pub const MAX_MIX_ENTRIES: usize = 1_000;
    /// One mix entry's weight.
    pub const MAX_WEIGHT: i64 = 1_000_000_000;
    /// One message: body and attachment before encoding. 32 MiB grows to
    /// about 43 MiB in base64, under the IMAP client's 64 MiB literal limit,
    /// so that every message sent can be read back.
    pub const MAX_MESSAGE_BYTES: u64 = 32 * 1024 * 1024;
    /// Folders of a mailbox at the start.
    pub const MAX_FOLDERS: i64 = 1_000;
    /// Messages of one folder at the start.
    pub const MAX_MESSAGES_PER_FOLDER: i64 = 1_000_000;
    /// Messages of one mailbox at the start, all folders together.
    pub const MAX_MESSAGES_PER_MAILBOX: i64 = 1_000_000;
    /// A p95 limit: an hour.
    pub const MAX_QOS_MS: f64 = 3_600_000.0;
}

fn non_negative(v: &Spanned<i64>, field: &str, file: &str, src: &str) -> Result<i64, ProfileError> {
    let x = *v.get_ref();
    if x < 0 {
        return Err(ProfileError::at(
            file,
            src,
            Some(v.span()),
            field,
            format!("must not be negative (got {x})"),
        ));
    }
    Ok(x)
}

fn positive_f(v: &Spanned<f64>, field: &str, file: &str, src: &str) -> Result<f64, ProfileError> {
    let x = *v.get_ref();
    if !x.is_finite() || x <= 0.0 {
        return Err(ProfileError::at(
            file,
            src,
            Some(v.span()),
            field,
            format!("must be greater than 0 (got {})", Readable(x)),
        ));
    }
    Ok(x)
}

fn pattern(v: &Spanned<String>, field: &str, file: &str, src: &str) -> Result<(), ProfileError> {
    if !v.get_ref().contains("{n}") {
        return Err(ProfileError::at(
            file,
            src,
            Some(v.span()),
            field,
            format!("`{}` must contain `{{n}}`", v.get_ref()),
        ));
    }
    Ok(())
}

/// Turns a toml error plus the serde path into a [`ProfileError`] naming the field.
pub(crate) fn toml_error(
    file: &str,
    source: &str,
    e: &toml::de::Error,
    path: String,
) -> ProfileError {
    let message = e.message().trim().to_owned();
    // serde_spanned's private wrapper fields are not the user's business.
    // Their array index (`$__serde_spanned_private_value[0]`) belongs to the previous key.
    let mut field = String::new();
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        if seg.starts_with("$__") {
            field.push_str(seg.find('[').map_or("", |i| &seg[i..]));
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(seg);
        }
    }
    // For an unknown or missing field the path may stop at the enclosing table; name the
    // field itself.
    if let Some(rest) = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("missing field `"))
        && let Some(end) = rest.find('`')
        && !field.ends_with(&rest[..end])
    {
        if !field.is_empty() {
            field.push('.');
        }
        field.push_str(&rest[..end]);
    }
    if field.is_empty() {
        field.push_str("(document)");
    }
    ProfileError::at(file, source, e.span(), field, message)
}
