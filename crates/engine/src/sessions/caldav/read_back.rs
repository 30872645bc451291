//! `[calendar] read_back`: after each PUT of one of its own events, the
//! client reads the event back (GET), as a client that refreshes an item it
//! has just stored, to learn what the server made of it. With the state
//! checks on, the GET is one more read of an event the user wrote: it must
//! be there (`caldav_event_lost`) with the ETag the PUT returned
//! (`caldav_etag_mismatch`).

use peakhour_caldav::{CalDavError, PutOutcome};
use peakhour_workload::Plan;

use super::{CalendarFailure, CalendarUser, on, record};
use crate::events::EventSink;

impl CalendarUser {
    /// GETs `href` after the PUT that `stored` it, when the profile says so;
    /// returns the PUT's outcome, with the ETag the GET told when the PUT
    /// told none (RFC 4791 section 5.3.4). A 404 is the event lost: an
    /// error of the action, and a violation when the checks are on.
    pub(super) async fn read_back(
        &mut self,
        plan: &Plan,
        events: &EventSink,
        href: &str,
        stored: PutOutcome,
    ) -> Result<PutOutcome, CalendarFailure> {
        if !plan.calendar().read_back {
            return Ok(stored);
        }
        let etag = match self.caldav.get_event(href).await {
            Ok(got) => record(events, "caldav.GET", got).etag,
            Err(error) => {
                if let (CalDavError::Status { status: 404, .. }, Some(state)) =
                    (&error, self.state.as_mut())
                {
                    state.get(href, 404, None); // state checks
                }
                return Err(on("event", href)(error));
            }
        };
        if let Some(state) = self.state.as_mut() {
            state.get(href, 200, etag.as_deref()); // state checks
        }
        Ok(match stored {
            PutOutcome::Created { etag: None } => PutOutcome::Created { etag },
            PutOutcome::Updated { etag: None } => PutOutcome::Updated { etag },
            stored => stored,
        })
    }
}
