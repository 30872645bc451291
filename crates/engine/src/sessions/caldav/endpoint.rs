//! Where a user's calendar is: the CalDAV server's URL, the login a user
//! signs in with, and the check before a run that user 0 finds its calendar.

use std::fmt;
use std::time::Duration;

use peakhour_caldav::{CalDavClient, CalDavError};
use peakhour_http::{BasicAuth, ConnectionOptions, Endpoint as HttpEndpoint, HttpConnection};
use peakhour_net::{Secret, Security};
use peakhour_workload::Plan;

use crate::sessions::caldav::calendar_path;
use crate::target::{Credentials, Endpoint, EndpointError, Target, TlsMode};

/// A CalDAV server: where its users' discovery starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalDavEndpoint {
    /// Host and port; TLS from the first byte for `https`.
    pub server: Endpoint,
    /// The path discovery starts at (`/` unless the URL names one).
    pub path: String,
    /// Users sign in with their whole address (`user1@bench.test`, as on
    /// the lab's Cyrus) rather than its local part (`user1`, as on
    /// Radicale), when the password is shared.
    pub login_with_domain: bool,
}

impl CalDavEndpoint {
    /// Parses `http://host[:port][/path]` or `https://...`.
    pub fn parse(url: &str) -> Result<CalDavEndpoint, EndpointError> {
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        let server = Endpoint::parse(&format!("{scheme}://{authority}"), &["http", "https"])?;
        Ok(CalDavEndpoint {
            server,
            path: path.to_owned(),
            login_with_domain: false,
        })
    }

    pub(crate) fn http_endpoint(&self, tls: &Target, connect_timeout: Duration) -> HttpEndpoint {
        let implicit = self.server.tls == TlsMode::Implicit;
        HttpEndpoint {
            host: self.server.host.clone(),
            port: self.server.port,
            security: if implicit {
                Security::ImplicitTls
            } else {
                Security::Plain
            },
            tls: implicit.then(|| tls.tls.clone()),
            connect_timeout,
            source: None,
        }
    }
}

impl fmt::Display for CalDavEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.server.tls == TlsMode::Implicit {
            "https"
        } else {
            "http"
        };
        write!(
            f,
            "{scheme}://{}:{}{}",
            self.server.host, self.server.port, self.path
        )
    }
}

/// The CalDAV login of a user: with a shared password, the address's local
/// part (`user1`, as the lab's Radicale and most CalDAV servers name their
/// users), or the whole address for an endpoint that says so (the lab's
/// Cyrus); with a users file, its login as written there.
pub(crate) fn caldav_login(target: &Target, user: u32, address: &str) -> (String, Secret<String>) {
    let (login, password) = target.login(user, address);
    let whole = target.caldav.as_ref().is_some_and(|e| e.login_with_domain);
    let login = match &target.credentials {
        Credentials::Shared(_) if whole => login,
        Credentials::Shared(_) => login.split_once('@').map_or(login, |(local, _)| local),
        Credentials::PerUser(_) => login,
    };
    (login.to_owned(), password.clone())
}

/// Whether user 0 finds its calendar: discovery, then the calendar among
/// the home's collections. An error says what to do about it. With
/// `ask_classes`, also the DAV classes its home offers (`OPTIONS`, over the
/// same discovery): whether the server schedules, for the record.
pub(crate) async fn check_calendar(
    plan: &Plan,
    target: &Target,
    endpoint: &CalDavEndpoint,
    address: &str,
    timeout: Duration,
    ask_classes: bool,
) -> Result<Option<Vec<String>>, String> {
    let (login, password) = caldav_login(target, 0, address);
    let options = ConnectionOptions {
        auth: Some(BasicAuth::new(login.clone(), &password)),
        request_timeout: timeout,
        ..ConnectionOptions::default()
    };
    let http = HttpConnection::new(endpoint.http_endpoint(target, timeout), options);
    let mut caldav = CalDavClient::new(http);
    let failed = |e: CalDavError| format!("{login}: {e}");
    let principal = caldav
        .find_principal(&endpoint.path)
        .await
        .map_err(failed)?
        .value;
    let home = caldav
        .find_calendar_home(&principal)
        .await
        .map_err(failed)?
        .value;
    let calendar = calendar_path(&home, &plan.calendar().name);
    let listed = caldav.list_calendars(&home).await.map_err(failed)?.value;
    if listed
        .iter()
        .any(|c| peakhour_caldav::requests::href_path(&c.href) == calendar)
    {
        if !ask_classes {
            return Ok(None);
        }
        // Not fatal: a server that will not say does not schedule.
        let classes = caldav.dav_classes(&home).await.map(|t| t.value);
        Ok(Some(classes.unwrap_or_default()))
    } else {
        Err(format!(
            "{login} has no calendar {calendar}: run `peakhour init` with this profile first"
        ))
    }
}
