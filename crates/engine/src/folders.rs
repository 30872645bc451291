//! Folder names as the server spells them.
//!
//! A profile names its folders as a user sees them (`INBOX`, `Sent`,
//! `Trash`, `Folder7`). Servers differ in where a user's own folders live:
//! Dovecot's default puts them at the top level, while Courier, Cyrus and
//! many hosted servers keep them under `INBOX.` with `.` as separator and
//! refuse a top-level `Sent`. At logon the engine asks (NAMESPACE, RFC 2342,
//! and LIST with its special-use attributes, RFC 6154) and maps each profile
//! name to the server's: `Sent` is the folder marked `\Sent` when there is
//! one, else `Sent` under the personal namespace's prefix (`INBOX.Sent`).
//! `--folder-prefix` overrides the prefix the server announced.

use std::time::Duration;

use peakhour_imap::{ImapConnection, ImapError, ListEntry, Namespaces};
use peakhour_workload::ActionParams;
use tokio::io::{AsyncRead, AsyncWrite};

/// What the server said about its folders, and how profile names map onto them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerFolders {
    /// The personal namespace's prefix, separator included (`INBOX.`), or empty.
    pub prefix: String,
    /// The hierarchy separator, when the server announced one.
    pub separator: Option<char>,
    /// The folder marked `\Sent`, if any.
    pub sent: Option<String>,
    /// The folder marked `\Trash`, if any.
    pub trash: Option<String>,
}

impl ServerFolders {
    /// From the NAMESPACE reply (if the server offers NAMESPACE), the LIST of
    /// every folder, and the `--folder-prefix` override.
    pub fn discover(
        namespaces: Option<&Namespaces>,
        listing: &[ListEntry],
        prefix_override: Option<&str>,
    ) -> ServerFolders {
        let personal = namespaces.and_then(|n| n.personal.first());
        let separator = personal
            .and_then(|p| p.delimiter)
            .or_else(|| listing.iter().find_map(|e| e.delimiter));
        let prefix = prefix_override
            .map(str::to_owned)
            .or_else(|| personal.map(|p| p.prefix.clone()))
            .unwrap_or_default();
        let marked = |flag: &str| {
            listing
                .iter()
                .find(|e| e.attributes.iter().any(|a| a.eq_ignore_ascii_case(flag)))
                .map(|e| e.name.clone())
        };
        ServerFolders {
            prefix,
            separator,
            sent: marked("\\Sent"),
            trash: marked("\\Trash"),
        }
    }

    /// The server's name of the profile's folder `name`: INBOX stays INBOX
    /// (every server has it, whatever its namespace), a name already under
    /// the prefix is kept, any other goes under the prefix, with the
    /// profile's `/` hierarchy written with the server's separator.
    pub fn name(&self, name: &str) -> String {
        let under_prefix = !self.prefix.is_empty()
            && name
                .get(..self.prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(&self.prefix));
        if name.eq_ignore_ascii_case("INBOX") || under_prefix {
            return name.to_owned();
        }
        let relative = match self.separator {
            Some(separator) => name.replace('/', &separator.to_string()),
            None => name.to_owned(),
        };
        format!("{}{relative}", self.prefix)
    }

    /// The profile's action parameters with every folder as the server names
    /// it; the sent and trash folders are the server's special-use ones
    /// when it marks them.
    pub fn params(&self, params: &ActionParams) -> ActionParams {
        ActionParams {
            inbox: self.name(&params.inbox),
            move_from: self.name(&params.move_from),
            move_targets: params.move_targets.iter().map(|n| self.name(n)).collect(),
            trash: self
                .trash
                .clone()
                .unwrap_or_else(|| self.name(&params.trash)),
            sent_folder: self
                .sent
                .clone()
                .unwrap_or_else(|| self.name(&params.sent_folder)),
            calendar_folder: self.name(&params.calendar_folder),
            ..params.clone()
        }
    }

    /// The server's name of one of the profile's initial folders
    /// ([`Plan::folders`](peakhour_workload::Plan::folders)), where the
    /// profile's trash and sent folders are the special-use ones.
    pub fn initial_folder(&self, params: &ActionParams, name: &str) -> String {
        if name.eq_ignore_ascii_case(&params.trash)
            && let Some(trash) = &self.trash
        {
            return trash.clone();
        }
        if name.eq_ignore_ascii_case(&params.sent_folder)
            && let Some(sent) = &self.sent
        {
            return sent.clone();
        }
        self.name(name)
    }
}

/// Whether `existing` (a LIST) holds `folder`; INBOX is case-insensitive,
/// and so is every other name here, as servers on case-insensitive stores
/// may report another case than the one created.
pub(crate) fn listed(existing: &[String], folder: &str) -> bool {
    existing
        .iter()
        .any(|name| name.eq_ignore_ascii_case(folder))
}

/// Asks the server where the user's folders are: NAMESPACE when it offers
/// it, then LIST of every folder. `record` gets each command's name and
/// time, for the run's per-command figures.
pub(crate) async fn discover<S: AsyncRead + AsyncWrite + Unpin + Send>(
    imap: &mut ImapConnection<S>,
    prefix_override: Option<&str>,
    mut record: impl FnMut(&'static str, Duration),
) -> Result<(ServerFolders, Vec<ListEntry>), ImapError> {
    let namespaces = match imap.namespace().await {
        Ok(timed) => {
            record("imap.NAMESPACE", timed.elapsed);
            Some(timed.value)
        }
        // Not offered: the LIST's separator and an empty prefix will do.
        Err(ImapError::NotOffered(_)) => None,
        Err(error) => return Err(error),
    };
    let listed = imap.list("", "*").await?;
    record("imap.LIST", listed.elapsed);
    let folders = ServerFolders::discover(namespaces.as_ref(), &listed.value, prefix_override);
    Ok((folders, listed.value))
}

#[cfg(test)]
mod tests {
    use peakhour_imap::NamespaceEntry;

    use super::*;

    fn entry(name: &str, flags: &[&str]) -> ListEntry {
        ListEntry {
            name: name.into(),
            delimiter: Some('.'),
            attributes: flags.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    fn inbox_dot() -> Namespaces {
        Namespaces {
            personal: vec![NamespaceEntry {
                prefix: "INBOX.".into(),
                delimiter: Some('.'),
            }],
            ..Namespaces::default()
        }
    }

    #[test]
    fn issue_12_profile_names_go_under_an_inbox_dot_namespace() {
        let listing = [
            entry("INBOX", &["\\HasChildren"]),
            entry("INBOX.Sent", &["\\Sent"]),
        ];
        let folders = ServerFolders::discover(Some(&inbox_dot()), &listing, None);
        assert_eq!(folders.name("INBOX"), "INBOX");
        assert_eq!(folders.name("Folder7"), "INBOX.Folder7");
        assert_eq!(folders.name("INBOX.Folder7"), "INBOX.Folder7");
        assert_eq!(folders.name("Projects/2026"), "INBOX.Projects.2026");
        let params = ActionParams {
            inbox: "INBOX".into(),
            move_from: "INBOX".into(),
            move_targets: vec!["Folder1".into()],
            trash: "Trash".into(),
            sent_folder: "Sent".into(),
            calendar_folder: "Calendar".into(),
            ..ActionParams::default()
        };
        let mapped = folders.params(&params);
        assert_eq!(mapped.sent_folder, "INBOX.Sent");
        assert_eq!(mapped.trash, "INBOX.Trash");
        assert_eq!(mapped.calendar_folder, "INBOX.Calendar");
        assert_eq!(mapped.move_targets, vec!["INBOX.Folder1".to_owned()]);
    }

    #[test]
    fn issue_12_special_use_folders_win_over_the_profile_names() {
        let listing = [
            entry("Sent Items", &["\\HasNoChildren", "\\Sent"]),
            entry("Deleted Items", &["\\Trash"]),
        ];
        let folders = ServerFolders::discover(None, &listing, None);
        let params = ActionParams {
            trash: "Trash".into(),
            sent_folder: "Sent".into(),
            ..ActionParams::default()
        };
        assert_eq!(folders.params(&params).sent_folder, "Sent Items");
        assert_eq!(folders.initial_folder(&params, "trash"), "Deleted Items");
        assert_eq!(folders.initial_folder(&params, "Folder1"), "Folder1");
    }

    #[test]
    fn a_folder_prefix_given_overrides_the_server() {
        let folders = ServerFolders::discover(Some(&inbox_dot()), &[], Some(""));
        assert_eq!(folders.name("Sent"), "Sent");
        let folders = ServerFolders::discover(None, &[entry("INBOX", &[])], Some("INBOX."));
        assert_eq!(folders.name("Sent"), "INBOX.Sent");
    }
}
