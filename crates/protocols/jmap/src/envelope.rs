//! The request and response envelopes (RFC 8620 §3.3, §3.4) and the method
//! calls peakhour makes (RFC 8621).
//!
//! Requests are written with a fixed key order (struct order; maps are
//! `BTreeMap`s), so the same calls always give the same bytes, whatever
//! features `serde_json` is built with elsewhere in the workspace.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::{CORE, MAIL, SUBMISSION};

/// One method call: its name, its arguments (already JSON), its call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodCall {
    /// `Email/get`, `Mailbox/get` ...
    pub name: &'static str,
    /// The arguments object, as JSON text.
    pub arguments: String,
    /// The client's id for the call, echoed in its response.
    pub call_id: String,
}

/// A request: the capabilities it uses and its method calls, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JmapRequest {
    /// Capability URIs.
    pub using: Vec<&'static str>,
    /// The calls.
    pub calls: Vec<MethodCall>,
}

impl JmapRequest {
    /// A request using core and mail (and submission, if `submission`).
    pub fn mail(submission: bool) -> JmapRequest {
        let mut using = vec![CORE, MAIL];
        if submission {
            using.push(SUBMISSION);
        }
        JmapRequest {
            using,
            calls: Vec::new(),
        }
    }

    /// Adds a call with typed arguments.
    pub fn call(mut self, name: &'static str, arguments: &impl Serialize, call_id: &str) -> Self {
        // Serialising plain structs and maps of strings cannot fail.
        let arguments = serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned());
        self.calls.push(MethodCall {
            name,
            arguments,
            call_id: call_id.to_owned(),
        });
        self
    }

    /// The request body as a JSON value (what [`JmapRequest::to_json`] writes).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }

    /// The request body.
    pub fn to_json(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let using: Vec<String> = self.using.iter().map(|u| quote(u)).collect();
        let calls: Vec<String> = self
            .calls
            .iter()
            .map(|c| format!("[{},{},{}]", quote(c.name), c.arguments, quote(&c.call_id)))
            .collect();
        format!(
            r#"{{"using":[{}],"methodCalls":[{}]}}"#,
            using.join(","),
            calls.join(",")
        )
    }
}

/// A response envelope.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JmapResponse {
    /// `[name, arguments, callId]` for each response, in order.
    pub method_responses: Vec<(String, Value, String)>,
    /// The session state; a change means the session should be fetched again.
    #[serde(default)]
    pub session_state: String,
}

impl JmapResponse {
    /// The envelope as a JSON value, as the server wrote it
    /// (`methodResponses`, `sessionState`).
    pub fn to_value(&self) -> Value {
        let responses: Vec<Value> = self
            .method_responses
            .iter()
            .map(|(name, arguments, id)| {
                Value::from(vec![
                    name.clone().into(),
                    arguments.clone(),
                    id.clone().into(),
                ])
            })
            .collect();
        serde_json::json!({
            "methodResponses": responses,
            "sessionState": self.session_state,
        })
    }
}

/// A method-level error (RFC 8620 §3.6.2): the response named `error`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MethodError {
    /// `unknownMethod`, `invalidArguments`, `stateMismatch` ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The server's words, if any.
    #[serde(default)]
    pub description: Option<String>,
}

/// A request-level error (RFC 8620 §3.6.1, RFC 7807 problem details).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProblemDetails {
    /// `urn:ietf:params:jmap:error:notRequest` ...
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The HTTP status it came with.
    #[serde(default)]
    pub status: Option<u16>,
    /// The server's words.
    #[serde(default)]
    pub detail: Option<String>,
}

/// A back-reference to an earlier call's result (RFC 8620 §3.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultReference {
    /// The earlier call's id.
    pub result_of: String,
    /// Its method name.
    pub name: &'static str,
    /// A JSON pointer into its result (`/ids`).
    pub path: &'static str,
}

/// Arguments of `Mailbox/get` for every mailbox.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MailboxGet<'a> {
    /// The account.
    pub account_id: &'a str,
    /// `null`: all of them.
    pub ids: Option<Vec<String>>,
}

/// A sort criterion.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparator {
    /// The property (`receivedAt`).
    pub property: &'static str,
    /// Oldest first if true.
    pub is_ascending: bool,
}

/// A filter on one mailbox.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InMailbox<'a> {
    /// The mailbox id.
    pub in_mailbox: &'a str,
}

/// Arguments of `Email/query`: a mailbox's newest messages.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailQuery<'a> {
    /// The account.
    pub account_id: &'a str,
    /// Which messages.
    pub filter: InMailbox<'a>,
    /// Newest first.
    pub sort: Vec<Comparator>,
    /// How many at most.
    pub limit: u32,
    /// Ask for the total count too.
    pub calculate_total: bool,
}

/// Arguments of `Email/get`, by ids or by a back-reference to a query.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailGet<'a> {
    /// The account.
    pub account_id: &'a str,
    /// The ids, when given directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    /// The ids, from an earlier call (serialised as `#ids`).
    #[serde(rename = "#ids", skip_serializing_if = "Option::is_none")]
    pub ids_from: Option<ResultReference>,
    /// The properties wanted.
    pub properties: Vec<&'static str>,
    /// Fetch the text body values (for a read).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fetch_text_body_values: bool,
}

/// Arguments of `Email/set` with updates (patches) and destroys.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailSet<'a> {
    /// The account.
    pub account_id: &'a str,
    /// Patches by email id: `keywords/$seen` → true, `mailboxIds/X` → null ...
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub update: BTreeMap<String, BTreeMap<String, Value>>,
    /// Ids to destroy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destroy: Vec<String>,
}

/// One message to import.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportEmail {
    /// The uploaded message's blob.
    pub blob_id: String,
    /// The mailboxes to file it in.
    pub mailbox_ids: BTreeMap<String, bool>,
    /// Its keywords (`$seen` ...).
    pub keywords: BTreeMap<String, bool>,
}

/// Arguments of `Email/import`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailImport<'a> {
    /// The account.
    pub account_id: &'a str,
    /// The messages, by creation id.
    pub emails: BTreeMap<String, ImportEmail>,
}

/// One submission.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submission {
    /// The identity to send as.
    pub identity_id: String,
    /// The message (an id, or `#creationId` from an import in the same request).
    pub email_id: String,
    /// The SMTP envelope; without it the server takes it from the message's
    /// headers (RFC 8621 §7), which cannot name a list's members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<SubmissionEnvelope>,
}

/// An SMTP envelope for a submission (RFC 8621 §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionEnvelope {
    /// `MAIL FROM`.
    pub mail_from: EnvelopeAddress,
    /// `RCPT TO`, one per recipient.
    pub rcpt_to: Vec<EnvelopeAddress>,
}

/// One address of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvelopeAddress {
    /// The address.
    pub email: String,
}

impl SubmissionEnvelope {
    /// An envelope from `from` to each of `to`.
    pub fn new(from: &str, to: &[String]) -> Self {
        let address = |email: &str| EnvelopeAddress {
            email: email.to_owned(),
        };
        SubmissionEnvelope {
            mail_from: address(from),
            rcpt_to: to.iter().map(|t| address(t)).collect(),
        }
    }
}

/// Arguments of `EmailSubmission/set` creating submissions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionSet<'a> {
    /// The account.
    pub account_id: &'a str,
    /// The submissions, by creation id.
    pub create: BTreeMap<String, Submission>,
}

/// Arguments of `Identity/get` for every identity.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityGet<'a> {
    /// The account.
    pub account_id: &'a str,
}

/// A mailbox (RFC 8621 §2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mailbox {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// `inbox`, `sent`, `drafts`, `trash` ... if it has one.
    #[serde(default)]
    pub role: Option<String>,
    /// How many messages.
    #[serde(default)]
    pub total_emails: u64,
    /// How many unread.
    #[serde(default)]
    pub unread_emails: u64,
}

/// The `Mailbox/get` or `Email/get` response: a state and a list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetResponse<T> {
    /// The type's state.
    #[serde(default)]
    pub state: String,
    /// The objects found.
    pub list: Vec<T>,
    /// The ids asked for and not found.
    #[serde(default)]
    pub not_found: Vec<String>,
}

/// An email, with the properties peakhour asks for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Email {
    /// Its id.
    pub id: String,
    /// The blob of the raw message.
    #[serde(default)]
    pub blob_id: Option<String>,
    /// The mailboxes it is in.
    #[serde(default)]
    pub mailbox_ids: BTreeMap<String, bool>,
    /// Its keywords.
    #[serde(default)]
    pub keywords: BTreeMap<String, bool>,
    /// Its size in octets.
    #[serde(default)]
    pub size: Option<u64>,
    /// Its subject.
    #[serde(default)]
    pub subject: Option<String>,
    /// Other properties asked for (headers by name, body values ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The `Email/query` response.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResponse {
    /// The ids, in order.
    pub ids: Vec<String>,
    /// The query's state.
    #[serde(default)]
    pub query_state: String,
    /// Where the ids start.
    #[serde(default)]
    pub position: u64,
    /// All matches, if asked for.
    #[serde(default)]
    pub total: Option<u64>,
}

/// Why one object in a `/set` was not created, updated or destroyed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SetError {
    /// `notFound`, `invalidProperties`, `overQuota` ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The server's words.
    #[serde(default)]
    pub description: Option<String>,
}

/// A `/set` (or `Email/import`) response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetResponse {
    /// The state after.
    #[serde(default)]
    pub new_state: Option<String>,
    /// Created objects by creation id (their server-set properties).
    #[serde(default)]
    pub created: Option<BTreeMap<String, Value>>,
    /// Updated ids.
    #[serde(default)]
    pub updated: Option<BTreeMap<String, Option<Value>>>,
    /// Destroyed ids.
    #[serde(default)]
    pub destroyed: Option<Vec<String>>,
    /// Failures to create.
    #[serde(default)]
    pub not_created: Option<BTreeMap<String, SetError>>,
    /// Failures to update.
    #[serde(default)]
    pub not_updated: Option<BTreeMap<String, SetError>>,
    /// Failures to destroy.
    #[serde(default)]
    pub not_destroyed: Option<BTreeMap<String, SetError>>,
}

impl SetResponse {
    /// The id the server gave the object created as `creation_id`.
    pub fn created_id(&self, creation_id: &str) -> Option<&str> {
        self.created.as_ref()?.get(creation_id)?.get("id")?.as_str()
    }

    /// Every failure, as `id: type` lines (empty if all succeeded).
    pub fn failures(&self) -> Vec<String> {
        [&self.not_created, &self.not_updated, &self.not_destroyed]
            .into_iter()
            .flatten()
            .flat_map(|m| m.iter().map(|(id, e)| format!("{id}: {}", e.kind)))
            .collect()
    }
}

/// An identity (RFC 8621 §6).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// Its id.
    pub id: String,
    /// Its address.
    #[serde(default)]
    pub email: String,
}

/// What an upload returns (RFC 8620 §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Upload {
    /// The account.
    #[serde(default)]
    pub account_id: String,
    /// The new blob.
    pub blob_id: String,
    /// Its media type.
    #[serde(rename = "type", default)]
    pub media_type: String,
    /// Its size.
    #[serde(default)]
    pub size: u64,
}

/// A patch that sets or clears one keyword.
pub fn keyword_patch(keyword: &str, on: bool) -> BTreeMap<String, Value> {
    let value = if on { Value::Bool(true) } else { Value::Null };
    BTreeMap::from([(format!("keywords/{keyword}"), value)])
}

/// A patch that moves a message from one mailbox to another.
pub fn move_patch(from: &str, to: &str) -> BTreeMap<String, Value> {
    BTreeMap::from([
        (format!("mailboxIds/{from}"), Value::Null),
        (format!("mailboxIds/{to}"), Value::Bool(true)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_serialise_in_a_fixed_order_with_back_references() {
        let request = JmapRequest::mail(false)
            .call(
                "Email/query",
                &EmailQuery {
                    account_id: "u1",
                    filter: InMailbox { in_mailbox: "mb1" },
                    sort: vec![Comparator {
                        property: "receivedAt",
                        is_ascending: false,
                    }],
                    limit: 10,
                    calculate_total: true,
                },
                "q",
            )
            .call(
                "Email/get",
                &EmailGet {
                    account_id: "u1",
                    ids: None,
                    ids_from: Some(ResultReference {
                        result_of: "q".into(),
                        name: "Email/query",
                        path: "/ids",
                    }),
                    properties: vec!["id", "keywords"],
                    fetch_text_body_values: false,
                },
                "g",
            );
        assert_eq!(
            request.to_json(),
            r##"{"using":["urn:ietf:params:jmap:core","urn:ietf:params:jmap:mail"],"methodCalls":[["Email/query",{"accountId":"u1","filter":{"inMailbox":"mb1"},"sort":[{"property":"receivedAt","isAscending":false}],"limit":10,"calculateTotal":true},"q"],["Email/get",{"accountId":"u1","#ids":{"resultOf":"q","name":"Email/query","path":"/ids"},"properties":["id","keywords"]},"g"]]}"##
        );
        let submission = Submission {
            identity_id: "i1".into(),
            email_id: "#m".into(),
            envelope: Some(SubmissionEnvelope::new(
                "u1@bench.test",
                &["u2@bench.test".to_owned(), "u3@bench.test".to_owned()],
            )),
        };
        assert_eq!(
            serde_json::to_string(&submission).unwrap(),
            r##"{"identityId":"i1","emailId":"#m","envelope":{"mailFrom":{"email":"u1@bench.test"},"rcptTo":[{"email":"u2@bench.test"},{"email":"u3@bench.test"}]}}"##
        );
        let patch = serde_json::to_string(&move_patch("a", "b")).unwrap();
        assert_eq!(patch, r#"{"mailboxIds/a":null,"mailboxIds/b":true}"#);
    }
}
