//! The groupware side of a simulated user: its calendar client (CalDAV) and
//! its POP3 client, beside the mail session (`crate::sessions::imap`, `jmap`).
//!
//! A user holds only the clients its profile uses. One whose actions need
//! no IMAP (a `caldav-office` or `pop3-user` user) never opens an IMAP
//! session: it counts as logged on from its logon slot to the end of the
//! run, as a calendar or POP3 client that is running but holds no
//! connection between requests. `update_calendar` is CalDAV when the target
//! has a CalDAV server and stays an IMAP append otherwise.

use std::collections::BTreeMap;

use peakhour_workload::{ActionKind, Plan};

use crate::connector::Connector;
use crate::events::Event;
use crate::population::Population;
use crate::sessions::caldav::CalendarUser;
use crate::sessions::pop3::Pop3Mailbox;
use crate::sessions::{Shared, needs_imap};
use crate::target::Target;

/// One user's groupware clients. See the module documentation.
#[derive(Debug)]
pub(crate) struct GroupwareClients {
    pub(crate) calendar: Option<CalendarUser>,
    pub(crate) pop3: Option<Pop3Mailbox>,
    imap_needed: bool,
    /// Logged on without an IMAP session (see the module documentation).
    online: bool,
}

impl GroupwareClients {
    /// The clients user `index` of the run needs.
    pub(crate) fn new<C: Connector>(shared: &Shared<C>, index: u32, address: &str) -> Self {
        let (plan, target) = (&shared.plan, &shared.target);
        let calendar = match &target.caldav {
            Some(endpoint) if plan.uses_calendar() => Some(
                CalendarUser::new(
                    target,
                    endpoint,
                    index,
                    address,
                    &shared.run_id,
                    shared.action_timeout,
                    shared.connect_timeout,
                )
                // state checks: the calendar client's checker
                .checked_by(
                    shared
                        .state_checks
                        .as_ref()
                        .map(|h| h.caldav_session(address.to_owned())),
                ),
            ),
            _ => None,
        };
        let pop3 = plan
            .actions()
            .contains(&ActionKind::DownloadMail)
            .then(|| Pop3Mailbox::new(plan.leaves_mail_on_server(index)));
        GroupwareClients {
            calendar,
            pop3,
            imap_needed: needs_imap(plan, target.caldav.is_some()),
            online: false,
        }
    }

    /// True if this user keeps an IMAP session.
    pub(crate) fn imap_needed(&self) -> bool {
        self.imap_needed
    }

    /// True if the user is logged on without an IMAP session.
    pub(crate) fn online(&self) -> bool {
        self.online
    }

    /// Logs a user without IMAP on (once).
    pub(crate) fn go_online<C: Connector>(&mut self, shared: &Shared<C>) {
        if !self.online {
            self.online = true;
            shared.events.send(Event::LoggedOn(1));
        }
    }

    /// Logs it off at the end of the run.
    pub(crate) fn go_offline<C: Connector>(&mut self, shared: &Shared<C>) {
        if self.online {
            self.online = false;
            shared.events.send(Event::LoggedOn(-1));
        }
    }
}

/// Why the groupware servers a profile needs are not usable.
#[derive(Debug, thiserror::Error)]
pub enum GroupwareCheckError {
    /// The profile's calendar actions need CalDAV and the target has none.
    #[error(
        "the profile's calendar actions need a CalDAV server: give --caldav URL (or start the lab with one)"
    )]
    NoCalDav,
    /// The profile downloads mail over POP3 and the target has no POP3 server.
    #[error("the profile downloads mail over POP3: give --pop3 URL")]
    NoPop3,
    /// The first user could not find its calendar.
    #[error("CalDAV at {endpoint} is not usable: {reason}")]
    CalDav {
        /// The server.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
    /// The first user could not log in over POP3.
    #[error("POP3 at {endpoint} is not usable: {reason}")]
    Pop3 {
        /// The server.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
}

/// Checks, before any load, the servers the profile's groupware actions
/// need: that they are given, that the first user finds its calendar
/// (made by `peakhour init`), and that it can log in over POP3. Nothing is
/// checked for a profile that uses neither. Returns what the servers offer,
/// for the record: `pop3`, the POP3 server's CAPA lines after login; and,
/// for a profile that invites, `caldav`, the CalDAV server's DAV classes
/// (`OPTIONS`): without `calendar-auto-schedule` the invitations are skipped.
pub(crate) async fn groupware_preflight(
    plan: &Plan,
    target: &Target,
    population: &Population,
    timeout: std::time::Duration,
) -> Result<BTreeMap<String, Vec<String>>, GroupwareCheckError> {
    let mut offered = BTreeMap::new();
    let address = population.address(0).unwrap_or_default();
    if plan.needs_caldav() && target.caldav.is_none() {
        return Err(GroupwareCheckError::NoCalDav);
    }
    if let Some(endpoint) = &target.caldav
        && plan.uses_calendar()
    {
        let invites = plan.invitations().share > 0.0;
        let classes = crate::sessions::caldav::check_calendar(
            plan, target, endpoint, &address, timeout, invites,
        )
        .await
        .map_err(|reason| GroupwareCheckError::CalDav {
            endpoint: endpoint.to_string(),
            reason,
        })?;
        if let Some(classes) = classes {
            offered.insert("caldav".to_owned(), classes);
        }
    }
    if plan.actions().contains(&ActionKind::DownloadMail) {
        let endpoint = target.pop3.as_ref().ok_or(GroupwareCheckError::NoPop3)?;
        let capa = crate::sessions::pop3::check_login(target, &address, timeout)
            .await
            .map_err(|failure| GroupwareCheckError::Pop3 {
                endpoint: endpoint.to_string(),
                reason: failure.kind,
            })?;
        if !capa.is_empty() {
            offered.insert("pop3".to_owned(), capa);
        }
    }
    Ok(offered)
}

#[cfg(test)]
mod tests {
    use peakhour_workload::{Overrides, builtin};

    use super::*;
    use crate::run::MailProtocol;
    use crate::sessions::action_protocols;

    fn plan(name: &str) -> Plan {
        let profile = builtin(name).unwrap().profile().unwrap();
        Plan::resolve(&profile, &Overrides::default()).unwrap()
    }

    #[test]
    fn only_users_that_need_it_hold_an_imap_session() {
        // Calendar users and POP3 users do not; MMB users do, with CalDAV or not.
        assert!(!needs_imap(&plan("caldav-office"), true));
        assert!(!needs_imap(&plan("pop3-user"), false));
        assert!(needs_imap(&plan("mmb-medium"), true));
        assert!(needs_imap(&plan("mmb-medium"), false));
    }

    #[test]
    fn over_jmap_the_mail_actions_are_jmap_and_the_groupware_ones_keep_theirs() {
        let tls = peakhour_net::TlsSettings::default()
            .client_config()
            .unwrap();
        let target = Target {
            smtp: crate::Endpoint::parse("smtp://fake:25", &["smtp"]).unwrap(),
            imap: crate::Endpoint::parse("imap://fake:143", &["imap"]).unwrap(),
            lmtp: None,
            jmap: None,
            caldav: None,
            pop3: None,
            tls,
            credentials: crate::Credentials::Shared(peakhour_net::Secret::new("x".into())),
            options: crate::ServerOptions::default(),
        };
        let medium = plan("mmb-medium");
        let imap = action_protocols(&medium, &target, MailProtocol::Imap);
        let jmap = action_protocols(&medium, &target, MailProtocol::Jmap);
        assert_eq!(imap["read"], "imap");
        assert_eq!(jmap["read"], "jmap");
        assert_eq!(jmap["send"], "jmap");
        assert_eq!(jmap["update_calendar"], "jmap");
        // A POP3 user holds no mail session: JMAP changes nothing for it.
        let pop3 = plan("pop3-user");
        assert_eq!(
            action_protocols(&pop3, &target, MailProtocol::Jmap),
            action_protocols(&pop3, &target, MailProtocol::Imap)
        );
    }
}
