//! The JMAP Session resource (RFC 8620 §2) and its URL templates.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The core capability.
pub const CORE: &str = "urn:ietf:params:jmap:core";
/// The mail capability (RFC 8621).
pub const MAIL: &str = "urn:ietf:params:jmap:mail";
/// The submission capability (RFC 8621 §7).
pub const SUBMISSION: &str = "urn:ietf:params:jmap:submission";

/// What `/.well-known/jmap` returns; the fields peakhour uses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// Capabilities the server offers, by URI (their values are not read).
    pub capabilities: BTreeMap<String, serde_json::Value>,
    /// The accounts the user can reach, by id.
    pub accounts: BTreeMap<String, Account>,
    /// The primary account for each capability.
    #[serde(default)]
    pub primary_accounts: BTreeMap<String, String>,
    /// The user name.
    #[serde(default)]
    pub username: String,
    /// Where method calls are POSTed.
    pub api_url: String,
    /// Template for downloads (`{accountId}`, `{blobId}`, `{type}`, `{name}`).
    #[serde(default)]
    pub download_url: String,
    /// Template for uploads (`{accountId}`).
    pub upload_url: String,
    /// Template for push (`{types}`, `{closeafter}`, `{ping}`).
    #[serde(default)]
    pub event_source_url: String,
    /// The session's state string.
    #[serde(default)]
    pub state: String,
}

/// One account in the session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    /// A name for people.
    #[serde(default)]
    pub name: String,
    /// The user's own account.
    #[serde(default)]
    pub is_personal: bool,
    /// Read-only.
    #[serde(default)]
    pub is_read_only: bool,
}

impl Session {
    /// The primary account for `capability`, or the only account if the
    /// server names none.
    pub fn primary_account(&self, capability: &str) -> Option<&str> {
        self.primary_accounts
            .get(capability)
            .map(String::as_str)
            .or_else(
                || match self.accounts.keys().collect::<Vec<_>>().as_slice() {
                    [only] => Some(only.as_str()),
                    _ => None,
                },
            )
    }

    /// True if the server offers `capability`.
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities.contains_key(capability)
    }

    /// The path (and query) of the API URL, for requests on this connection.
    pub fn api_path(&self) -> &str {
        url_path(&self.api_url)
    }

    /// The upload path for `account`.
    pub fn upload_path(&self, account: &str) -> String {
        url_path(&self.upload_url).replace("{accountId}", &percent_encode(account))
    }

    /// The EventSource path: pushes for `types` (`*` or comma-separated type
    /// names), a ping every `ping_seconds` (0: none), never closed after a
    /// push.
    pub fn event_source_path(&self, types: &str, ping_seconds: u32) -> String {
        url_path(&self.event_source_url)
            .replace("{types}", &percent_encode(types))
            .replace("{closeafter}", "no")
            .replace("{ping}", &ping_seconds.to_string())
    }
}

/// The path of a URL: `https://host:8443/jmap/api/` → `/jmap/api/`; a path
/// stays as it is. peakhour talks to the server it connected to; a session
/// that names another host is the operator's to sort out.
pub fn url_path(url: &str) -> &str {
    match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |slash| &rest[slash..]),
        None => url,
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters and `*`,
/// `,` (the `types` list), for a value substituted into a URL template.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~*,".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8620 §2.1's example, shortened.
    const EXAMPLE: &str = r#"{
      "capabilities": {"urn:ietf:params:jmap:core": {"maxSizeUpload": 50000000}, "urn:ietf:params:jmap:mail": {}},
      "accounts": {"A13824": {"name": "john@example.com", "isPersonal": true, "isReadOnly": false, "accountCapabilities": {}}},
      "primaryAccounts": {"urn:ietf:params:jmap:mail": "A13824"},
      "username": "john@example.com",
      "apiUrl": "https://jmap.example.com/api/",
      "downloadUrl": "https://jmap.example.com/download/{accountId}/{blobId}/{name}?accept={type}",
      "uploadUrl": "https://jmap.example.com/upload/{accountId}/",
      "eventSourceUrl": "https://jmap.example.com/eventsource/?types={types}&closeafter={closeafter}&ping={ping}",
      "state": "75128aab4b1b"
    }"#;

    #[test]
    fn reads_the_rfc_example_and_fills_templates() {
        let session: Session = serde_json::from_str(EXAMPLE).unwrap();
        assert_eq!(session.primary_account(MAIL), Some("A13824"));
        assert_eq!(session.primary_account(SUBMISSION), Some("A13824"));
        assert!(session.has_capability(CORE));
        assert_eq!(session.api_path(), "/api/");
        assert_eq!(session.upload_path("A13824"), "/upload/A13824/");
        assert_eq!(
            session.event_source_path("Email,Mailbox", 30),
            "/eventsource/?types=Email,Mailbox&closeafter=no&ping=30"
        );
        assert_eq!(percent_encode("user@x y"), "user%40x%20y");
    }
}
