//! The plan: a profile plus command-line overrides, reduced to the numbers a run needs.
//!
//! Like goose's test plan, everything is resolved once before any load: users, per-user
//! rates in actions per *real* second after day compression, the mix as cumulative weights,
//! distribution-list membership (from the seed), the initial folder layout and the QoS
//! thresholds. The plan is immutable and cheap to share between tasks.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::day_shape::{ShapeParams, Window};
use crate::error::PlanError;
use crate::groupware::{CalendarParams, GroupwareParams};
use crate::profile::{ActionKind, AttachmentKind, Mode, Profile, ScriptStep, Spread};
use crate::rng::{Rng, domain};
use crate::schedule::Schedule;
use crate::units::HumanDuration;

/// The seed used when none is given. The command line should pick a fresh one and record it.
pub const DEFAULT_SEED: u64 = 1;

/// Values from the command line that replace the profile's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--users`: the number of simulated users.
    pub users: Option<u32>,
    /// `--day`: the length of the simulated day.
    pub day: Option<Duration>,
    /// `--speed`: day compression factor.
    pub speed: Option<f64>,
    /// `--seed`: the run's seed ([`DEFAULT_SEED`] if absent).
    pub seed: Option<u64>,
    /// `--window`: the part of the day the run measures ([`Window::Day`], the
    /// even day, by default).
    pub window: Window,
    /// `--client`: every user imitates this client, whatever the profile's
    /// `[clients]` says.
    pub client: Option<crate::clients::Personality>,
}

/// How often one action happens for one user.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ActionRate {
    /// The action.
    pub kind: ActionKind,
    /// Per simulated day, as in the profile.
    pub per_day: f64,
    /// Per real second after day compression: `per_day * speed / day`, times
    /// the profile's peak factor in the peak-hour and morning windows.
    pub per_second: f64,
}

/// One kind of message from the mix, with sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageType {
    /// The entry's label (e.g. `Ups1k.msg`), or `mix[i]`.
    pub label: String,
    /// Relative weight.
    pub weight: u64,
    /// Text body size in bytes.
    pub body: u64,
    /// The attachment, if any.
    pub attachment: Option<Attachment>,
}

/// An attachment of a [`MessageType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// What it is.
    pub kind: AttachmentKind,
    /// Raw size in bytes (before any transfer encoding).
    pub size: u64,
}

impl MessageType {
    /// Nominal raw content size: body plus attachment.
    pub fn nominal_size(&self) -> u64 {
        self.body + self.attachment.map_or(0, |a| a.size)
    }
}

/// A folder every mailbox has at the start, with its message count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Folder {
    /// IMAP name, e.g. `INBOX`, `Folder7`, `Trash`.
    pub name: String,
    /// Messages it holds after `peakhour init`.
    pub messages: u32,
}

/// One message `peakhour init` puts into a mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialMessage {
    /// Index into [`Plan::folders`].
    pub folder: usize,
    /// Position within that folder (0-based).
    pub position: u32,
    /// Index into [`Plan::mix`].
    pub mix: usize,
    /// The user it appears to come from (another user when there is one).
    pub from: u32,
    /// The peakhour message id (for `X-Peakhour-Id`), unique within a run: makes init idempotent.
    pub id: String,
}

/// The deterministic choices for one message sent by a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendChoice {
    /// Index into [`Plan::mix`].
    pub mix: usize,
    /// Users addressed directly (never the sender, never a member of `list`).
    pub direct: Vec<u32>,
    /// The distribution list addressed, if any.
    pub list: Option<u32>,
    /// The peakhour message id (for `X-Peakhour-Id`).
    pub id: String,
}

/// Per-action parameters the engine follows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ActionParams {
    /// Check inbox: the folder checked.
    pub inbox: String,
    /// Check inbox: how many of the newest messages are fetched.
    pub page_size: u32,
    /// Read: unread messages first.
    pub unread_first: bool,
    /// Move: the folder messages are moved out of.
    pub move_from: String,
    /// Move: the folders messages may be moved into (the profile's folders that are not
    /// special), one picked with [`Plan::pick`]. Not written to the resolved TOML: it is
    /// the profile's folder list again.
    #[serde(skip)]
    pub move_targets: Vec<String>,
    /// Delete: where deleted messages go.
    pub trash: String,
    /// Delete: whether the trash is expunged during the run.
    pub empty_trash: bool,
    /// Send: file a copy in `sent_folder`.
    pub save_copy: bool,
    /// Send: where copies go.
    pub sent_folder: String,
    /// Update calendar: the folder of calendar items.
    pub calendar_folder: String,
}

/// A profile resolved for one run. See the module documentation.
#[derive(Debug, Clone)]
pub struct Plan {
    profile: Profile,
    seed: u64,
    users: u32,
    day: Duration,
    speed: f64,
    mode: Mode,
    pause: Duration,
    script: Vec<ScriptStep>,
    rates: Vec<ActionRate>,
    fixed: Vec<(ActionKind, u64)>,
    mix: Vec<MessageType>,
    cumulative: Vec<u64>,
    lists: Vec<Vec<u32>>,
    direct_mean: f64,
    list_fraction: f64,
    spread: Spread,
    folders: Vec<Folder>,
    params: ActionParams,
    qos_default: f64,
    qos: BTreeMap<ActionKind, f64>,
    groupware: GroupwareParams,
    window: Window,
    shape: Option<ShapeParams>,
    clients: crate::clients::ClientMix,
}

/// `profile` with the command line's overrides, each checked.
fn with_overrides(profile: &Profile, overrides: &Overrides) -> Result<Profile, PlanError> {
    let mut profile = profile.clone();
    if let Some(users) = overrides.users {
        if users == 0 {
            return Err(PlanError::Override {
                option: "users",
                message: "must be at least 1".into(),
            });
        }
        profile.users.count = toml::Spanned::new(0..0, i64::from(users));
    }
    if let Some(day) = overrides.day {
        if day.is_zero() {
            return Err(PlanError::Override {
                option: "day",
                message: "must be longer than 0".into(),
            });
        }
        profile.day = toml::Spanned::new(0..0, HumanDuration(day));
    }
    if let Some(speed) = overrides.speed {
        if !speed.is_finite() || speed <= 0.0 {
            return Err(PlanError::Override {
                option: "speed",
                message: format!("must be greater than 0 (got {})", crate::Readable(speed)),
            });
        }
        profile.speed = toml::Spanned::new(0..0, speed);
    }
    Ok(profile)
}

/// Each action's rate (Poisson mode) or count (fixed mode); `real_day` is
/// the simulated day's length in real seconds.
fn action_rates(
    profile: &Profile,
    real_day: f64,
    factor: f64,
) -> (Vec<ActionRate>, Vec<(ActionKind, u64)>) {
    let mut rates = Vec::new();
    let mut fixed = Vec::new();
    for (kind, f) in profile.actions.frequencies() {
        match profile.mode {
            Mode::Poisson => {
                let per_day = f.per_day.map_or(0.0, |p| *p.get_ref());
                rates.push(ActionRate {
                    kind,
                    per_day,
                    per_second: per_day / real_day * factor,
                });
            }
            Mode::Fixed => {
                let count = f.count.map_or(0, |c| *c.get_ref());
                fixed.push((kind, u64::try_from(count).unwrap_or(0)));
            }
        }
    }
    (rates, fixed)
}

/// The rates' factor over the even day in `window`: 1 for the day, the
/// profile's peak factor for the peak hour and the morning. A window needs a
/// Poisson profile with a `[day_shape]`; the morning, a real-time day.
fn window_factor(
    profile: &Profile,
    window: Window,
    shape: Option<&ShapeParams>,
) -> Result<f64, PlanError> {
    if window == Window::Day {
        return Ok(1.0);
    }
    let refuse =
        |option: &'static str, message: String| Err(PlanError::Override { option, message });
    if profile.mode != Mode::Poisson {
        return refuse(
            "window",
            format!(
                "{window} needs a profile with rates per day (mode = \"poisson\"); `{}` runs a \
                 fixed count per user",
                profile.name
            ),
        );
    }
    let Some(shape) = shape else {
        return refuse(
            "window",
            format!(
                "{window} needs the profile's [day_shape] (when its users work), and `{}` has \
                 none: add one (docs/profiles.md)",
                profile.name
            ),
        );
    };
    let speed = *profile.speed.get_ref();
    if window == Window::Morning && speed != 1.0 {
        // A compressed morning would log everyone on `speed` times faster
        // than they do: another test, not the morning (seed 003).
        return refuse(
            "speed",
            format!(
                "{speed} with --window morning: the morning measures the logon storm at its real \
                 rate, so it runs at speed 1; compress the peak hour instead (--window peak-hour \
                 --speed X)"
            ),
        );
    }
    Ok(shape.peak_factor)
}

/// The message types and their cumulative weights.
fn message_mix(profile: &Profile) -> (Vec<MessageType>, Vec<u64>) {
    let mix: Vec<MessageType> = profile
        .mix
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, m)| MessageType {
            label: m.label.clone().unwrap_or_else(|| format!("mix[{i}]")),
            weight: u64::try_from(*m.weight.get_ref()).unwrap_or(0),
            body: m.body.get_ref().0,
            attachment: m.attachment.as_ref().map(|a| Attachment {
                kind: a.kind,
                size: a.size.get_ref().0,
            }),
        })
        .collect();
    let cumulative = mix
        .iter()
        .scan(0u64, |acc, m| {
            *acc += m.weight;
            Some(*acc)
        })
        .collect();

    (mix, cumulative)
}

/// Every folder a user starts with (the profile's, and those the actions
/// use, even when empty), and the actions' parameters.
fn folders_and_params(profile: &Profile) -> (Vec<Folder>, ActionParams) {
    let mut folders: Vec<Folder> = Vec::new();
    let mut push_folder = |name: String, messages: u32| {
        if let Some(f) = folders.iter_mut().find(|f| f.name == name) {
            f.messages = f.messages.max(messages);
        } else {
            folders.push(Folder { name, messages });
        }
    };
    let mut user_folders = Vec::new();
    for spec in &profile.mailbox.folders {
        let count = u32::try_from(*spec.count.get_ref()).unwrap_or(0);
        let messages = u32::try_from(*spec.messages.get_ref()).unwrap_or(0);
        for n in 1..=count {
            let name = spec.name.get_ref().replace("{n}", &n.to_string());
            user_folders.push(name.clone());
            push_folder(name, messages);
        }
    }
    let a = &profile.actions;
    let params = ActionParams {
        inbox: a
            .check_inbox
            .as_ref()
            .map_or("INBOX".into(), |c| c.folder.clone()),
        page_size: a
            .check_inbox
            .as_ref()
            .map_or(50, |c| u32::try_from(*c.page_size.get_ref()).unwrap_or(50)),
        unread_first: a.read.as_ref().is_none_or(|r| r.unread_first),
        move_from: a
            .move_message
            .as_ref()
            .map_or("INBOX".into(), |m| m.from.clone()),
        move_targets: Vec::new(),
        trash: a
            .delete
            .as_ref()
            .map_or("Trash".into(), |d| d.trash.clone()),
        empty_trash: a.delete.as_ref().is_some_and(|d| d.empty_trash),
        save_copy: a.send.as_ref().is_some_and(|s| s.save_copy),
        sent_folder: a
            .send
            .as_ref()
            .map_or("Sent".into(), |s| s.sent_folder.clone()),
        calendar_folder: a
            .update_calendar
            .as_ref()
            .map_or("Calendar".into(), |u| u.folder.clone()),
    };
    // Folders the actions use exist from the start, even when empty.
    push_folder("INBOX".into(), 0);
    if a.check_inbox.is_some() {
        push_folder(params.inbox.clone(), 0);
    }
    if a.send.is_some() && params.save_copy {
        push_folder(params.sent_folder.clone(), 0);
    }
    if a.delete.is_some() {
        push_folder(params.trash.clone(), 0);
    }
    if a.update_calendar.is_some() {
        push_folder(params.calendar_folder.clone(), 0);
    }
    let special = [
        "INBOX",
        params.inbox.as_str(),
        params.move_from.as_str(),
        params.trash.as_str(),
        params.sent_folder.as_str(),
        params.calendar_folder.as_str(),
    ];
    let move_targets = user_folders
        .into_iter()
        .filter(|f| !special.iter().any(|s| s.eq_ignore_ascii_case(f)))
        .collect();
    let params = ActionParams {
        move_targets,
        ..params
    };

    (folders, params)
}

impl Plan {
    /// Resolves `profile` with `overrides`. The profile must have come from
    /// [`Profile::parse`] (which validates it).
    pub fn resolve(profile: &Profile, overrides: &Overrides) -> Result<Plan, PlanError> {
        let profile = with_overrides(profile, overrides)?;
        let seed = overrides.seed.unwrap_or(DEFAULT_SEED);
        let users =
            u32::try_from(*profile.users.count.get_ref()).map_err(|_| PlanError::Override {
                option: "users",
                message: "the user count must be between 1 and 4294967295".into(),
            })?;
        let day = profile.day();
        let speed = *profile.speed.get_ref();
        let real_day = day.as_secs_f64() / speed;
        let shape = profile.day_shape.as_ref().map(ShapeParams::of);
        let factor = window_factor(&profile, overrides.window, shape.as_ref())?;

        let (rates, fixed) = action_rates(&profile, real_day, factor);
        let pause = profile
            .fixed
            .as_ref()
            .and_then(|f| f.pause.as_ref())
            .map_or(Duration::ZERO, |p| p.get_ref().0);
        let script = profile
            .fixed
            .as_ref()
            .and_then(|f| f.script.as_ref())
            .map(|steps| steps.iter().map(|s| *s.get_ref()).collect())
            .unwrap_or_default();

        let (mix, cumulative) = message_mix(&profile);
        let per_users = u64::try_from(*profile.lists.per_users.get_ref()).unwrap_or(0);
        let list_count = if per_users == 0 {
            0
        } else {
            u64::from(users).div_ceil(per_users)
        };
        let members = *profile.lists.members.get_ref();
        let lists = (0..list_count)
            .map(|i| list_members(seed, i, list_size(i, members, users), users))
            .collect();

        let list_fraction = *profile.recipients.list_fraction.get_ref();
        let direct_mean = *profile.recipients.average.get_ref() - list_fraction * members;

        let (folders, params) = folders_and_params(&profile);
        let qos_default = *profile.qos.p95_ms.get_ref();
        let qos = profile
            .qos
            .actions
            .iter()
            .map(|(k, v)| (*k, *v.get_ref()))
            .collect();
        let groupware = GroupwareParams::resolve(&profile);
        let clients = match (overrides.client, &profile.clients) {
            (Some(client), _) => crate::clients::ClientMix::only(client),
            (None, Some(weights)) => crate::clients::ClientMix::from_weights(weights.get_ref())
                .map_err(|e| PlanError::Override {
                    option: "clients",
                    message: e.to_string(),
                })?,
            (None, None) => crate::clients::ClientMix::default(),
        };
        Ok(Plan {
            clients,
            groupware,
            seed,
            users,
            day,
            speed,
            mode: profile.mode,
            pause,
            script,
            rates,
            fixed,
            mix,
            cumulative,
            lists,
            direct_mean,
            list_fraction,
            spread: profile.recipients.spread,
            folders,
            params,
            qos_default,
            qos,
            window: overrides.window,
            shape,
            profile,
        })
    }

    /// The users' mail clients: `--client`, else the profile's `[clients]`,
    /// else peakhour's own for everyone.
    pub fn client_mix(&self) -> &crate::clients::ClientMix {
        &self.clients
    }

    /// The mail client user `user` imitates.
    pub fn client_of(&self, user: u32) -> crate::clients::Personality {
        self.clients.client_of(self.seed, user)
    }

    /// The profile with the overrides applied (its `to_toml` reads back to the same plan).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }
    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.profile.name
    }
    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The number of simulated users.
    pub fn users(&self) -> u32 {
        self.users
    }
    /// How many users' IMAP sessions share one account
    /// (`users.sessions_per_account`; 1 when each has its own).
    pub fn sessions_per_account(&self) -> u32 {
        u32::try_from(*self.profile.users.sessions_per_account.get_ref())
            .unwrap_or(1)
            .max(1)
    }
    /// The user whose account user `user`'s IMAP session logs on to: the
    /// first of its group of [`Plan::sessions_per_account`] users (the user
    /// itself when accounts are not shared, or when it is beyond the share
    /// `users.shared_accounts` gives to shared ones). Sending, recipients and
    /// delivery tracking stay the user's own.
    pub fn account_of(&self, user: u32) -> u32 {
        let per = self.sessions_per_account();
        if user >= self.shared_users() {
            return user;
        }
        user - user % per
    }
    /// How many users' sessions log on to the account of user `account`
    /// (1: the account is its user's alone, no other session changes it).
    pub fn sessions_on(&self, account: u32) -> u32 {
        let per = self.sessions_per_account();
        let shared = self.shared_users();
        if per == 1 || account >= shared {
            return 1;
        }
        per.min(shared - account)
    }
    /// The users `0..n` whose sessions share accounts
    /// (`users.shared_accounts`, whole groups of `sessions_per_account`;
    /// all of them by default).
    fn shared_users(&self) -> u32 {
        let per = self.sessions_per_account();
        match &self.profile.users.shared_accounts {
            Some(share) if *share.get_ref() < 1.0 => {
                // Whole groups only: a share never leaves a group half full.
                let groups = (f64::from(self.users) * share.get_ref() / f64::from(per)).floor();
                (groups as u32).saturating_mul(per).min(self.users)
            }
            _ => self.users,
        }
    }
    /// The label (a Thunderbird tag: keyword `$label1` to `$label5`) user
    /// `user` gives the message it opens in its `seq`-th read, if this read
    /// labels one (`actions.read.label_share`).
    pub fn label_of_read(&self, user: u32, seq: u64) -> Option<&'static str> {
        const LABELS: [&str; 5] = ["$label1", "$label2", "$label3", "$label4", "$label5"];
        let share = self
            .profile
            .actions
            .read
            .as_ref()
            .and_then(|r| r.label_share.as_ref())
            .map_or(0.0, |s| *s.get_ref());
        // Two picks on their own streams (the high bits keep them apart
        // from the read's own picks of `seq`).
        let drawn = self.pick(user, seq ^ (0b101 << 60), 1_000_000) as f64 / 1_000_000.0;
        (drawn < share).then(|| LABELS[self.pick(user, seq ^ (0b110 << 60), LABELS.len())])
    }
    /// The simulated day.
    pub fn day(&self) -> Duration {
        self.day
    }
    /// The day compression factor.
    pub fn speed(&self) -> f64 {
        self.speed
    }
    /// The real time one simulated day takes: `day / speed` (8h at speed 16 = 30 min).
    pub fn real_day(&self) -> Duration {
        Duration::from_secs_f64(self.day.as_secs_f64() / self.speed)
    }
    /// `poisson` or `fixed`.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// In `fixed` mode, the pause between one action's end and the next one's start.
    pub fn pause(&self) -> Duration {
        self.pause
    }
    /// In `fixed` mode with `fixed.script`, the scripted session every user
    /// follows (empty otherwise).
    pub fn script(&self) -> &[ScriptStep] {
        &self.script
    }
    /// Per-user rates of every action (`poisson` mode; empty in `fixed` mode).
    pub fn rates(&self) -> &[ActionRate] {
        &self.rates
    }
    /// Per-user counts of every action (`fixed` mode; empty in `poisson` mode).
    pub fn fixed_counts(&self) -> &[(ActionKind, u64)] {
        &self.fixed
    }
    /// Every action this profile performs, in [`ActionKind::ALL`] order.
    pub fn actions(&self) -> Vec<ActionKind> {
        match self.mode {
            Mode::Poisson => self.rates.iter().map(|r| r.kind).collect(),
            Mode::Fixed => self.fixed.iter().map(|f| f.0).collect(),
        }
    }
    /// The message mix.
    pub fn mix(&self) -> &[MessageType] {
        &self.mix
    }
    /// Cumulative mix weights: entry `i` is chosen for `r` in
    /// `cumulative[i-1]..cumulative[i]`, `r` uniform below the last value.
    pub fn mix_cumulative(&self) -> &[u64] {
        &self.cumulative
    }
    /// Distribution lists: the (0-based, sorted) user indexes of each list's members.
    pub fn lists(&self) -> &[Vec<u32>] {
        &self.lists
    }
    /// Every mailbox's folders at the start, special folders included.
    pub fn folders(&self) -> &[Folder] {
        &self.folders
    }
    /// Per-action parameters.
    pub fn params(&self) -> &ActionParams {
        &self.params
    }
    /// The calendar each user keeps over CalDAV.
    pub fn calendar(&self) -> &CalendarParams {
        &self.groupware.calendar
    }
    /// How users invite and answer invitations over CalDAV scheduling.
    pub fn invitations(&self) -> &crate::groupware::InvitationParams {
        &self.groupware.invitations
    }
    /// The fraction of POP3 users who leave mail on the server.
    pub(crate) fn leave_on_server_fraction(&self) -> f64 {
        self.groupware.leave_on_server
    }
    /// The p95 threshold (ms) for `kind`.
    pub fn qos_p95_ms(&self, kind: ActionKind) -> f64 {
        self.qos.get(&kind).copied().unwrap_or(self.qos_default)
    }
    /// The profile's `qos.p95_ms`: the weighted p95's limit (ms).
    pub fn qos_weighted_p95_ms(&self) -> f64 {
        self.qos_default
    }
    /// The p95 limit (ms) of `kind` when the profile gives it one of its own
    /// (`[qos.actions]`).
    pub fn qos_action_limit_ms(&self, kind: ActionKind) -> Option<f64> {
        self.qos.get(&kind).copied()
    }
    /// The mean number of direct recipients per message (the average minus list members).
    pub fn direct_mean(&self) -> f64 {
        self.direct_mean
    }
    /// Expected delivered recipients per message (direct plus list members).
    pub fn expected_recipients(&self) -> f64 {
        let members = if self.lists.is_empty() {
            0.0
        } else {
            self.lists.iter().map(Vec::len).sum::<usize>() as f64 / self.lists.len() as f64
        };
        self.direct_mean + self.list_fraction * members
    }

    /// The login name of user `user` (0-based index), e.g. `user8` for index 7.
    pub fn user_name(&self, user: u32) -> String {
        let n = u64::from(self.profile.users.first) + u64::from(user);
        self.profile
            .users
            .name
            .get_ref()
            .replace("{n}", &n.to_string())
    }
    /// The mail address of user `user`.
    pub fn address(&self, user: u32) -> String {
        format!("{}@{}", self.user_name(user), self.profile.users.domain)
    }
    /// The mail address of list `list` (0-based), e.g. `list1@bench.test`.
    pub fn list_address(&self, list: u32) -> String {
        let name = self
            .profile
            .lists
            .name
            .get_ref()
            .replace("{n}", &(u64::from(list) + 1).to_string());
        format!("{name}@{}", self.profile.users.domain)
    }
    /// The mail domain.
    pub fn domain(&self) -> &str {
        &self.profile.users.domain
    }

    /// The part of the day the run measures.
    pub fn window(&self) -> Window {
        self.window
    }
    /// The profile's day shape, if it has one.
    pub fn day_shape(&self) -> Option<&ShapeParams> {
        self.shape.as_ref()
    }
    /// Actions per user in the profile's busiest hour, in real time (no
    /// compression): the day's actions times the peak-hour share. `None`
    /// without a day shape or in fixed mode.
    pub fn peak_actions_per_user_hour(&self) -> Option<f64> {
        let shape = self.shape.as_ref().filter(|_| self.mode == Mode::Poisson)?;
        let per_day: f64 = self.rates.iter().map(|r| r.per_day).sum();
        Some(per_day * shape.peak_hour_share(self.day))
    }
    /// Actions per user per real hour that the run drives: its rates, with
    /// the window and the day compression (`None` in fixed mode).
    pub fn actions_per_user_hour(&self) -> Option<f64> {
        (self.mode == Mode::Poisson)
            .then(|| self.rates.iter().map(|r| r.per_second).sum::<f64>() * 3600.0)
    }
    /// The morning's logon rate for this plan's users (morning window only).
    pub fn logons_per_second(&self) -> Option<f64> {
        let shape = self
            .shape
            .as_ref()
            .filter(|_| self.window == Window::Morning)?;
        Some(shape.logons_per_second(self.users))
    }
    /// When user `user` logs on, from the start of the run: staggered evenly
    /// over `ramp_up` (the day and the peak hour, before measuring), or, in
    /// the morning, one after another at the morning's logon rate, measured.
    pub fn logon_offset(&self, user: u32, ramp_up: Duration) -> Duration {
        match self.logons_per_second() {
            Some(rate) => Duration::from_secs_f64(f64::from(user) / rate),
            None => ramp_up.mul_f64(f64::from(user) / f64::from(self.users.max(1))),
        }
    }
    /// The run's logon phase and measured phase for a `ramp_up` and a window
    /// `length` asked for: as asked, except in the morning, where nothing
    /// comes before the measurement and the measured phase is the whole
    /// logon storm (every user at the logon rate), then `length` of the
    /// first hour.
    pub fn window_phases(&self, ramp_up: Duration, length: Duration) -> (Duration, Duration) {
        match self
            .shape
            .as_ref()
            .filter(|_| self.window == Window::Morning)
        {
            Some(shape) => (Duration::ZERO, shape.storm_length() + length),
            None => (ramp_up, length),
        }
    }
    /// In the morning, where user `user`'s schedule begins (its logon,
    /// since the measured phase's start) and what it does first; `None`
    /// otherwise.
    pub(crate) fn morning_start(&self, user: u32) -> Option<(Duration, &[ActionKind])> {
        let shape = self
            .shape
            .as_ref()
            .filter(|_| self.window == Window::Morning)?;
        Some((
            self.logon_offset(user, Duration::ZERO),
            &shape.first_actions,
        ))
    }

    /// The schedule of user `user`: see [`Schedule`].
    pub fn schedule(&self, user: u32) -> Schedule {
        Schedule::new(self, user)
    }

    /// Picks a mix entry from `rng` by weight.
    pub(crate) fn pick_mix(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0);
        if total == 0 {
            return 0;
        }
        let r = rng.below(total);
        self.cumulative.partition_point(|&c| c <= r)
    }

    /// The choices for the `nth` (0-based) message sent by `user`. Random access: it does
    /// not depend on any other draw.
    pub fn send_choice(&self, user: u32, nth: u64) -> SendChoice {
        let mut rng = Rng::derive(self.seed, domain::SEND, u64::from(user), nth);
        let mix = self.pick_mix(&mut rng);
        let list = if !self.lists.is_empty() && rng.chance(self.list_fraction) {
            Some(rng.below(self.lists.len() as u64) as u32)
        } else {
            None
        };
        let wanted = match self.spread {
            Spread::Poisson => 1 + rng.poisson((self.direct_mean - 1.0).max(0.0)),
            Spread::Fixed => self.direct_mean.round().max(1.0) as u64,
        };
        let members: &[u32] = list.map_or(&[], |l| &self.lists[l as usize]);
        let excluded = |u: u32| u == user || members.binary_search(&u).is_ok();
        let available =
            u64::from(self.users) - 1 - members.iter().filter(|&&m| m != user).count() as u64;
        let count = wanted.min(available) as usize;
        let mut direct = Vec::with_capacity(count);
        if count as u64 * 2 > available {
            // Small population: shuffle the candidates.
            let mut candidates: Vec<u32> = (0..self.users).filter(|&u| !excluded(u)).collect();
            for i in 0..count {
                let j = i + rng.below((candidates.len() - i) as u64) as usize;
                candidates.swap(i, j);
                direct.push(candidates[i]);
            }
        } else {
            while direct.len() < count {
                let u = rng.below(u64::from(self.users)) as u32;
                if !excluded(u) && !direct.contains(&u) {
                    direct.push(u);
                }
            }
        }
        SendChoice {
            mix,
            direct,
            list,
            id: format!("s{user}.{nth}"),
        }
    }

    /// Everyone who receives a message: direct recipients, then list members (a sender who
    /// is a member of the list receives a copy, as from a real server).
    pub fn delivered_to(&self, choice: &SendChoice) -> Vec<u32> {
        let mut out = choice.direct.clone();
        if let Some(l) = choice.list {
            out.extend_from_slice(&self.lists[l as usize]);
        }
        out
    }

    /// The messages `peakhour init` puts into `user`'s mailbox, folder by folder.
    pub fn initial_messages(&self, user: u32) -> Vec<InitialMessage> {
        let mut rng = Rng::derive(self.seed, domain::INIT, u64::from(user), 0);
        let mut out = Vec::new();
        for (fi, folder) in self.folders.iter().enumerate() {
            for position in 0..folder.messages {
                let mix = self.pick_mix(&mut rng);
                let from = if self.users > 1 {
                    let other = rng.below(u64::from(self.users) - 1) as u32;
                    if other >= user { other + 1 } else { other }
                } else {
                    user
                };
                out.push(InitialMessage {
                    folder: fi,
                    position,
                    mix,
                    from,
                    id: format!("i{user}.{fi}.{position}"),
                });
            }
        }
        out
    }

    /// Which of the move targets `user`'s action `seq` moves its message to, as an
    /// index into the profile's `move_targets` (a session indexes its own list, whose
    /// names the server's namespace may have prefixed, in the same order): a pick
    /// independent of the message's (which takes `seq` itself); `None` when the
    /// profile has none. The same choice over IMAP and JMAP, and for the draw of a
    /// Thunderbird user's start.
    pub fn move_target(&self, user: u32, seq: u64) -> Option<usize> {
        let n = self.params.move_targets.len();
        (n > 0).then(|| self.pick(user, seq ^ (1 << 63), n))
    }

    /// A uniform pick in `0..n` for decision `seq` of `user` (e.g. which folder a move
    /// targets). Deterministic, random access. `n` must be > 0.
    pub fn pick(&self, user: u32, seq: u64, n: usize) -> usize {
        let mut rng = Rng::derive(self.seed, domain::CHOICE, u64::from(user), seq);
        rng.below(n.max(1) as u64) as usize
    }

    /// The resolved configuration as TOML, for the run directory: the seed, the derived
    /// numbers, and the effective profile under `[profile]`.
    pub fn to_toml(&self) -> Result<String, PlanError> {
        #[derive(Serialize)]
        struct Rate {
            per_day: f64,
            per_user_per_second: f64,
        }
        #[derive(Serialize)]
        struct Resolved<'a> {
            seed: u64,
            users: u32,
            day: HumanDuration,
            speed: f64,
            real_day: HumanDuration,
            lists: usize,
            direct_recipients_mean: f64,
            expected_recipients: f64,
            window: Window,
            #[serde(skip_serializing_if = "Option::is_none")]
            peak_actions_per_user_hour: Option<f64>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            rates: BTreeMap<&'static str, Rate>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            fixed_counts: BTreeMap<&'static str, u64>,
            mix_cumulative: &'a [u64],
            params: &'a ActionParams,
            #[serde(skip_serializing_if = "Option::is_none")]
            calendar: Option<&'a CalendarParams>,
            profile: &'a Profile,
        }
        let doc = Resolved {
            seed: self.seed,
            users: self.users,
            day: HumanDuration(self.day),
            speed: self.speed,
            real_day: HumanDuration(self.real_day()),
            lists: self.lists.len(),
            direct_recipients_mean: self.direct_mean,
            expected_recipients: self.expected_recipients(),
            window: self.window,
            peak_actions_per_user_hour: self.peak_actions_per_user_hour(),
            rates: self
                .rates
                .iter()
                .map(|r| {
                    (
                        r.kind.name(),
                        Rate {
                            per_day: r.per_day,
                            per_user_per_second: r.per_second,
                        },
                    )
                })
                .collect(),
            fixed_counts: self.fixed.iter().map(|(k, c)| (k.name(), *c)).collect(),
            mix_cumulative: &self.cumulative,
            params: &self.params,
            calendar: self.uses_calendar().then_some(&self.groupware.calendar),
            profile: &self.profile,
        };
        Ok(toml::to_string(&doc)?)
    }
}

/// Size of list `i` so that the sizes average `members` exactly over consecutive lists.
fn list_size(i: u64, members: f64, users: u32) -> u32 {
    let size = ((i + 1) as f64 * members).floor() - (i as f64 * members).floor();
    (size.max(1.0) as u32).min(users)
}

fn list_members(seed: u64, list: u64, size: u32, users: u32) -> Vec<u32> {
    let mut rng = Rng::derive(seed, domain::LISTS, list, 0);
    let mut members: Vec<u32> = Vec::with_capacity(size as usize);
    if u64::from(size) * 2 > u64::from(users) {
        let mut all: Vec<u32> = (0..users).collect();
        for i in 0..size as usize {
            let j = i + rng.below((all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(size as usize);
        members = all;
    } else {
        while members.len() < size as usize {
            let u = rng.below(u64::from(users)) as u32;
            if !members.contains(&u) {
                members.push(u);
            }
        }
    }
    members.sort_unstable();
    members
}
