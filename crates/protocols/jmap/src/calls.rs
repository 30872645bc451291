//! The method calls peakhour makes, as [`JmapRequest`]s with one call (id
//! `0`) or, for sending, two (`0` and `1`). The driver and the transcript
//! tests build them here, so the bytes a transcript shows are the driver's.

use std::collections::BTreeMap;

use crate::envelope::{
    Comparator, EmailGet, EmailImport, EmailQuery, EmailSet, IdentityGet, ImportEmail, InMailbox,
    JmapRequest, MailboxGet, Submission, SubmissionEnvelope, SubmissionSet, keyword_patch,
    move_patch,
};

/// `Mailbox/get` for every mailbox.
pub fn mailbox_get(account: &str) -> JmapRequest {
    let args = MailboxGet {
        account_id: account,
        ids: None,
    };
    JmapRequest::mail(false).call("Mailbox/get", &args, "0")
}

/// `Email/query`: the newest `limit` messages in `mailbox`, with the total.
pub fn email_query(account: &str, mailbox: &str, limit: u32) -> JmapRequest {
    let args = EmailQuery {
        account_id: account,
        filter: InMailbox {
            in_mailbox: mailbox,
        },
        sort: vec![Comparator {
            property: "receivedAt",
            is_ascending: false,
        }],
        limit,
        calculate_total: true,
    };
    JmapRequest::mail(false).call("Email/query", &args, "0")
}

/// `Email/get` of `ids` with `properties`; `with_bodies` fetches the text
/// body values too (a read).
pub fn email_get(
    account: &str,
    ids: Vec<String>,
    properties: Vec<&'static str>,
    with_bodies: bool,
) -> JmapRequest {
    let args = EmailGet {
        account_id: account,
        ids: Some(ids),
        ids_from: None,
        properties,
        fetch_text_body_values: with_bodies,
    };
    JmapRequest::mail(false).call("Email/get", &args, "0")
}

/// `Email/set` setting (`on`) or clearing one keyword on a message.
pub fn set_keyword(account: &str, id: &str, keyword: &str, on: bool) -> JmapRequest {
    email_set(
        account,
        BTreeMap::from([(id.to_owned(), keyword_patch(keyword, on))]),
        Vec::new(),
    )
}

/// `Email/set` moving a message from one mailbox to another.
pub fn move_email(account: &str, id: &str, from: &str, to: &str) -> JmapRequest {
    email_set(
        account,
        BTreeMap::from([(id.to_owned(), move_patch(from, to))]),
        Vec::new(),
    )
}

/// `Email/set` destroying messages.
pub fn destroy(account: &str, ids: Vec<String>) -> JmapRequest {
    email_set(account, BTreeMap::new(), ids)
}

fn email_set(
    account: &str,
    update: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    destroy: Vec<String>,
) -> JmapRequest {
    let args = EmailSet {
        account_id: account,
        update,
        destroy,
    };
    JmapRequest::mail(false).call("Email/set", &args, "0")
}

/// `Identity/get`.
pub fn identity_get(account: &str) -> JmapRequest {
    JmapRequest::mail(true).call(
        "Identity/get",
        &IdentityGet {
            account_id: account,
        },
        "0",
    )
}

/// `Email/import` of an uploaded message into `mailbox` (marked seen, as a
/// sent copy is), then `EmailSubmission/set` of it (`#m`) as `identity`.
pub fn import_and_submit(
    account: &str,
    blob_id: &str,
    mailbox: &str,
    identity: &str,
) -> JmapRequest {
    import_and_submit_to(account, blob_id, mailbox, identity, None)
}

/// `Email/import` of an uploaded message (as `m`) into `mailbox` with
/// `keywords`.
pub fn import(account: &str, blob_id: &str, mailbox: &str, keywords: &[&str]) -> JmapRequest {
    JmapRequest::mail(false).call(
        "Email/import",
        &import_args(account, blob_id, mailbox, keywords),
        "0",
    )
}

fn import_args<'a>(
    account: &'a str,
    blob_id: &str,
    mailbox: &str,
    keywords: &[&str],
) -> EmailImport<'a> {
    EmailImport {
        account_id: account,
        emails: BTreeMap::from([(
            "m".to_owned(),
            ImportEmail {
                blob_id: blob_id.to_owned(),
                mailbox_ids: BTreeMap::from([(mailbox.to_owned(), true)]),
                keywords: keywords.iter().map(|k| ((*k).to_owned(), true)).collect(),
            },
        )]),
    }
}

/// As [`import_and_submit`], with an explicit SMTP envelope when given
/// (the recipients of a distribution list are not in the message's headers).
pub fn import_and_submit_to(
    account: &str,
    blob_id: &str,
    mailbox: &str,
    identity: &str,
    envelope: Option<SubmissionEnvelope>,
) -> JmapRequest {
    let import = EmailImport {
        account_id: account,
        emails: BTreeMap::from([(
            "m".to_owned(),
            ImportEmail {
                blob_id: blob_id.to_owned(),
                mailbox_ids: BTreeMap::from([(mailbox.to_owned(), true)]),
                keywords: BTreeMap::from([("$seen".to_owned(), true)]),
            },
        )]),
    };
    let submit = SubmissionSet {
        account_id: account,
        create: BTreeMap::from([(
            "s".to_owned(),
            Submission {
                identity_id: identity.to_owned(),
                email_id: "#m".to_owned(),
                envelope,
            },
        )]),
    };
    JmapRequest::mail(true)
        .call("Email/import", &import, "0")
        .call("EmailSubmission/set", &submit, "1")
}
