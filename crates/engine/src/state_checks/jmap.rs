//! State checks of JMAP sessions (issue 27 item 3): every request a JMAP
//! session makes, and its response, go to the session's
//! `JmapSessionModel` (peakhour-state-check); after an action that changed
//! an Email, the checker asks `Email/changes` from the state of its last
//! such sync, which must account for the session's own changes (RFC 8620
//! section 5.2), and `Email/get` of the ids it created since, which must be
//! found. After the run, every account's messages are audited (Stalwart's
//! audit: each in exactly one mailbox, the one its session last put it in).
//!
//! The sync's time is the checker's, not an action's: it is not recorded as
//! a command, and the user's schedule moves by it as by a checkpoint's
//! pause ([`StateCheckHub::shift`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use peakhour_http::{BasicAuth, ConnectionOptions, HttpConnection};
use peakhour_jmap::{JmapClient, JmapError, JmapRequest};
use peakhour_state_check::{JmapExpectations, JmapOptions, JmapSessionModel, audit};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::StateCheckHub;
use crate::population::Population;
use crate::target::Target;

/// Pages of one `Email/changes` sync followed at most (each up to
/// [`CHANGES_PER_PAGE`]).
const SYNC_PAGES: usize = 20;
/// `maxChanges` of the checker's `Email/changes`.
const CHANGES_PER_PAGE: u32 = 500;
/// Ids per `Email/get` of the audit.
const AUDIT_PAGE: usize = 500;
/// Created ids the checker asks for at the next sync, at most.
const CREATED_KEPT: usize = 1_000;

/// What the run's JMAP sessions expect of their accounts, for the audit.
#[derive(Debug, Default)]
pub(crate) struct JmapRecords {
    /// Account (user index) -> (client, expectations) of its sessions.
    sessions: Mutex<BTreeMap<u32, Vec<(String, JmapExpectations)>>>,
}

/// How the JMAP session on the account of user `account` shares it.
pub(crate) fn options(plan: &peakhour_workload::Plan, account: u32) -> JmapOptions {
    use peakhour_workload::ActionKind;
    JmapOptions {
        // POP3 downloads may delete what a JMAP session created.
        sole_writer: !plan.actions().contains(&ActionKind::DownloadMail),
        shared_account: plan.sessions_on(account) > 1,
    }
}

impl StateCheckHub {
    /// The checker of a new JMAP session of user `user`, logged on to the
    /// account of user `account`; `client` names it in violations.
    pub(crate) fn jmap_session(
        self: &Arc<Self>,
        user: u32,
        account: u32,
        client: String,
        options: JmapOptions,
    ) -> JmapChecker {
        JmapChecker {
            model: JmapSessionModel::new(client.clone(), options),
            client,
            hub: self.clone(),
            user,
            account,
            options,
            synced: None,
            changed: false,
            created: Vec::new(),
        }
    }

    /// Moves user `user`'s schedule by `pause` (the checker's own requests),
    /// counted with the checkpoints' pauses.
    pub(crate) fn held(&self, user: u32, pause: Duration) {
        self.totals().pause += pause;
        if let Some(shift) = self.shifts.get(user as usize) {
            let nanos = u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX);
            shift.fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The audit after a run over JMAP: in every account a session used,
    /// the messages the run's sessions created, moved or destroyed
    /// (`Email/get` of their `mailboxIds`) are held to the sessions'
    /// expectations. Messages the run did not touch are left out: on a lab
    /// used before, an earlier run may have left a message in two
    /// mailboxes (two sessions' patch moves, RFC 8621 section 4.6), and
    /// Cyrus shows identical messages in two mailboxes as one Email. An
    /// account that cannot be read is not audited: it adds no audit check.
    pub(crate) async fn audit_jmap(
        &self,
        target: &Target,
        population: &Population,
        timeout: Duration,
    ) {
        let accounts = std::mem::take(
            &mut *self
                .jmap
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let Some(endpoint) = target.jmap.as_ref() else {
            return;
        };
        for (account, sessions) in accounts {
            let Ok(address) = population.address(account) else {
                continue;
            };
            let (login, password) = target.login(account, &address);
            let options = ConnectionOptions {
                auth: Some(BasicAuth::new(login, password)),
                request_timeout: timeout,
                ..ConnectionOptions::default()
            };
            let dial = crate::sessions::jmap::dial(endpoint, target, timeout);
            let mut client = JmapClient::new(HttpConnection::new(dial, options));
            let expected: BTreeSet<String> = sessions
                .iter()
                .flat_map(|(_, e)| e.locations.keys().chain(&e.destroyed).cloned())
                .collect();
            let read = tokio::time::timeout(timeout * 4, read_account(&mut client, expected)).await;
            let Ok(Ok(found)) = read else {
                continue;
            };
            let by: Vec<(&str, &JmapExpectations)> =
                sessions.iter().map(|(c, e)| (c.as_str(), e)).collect();
            let outcome = audit(&address, &by, &found);
            self.totals().checks.add(&outcome.checks);
            self.record(outcome.violations);
        }
    }
}

/// Every id in `expected`, as one `Email/get` answer's arguments (`list`
/// with `mailboxIds`, `notFound`).
async fn read_account(
    client: &mut JmapClient,
    expected: BTreeSet<String>,
) -> Result<Value, JmapError> {
    client.discover().await?;
    let account = client.account().to_owned();
    let ids: Vec<String> = expected.into_iter().collect();
    let (mut list, mut not_found) = (Vec::new(), Vec::new());
    for chunk in ids.chunks(AUDIT_PAGE) {
        let request = JmapRequest::mail(false).call(
            "Email/get",
            &json!({"accountId": account, "ids": chunk, "properties": ["id", "mailboxIds"]}),
            "g",
        );
        let answer = client.call(&request).await?.value;
        let got: Value = peakhour_jmap::exchange::method_result(&answer, "Email/get", "g")?;
        list.extend(
            got.get("list")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        not_found.extend(
            got.get("notFound")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
    }
    Ok(json!({"list": list, "notFound": not_found}))
}

/// The state checks of one JMAP session. Dropping it (the session ended)
/// adds its counts to the run's and its expectations to the audit's.
#[derive(Debug)]
pub(crate) struct JmapChecker {
    model: JmapSessionModel,
    client: String,
    hub: Arc<StateCheckHub>,
    user: u32,
    account: u32,
    options: JmapOptions,
    /// The Email state the next sync asks changes from: the new state of the
    /// last one, or the first the session was told.
    synced: Option<String>,
    /// An Email was created, updated or destroyed since the last sync.
    changed: bool,
    /// Email ids the session created since the last sync.
    created: Vec<String>,
}

/// The arguments of each response of `name` in a response envelope.
fn answers<'a>(response: &'a Value, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    response
        .get("methodResponses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(move |r| {
            let r = r.as_array()?;
            (r.first()?.as_str()? == name).then_some(r.get(1)?)
        })
}

impl JmapChecker {
    /// Hands the model what the session asked and was told; the violations
    /// go to the run.
    pub(crate) fn feed(&mut self, exchanges: Vec<(Value, Value)>) {
        let mut found = Vec::new();
        for (request, response) in exchanges {
            self.learn(&response);
            found.extend(self.model.exchange(&request, &response));
        }
        self.hub.record(found);
    }

    /// Where the next sync starts, and whether one is due.
    fn learn(&mut self, response: &Value) {
        if self.synced.is_none()
            && let Some(state) =
                answers(response, "Email/get").find_map(|a| a.get("state").and_then(Value::as_str))
        {
            self.synced = Some(state.to_owned());
        }
        for set in ["Email/set", "Email/import"]
            .into_iter()
            .flat_map(|name| answers(response, name))
        {
            if self.synced.is_none() {
                self.synced = set
                    .get("oldState")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            let created = set.get("created").and_then(Value::as_object);
            for object in created.into_iter().flat_map(|c| c.values()) {
                if let Some(id) = object.get("id").and_then(Value::as_str)
                    && self.created.len() < CREATED_KEPT
                {
                    self.created.push(id.to_owned());
                }
            }
            let some = |key: &str| match set.get(key) {
                Some(Value::Object(o)) => !o.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                _ => false,
            };
            // Updates in a shared account may be no-ops, which the model
            // holds to nothing (`JmapOptions::shared_account`): no sync for them.
            let updated = some("updated") && !self.options.shared_account;
            self.changed |= some("created") || updated || some("destroyed");
        }
    }

    /// After an action that changed an Email: `Email/changes` from the last
    /// synced state (every page), with `Email/get` of the ids created since
    /// (when nobody else destroys them). Returns how long it took; the
    /// user's schedule moves by that much. An error of the connection is
    /// returned for the session to handle; a method error (the server
    /// cannot calculate the changes) only starts the next sync afresh.
    pub(crate) async fn sync(&mut self, client: &mut JmapClient) -> Result<Duration, JmapError> {
        if !self.changed {
            return Ok(Duration::ZERO);
        }
        let Some(mut since) = self.synced.take() else {
            return Ok(Duration::ZERO);
        };
        let began = Instant::now();
        self.changed = false;
        let account = client.account().to_owned();
        let created = std::mem::take(&mut self.created);
        let mut outcome = Ok(());
        for page in 0..SYNC_PAGES {
            let mut request = JmapRequest::mail(false).call(
                "Email/changes",
                &json!({"accountId": account, "sinceState": since, "maxChanges": CHANGES_PER_PAGE}),
                "c",
            );
            if page == 0 && self.options.sole_writer && !created.is_empty() {
                request = request.call(
                    "Email/get",
                    &json!({"accountId": account, "ids": created, "properties": ["id"]}),
                    "g",
                );
            }
            let answer = match client.call(&request).await {
                Ok(answer) => answer.value,
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            };
            let changes = answer
                .method_responses
                .iter()
                .find(|(name, _, id)| name == "Email/changes" && id == "c")
                .map(|(_, args, _)| args);
            let Some(new) = changes
                .and_then(|c| c.get("newState"))
                .and_then(Value::as_str)
            else {
                break; // a method error: the next sync starts from a state told later
            };
            since = new.to_owned();
            let more = changes.and_then(|c| c.get("hasMoreChanges")) == Some(&Value::Bool(true));
            if !more {
                self.synced = Some(since.clone());
                break;
            }
        }
        self.feed(client.take_exchanges());
        let took = began.elapsed();
        self.hub.held(self.user, took);
        outcome.map(|()| took)
    }
}

impl Drop for JmapChecker {
    fn drop(&mut self) {
        self.hub.totals().checks.add(self.model.checks());
        let expectations = self.model.expectations().clone();
        if expectations != JmapExpectations::default() {
            self.hub
                .jmap
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(self.account)
                .or_default()
                .push((std::mem::take(&mut self.client), expectations));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(name: &str, args: Value, answer: Value) -> (Value, Value) {
        (
            json!({"using": [], "methodCalls": [[name, args, "0"]]}),
            json!({"methodResponses": [[name, answer, "0"]], "sessionState": "0"}),
        )
    }

    #[test]
    fn issue_27_item_3_a_jmap_session_fed_through_the_hub_counts_its_checks_and_violations() {
        let hub = StateCheckHub::new(Duration::from_secs(30), Duration::from_secs(5), 1);
        let options = JmapOptions {
            sole_writer: true,
            shared_account: false,
        };
        let mut checker = hub.jmap_session(0, 0, "user1@bench.test#1".into(), options);
        checker.feed(vec![
            exchange(
                "Email/get",
                json!({"accountId": "u", "ids": ["M1"]}),
                json!({"state": "s1", "list": [{"id": "M1"}], "notFound": []}),
            ),
            // A change answered with the state from before it.
            exchange(
                "Email/set",
                json!({"accountId": "u", "update": {"M1": {"keywords/$seen": true}}}),
                json!({"oldState": "s1", "newState": "s1", "updated": {"M1": null}}),
            ),
        ]);
        // The next sync starts from the first state told, and is due.
        assert_eq!(checker.synced.as_deref(), Some("s1"));
        assert!(checker.changed);
        drop(checker);
        let report = hub.report();
        assert_eq!(report.violations, 1);
        assert_eq!(report.by_kind["jmap_state_unchanged"].checks, 1);
        assert_eq!(report.examples[0].check, "jmap_state_unchanged");
        assert_eq!(report.examples[0].mailbox, "Email state");
    }
}
