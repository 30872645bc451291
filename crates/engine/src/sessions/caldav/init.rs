//! `peakhour init` for calendars: each user's calendar collection
//! (MKCALENDAR) and the profile's starting events in it.
//!
//! Idempotent like the mail side: MKCALENDAR on an existing calendar is
//! answered 405 (RFC 4791) or 409 (Radicale) and counts as done, and every
//! starting event is written with `If-None-Match: *`, so an event already
//! there is answered 412 and left alone. The events are dated in the week
//! init runs in, in the profile's working hours; their UIDs carry that
//! week, so an init in a later week adds that week's events.

use std::sync::Arc;
use std::time::Duration;

use peakhour_caldav::{
    CalDavClient, CalDavError, MakeCalendarOutcome, Precondition, PutOutcome, event_ics,
};
use peakhour_http::{BasicAuth, ConnectionOptions, HttpConnection};
use peakhour_workload::Plan;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::init::InitSettings;
use crate::population::Population;
use crate::sessions::caldav::{caldav_login, calendar_path, event_spec, slot_start, this_week};
use crate::target::Target;

impl std::fmt::Display for CalendarInitReport {
    /// The line `peakhour init` prints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "calendars done: {} users, {} calendars created, {} events wanted, {} already there, {} added in {:.1} s",
            self.users,
            self.calendars_created,
            self.wanted,
            self.already_there,
            self.added,
            self.elapsed.as_secs_f64()
        )
    }
}

/// What a calendar init did.
#[derive(Debug, Clone, Default)]
pub struct CalendarInitReport {
    /// Users whose calendars were checked.
    pub users: u32,
    /// Calendars created now (the rest existed).
    pub calendars_created: u64,
    /// Starting events the profile asks for, over all users.
    pub wanted: u64,
    /// Events that were already there.
    pub already_there: u64,
    /// Events added now.
    pub added: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// Why a calendar init failed.
#[derive(Debug, thiserror::Error)]
pub enum CalendarInitError {
    /// The target has no CalDAV server.
    #[error("the profile keeps calendars but the target has no CalDAV server (give --caldav URL)")]
    NoCalDav,
    /// A CalDAV request failed for a user.
    #[error("{user}: CalDAV: {source}")]
    CalDav {
        /// The user's login.
        user: String,
        /// The error.
        source: CalDavError,
    },
    /// A user's task panicked (a bug in peakhour).
    #[error("a task making a calendar panicked (a bug in peakhour)")]
    Panicked,
}

#[derive(Debug, Default)]
struct UserReport {
    created: bool,
    already_there: u64,
    added: u64,
}

/// Creates every user's calendar of `plan` on `target`'s CalDAV server,
/// with the profile's starting events, as many users at a time as the
/// mail side; part of [`crate::init::init`]. `None` when there is nothing
/// to make: the profile keeps no calendar, or only `update_calendar`,
/// which writes to an IMAP folder when the target has no CalDAV server.
pub async fn init_calendars(
    plan: &Arc<Plan>,
    target: &Arc<Target>,
    population: &Arc<Population>,
    settings: &InitSettings,
) -> Result<Option<CalendarInitReport>, CalendarInitError> {
    if !plan.uses_calendar() {
        return Ok(None);
    }
    let Some(endpoint) = target.caldav.clone() else {
        return if plan.needs_caldav() {
            Err(CalendarInitError::NoCalDav)
        } else {
            Ok(None)
        };
    };
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(settings.parallel.max(1)));
    let mut tasks = JoinSet::new();
    for user in 0..plan.users() {
        let (plan, target, endpoint, permits) = (
            plan.clone(),
            target.clone(),
            endpoint.clone(),
            permits.clone(),
        );
        let address = population.address(user).unwrap_or_default();
        let (connect_timeout, request_timeout) = (settings.timeout, settings.command_timeout);
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let (login, password) = caldav_login(&target, user, &address);
            let options = ConnectionOptions {
                auth: Some(BasicAuth::new(login.clone(), &password)),
                request_timeout,
                ..ConnectionOptions::default()
            };
            let http =
                HttpConnection::new(endpoint.http_endpoint(&target, connect_timeout), options);
            let mut caldav = CalDavClient::new(http);
            init_user(&plan, &mut caldav, &endpoint.path, user, &address)
                .await
                .map_err(|source| CalendarInitError::CalDav {
                    user: login,
                    source,
                })
        });
    }
    let mut report = CalendarInitReport {
        users: plan.users(),
        wanted: u64::from(plan.users()) * u64::from(plan.calendar().initial_events),
        ..CalendarInitReport::default()
    };
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(user)) => {
                report.calendars_created += u64::from(user.created);
                report.already_there += user.already_there;
                report.added += user.added;
            }
            Ok(Err(error)) => {
                // Stop at the first failure: what was added stays (init resumes).
                first_error.get_or_insert(error);
                tasks.abort_all();
            }
            Err(joined) if joined.is_panic() => {
                first_error.get_or_insert(CalendarInitError::Panicked);
                tasks.abort_all();
            }
            // Aborted above, after the first failure.
            Err(_) => {}
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    report.elapsed = started.elapsed();
    Ok(Some(report))
}

async fn init_user(
    plan: &Plan,
    caldav: &mut CalDavClient,
    discovery_path: &str,
    user: u32,
    address: &str,
) -> Result<UserReport, CalDavError> {
    let principal = caldav.find_principal(discovery_path).await?.value;
    let home = caldav.find_calendar_home(&principal).await?.value;
    let calendar = calendar_path(&home, &plan.calendar().name);
    let made = caldav
        .make_calendar(&calendar, &plan.calendar().name)
        .await?
        .value;
    let mut report = UserReport {
        created: made == MakeCalendarOutcome::Created,
        ..UserReport::default()
    };
    let monday = this_week();
    let (year, month, day, ..) = monday.fields();
    for index in 0..plan.calendar().initial_events {
        let uid = format!("peakhour-init-{year:04}{month:02}{day:02}-u{user}-{index}");
        let start = slot_start(monday, plan.initial_event_slot(user, index));
        let ics = event_ics(&event_spec(plan, &uid, start, 0, address));
        let href = format!("{calendar}{uid}.ics");
        let put = put_retrying(caldav, &href, &ics).await?;
        if put.is_stored() {
            report.added += 1;
        } else {
            report.already_there += 1;
        }
    }
    Ok(report)
}

/// Init's PUT of one event, tried again (twice at most, 250 then 500 ms
/// later) when the server answers 5xx. A freshly started Cyrus has answered
/// its very first PUTs with 500 now and then while its DAV databases were
/// still being made; init is not measured, and `CreateOnly` makes a repeat
/// harmless (a PUT that did store before failing answers 412 the second
/// time and counts as already there). Other errors end the init at once.
async fn put_retrying(
    caldav: &mut CalDavClient,
    href: &str,
    ics: &str,
) -> Result<PutOutcome, CalDavError> {
    let mut pause = Duration::from_millis(250);
    for _ in 0..2 {
        match caldav.put_event(href, ics, &Precondition::CreateOnly).await {
            Err(CalDavError::Status {
                status: 500..=599, ..
            }) => {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            other => return other.map(|put| put.value),
        }
    }
    let last = caldav
        .put_event(href, ics, &Precondition::CreateOnly)
        .await?;
    Ok(last.value)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use peakhour_caldav::{CalDavClient, CalDavError, PutOutcome};
    use peakhour_http::{ConnectionOptions, Endpoint, HttpConnection};
    use peakhour_net::Security;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;

    use super::put_retrying;

    /// A server that answers PUTs with the given statuses in turn (the last
    /// one for ever after), keeping the connection open as HTTP/1.1 does.
    /// A real Cyrus answers 500 only now and then while it starts, which no
    /// test can bring about on demand: hence a fake.
    async fn answering(statuses: &'static [u16]) -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let puts = Arc::new(AtomicUsize::new(0));
        let counted = puts.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut socket = BufReader::new(socket);
                    loop {
                        let mut length = 0usize;
                        let mut line = String::new();
                        loop {
                            line.clear();
                            if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if let Some(value) =
                                line.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                length = value.trim().parse().unwrap();
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let mut body = vec![0; length];
                        socket.read_exact(&mut body).await.unwrap();
                        let n = counted.fetch_add(1, Ordering::SeqCst);
                        let status = statuses[n.min(statuses.len() - 1)];
                        let reply = format!(
                            "HTTP/1.1 {status} Status\r\nETag: \"e{n}\"\r\nContent-Length: 0\r\n\r\n"
                        );
                        socket.get_mut().write_all(reply.as_bytes()).await.unwrap();
                    }
                });
            }
        });
        (port, puts)
    }

    fn client(port: u16) -> CalDavClient {
        let endpoint = Endpoint {
            host: "127.0.0.1".into(),
            port,
            security: Security::Plain,
            tls: None,
            connect_timeout: Duration::from_secs(5),
            source: None,
        };
        CalDavClient::new(HttpConnection::new(endpoint, ConnectionOptions::default()))
    }

    #[tokio::test]
    async fn a_put_answered_500_then_201_is_tried_again_and_stored() {
        let (port, puts) = answering(&[500, 503, 201]).await;
        let outcome = put_retrying(&mut client(port), "/cal/e.ics", "BEGIN:VCALENDAR\r\n")
            .await
            .expect("the third PUT is stored");
        assert!(matches!(outcome, PutOutcome::Created { .. }), "{outcome:?}");
        assert_eq!(puts.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_put_that_keeps_failing_with_500_ends_after_three_tries() {
        let (port, puts) = answering(&[500]).await;
        let error = put_retrying(&mut client(port), "/cal/e.ics", "BEGIN:VCALENDAR\r\n")
            .await
            .expect_err("three 500s end the init");
        assert!(
            matches!(error, CalDavError::Status { status: 500, .. }),
            "{error}"
        );
        assert_eq!(puts.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_4xx_is_not_tried_again() {
        let (port, puts) = answering(&[403, 201]).await;
        let error = put_retrying(&mut client(port), "/cal/e.ics", "BEGIN:VCALENDAR\r\n")
            .await
            .expect_err("403 ends the init at once");
        assert!(
            matches!(error, CalDavError::Status { status: 403, .. }),
            "{error}"
        );
        assert_eq!(puts.load(Ordering::SeqCst), 1);
    }
}
