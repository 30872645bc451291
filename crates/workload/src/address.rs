//! The one check every test address passes before peakhour writes it into an
//! envelope (issue 26, item 4): an allow-list, not a list of bad forms.
//!
//! An address is `local@domain` where
//! - the local part is a dot-atom (RFC 5322: `atext` between single dots, none
//!   leading or trailing) of ASCII letters, digits and `#$&'*+-/=?^_`{|}~`:
//!   RFC 5322's `atext` without `%` and `!`, which some servers still route on
//!   (the percent hack `victim%gmail.com@bench.test`, UUCP bang paths
//!   `gmail.com!victim@bench.test`). A quoted local part
//!   (`"victim@gmail.com"@bench.test`), a source route
//!   (`@gmail.com:victim@bench.test`) and a second `@` are not dot-atoms;
//! - the domain is a host name: ASCII letters, digits and inner hyphens in
//!   labels of 1 to 63 characters between single dots (no address literal, no
//!   trailing dot);
//! - the whole is at most 254 characters, the local part at most 64.
//!
//! Whether the domain is one mail may go to (a reserved test name or one the
//! operator allowed) is the population's question, asked after this one.

use std::fmt;

/// The longest local part (RFC 5321, 4.5.3.1.1).
pub const MAX_LOCAL_PART: usize = 64;
/// The longest address (RFC 5321's path of 256, less the angle brackets).
pub const MAX_ADDRESS: usize = 254;

/// The characters a local part may hold besides ASCII letters, digits and
/// the dots between its atoms.
pub const LOCAL_PART_SYMBOLS: &str = "#$&'*+-/=?^_`{|}~";

/// Why an address is not one peakhour sends to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{address:?} is not a plain mail address: {why}")]
pub struct AddressError {
    /// The address as given.
    pub address: String,
    /// What is wrong with it.
    pub why: AddressFault,
}

/// What is wrong with an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressFault {
    /// No `@`, or nothing before or after it.
    NoAt,
    /// The local part holds a character outside the allow-list.
    LocalCharacter(char),
    /// The local part starts or ends with a dot, or has two in a row.
    LocalDots,
    /// The local part is longer than [`MAX_LOCAL_PART`].
    LocalTooLong,
    /// The domain is not a host name.
    Domain(DomainFault),
    /// The address is longer than [`MAX_ADDRESS`].
    TooLong,
}

/// What is wrong with a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainFault {
    /// A character other than ASCII letters, digits, hyphens and dots.
    Character(char),
    /// An empty label: a leading, trailing or doubled dot.
    EmptyLabel,
    /// A label that starts or ends with a hyphen.
    Hyphen,
    /// A label longer than 63 characters.
    LongLabel,
}

impl fmt::Display for AddressFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAt => f.write_str("expected local@domain"),
            Self::LocalCharacter(c @ ('%' | '!')) => write!(
                f,
                "its local part holds {c:?}, which some servers route on (the percent hack, \
                 bang paths); peakhour sends only to dot-atoms of letters, digits and {LOCAL_PART_SYMBOLS}"
            ),
            Self::LocalCharacter('@') => f.write_str(
                "it has more than one @ (a source route or an address inside an address); \
                 peakhour sends only to local@domain with a dot-atom local part",
            ),
            Self::LocalCharacter(c) => write!(
                f,
                "its local part holds {c:?}; peakhour sends only to dot-atoms of letters, \
                 digits and {LOCAL_PART_SYMBOLS} (no quoting, no source routes)"
            ),
            Self::LocalDots => {
                f.write_str("its local part starts or ends with a dot, or has two in a row")
            }
            Self::LocalTooLong => write!(f, "its local part is over {MAX_LOCAL_PART} characters"),
            Self::Domain(fault) => write!(f, "its domain {fault}"),
            Self::TooLong => write!(f, "it is over {MAX_ADDRESS} characters"),
        }
    }
}

impl fmt::Display for DomainFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Character(c) => write!(
                f,
                "holds {c:?}; a domain is ASCII letters, digits, hyphens and dots"
            ),
            Self::EmptyLabel => f.write_str("starts or ends with a dot, or has two in a row"),
            Self::Hyphen => f.write_str("has a label that starts or ends with a hyphen"),
            Self::LongLabel => f.write_str("has a label over 63 characters"),
        }
    }
}

/// Checks that `address` is `local@domain` as the module says; the caller
/// names where it came from.
pub fn check_address(address: &str) -> Result<(), AddressError> {
    let fault = |why| AddressError {
        address: address.to_owned(),
        why,
    };
    let (local, domain) = address
        .rsplit_once('@')
        .filter(|(local, domain)| !local.is_empty() && !domain.is_empty())
        .ok_or_else(|| fault(AddressFault::NoAt))?;
    check_local_part(local).map_err(fault)?;
    check_domain(domain).map_err(|why| fault(AddressFault::Domain(why)))?;
    if address.len() > MAX_ADDRESS {
        return Err(fault(AddressFault::TooLong));
    }
    Ok(())
}

/// Checks a local part: a dot-atom of the allowed characters.
pub fn check_local_part(local: &str) -> Result<(), AddressFault> {
    // A second `@` first: it says more than the quote or colon around it.
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '.' || LOCAL_PART_SYMBOLS.contains(c);
    if let Some(c) = local
        .chars()
        .find(|&c| c == '@')
        .or_else(|| local.chars().find(|&c| !allowed(c)))
    {
        return Err(AddressFault::LocalCharacter(c));
    }
    if local.split('.').any(str::is_empty) {
        return Err(AddressFault::LocalDots);
    }
    if local.len() > MAX_LOCAL_PART {
        return Err(AddressFault::LocalTooLong);
    }
    Ok(())
}

/// Checks a domain: a host name, one label at least.
pub fn check_domain(domain: &str) -> Result<(), DomainFault> {
    if let Some(c) = domain
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
    {
        return Err(DomainFault::Character(c));
    }
    for label in domain.split('.') {
        if label.is_empty() {
            return Err(DomainFault::EmptyLabel);
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(DomainFault::Hyphen);
        }
        if label.len() > 63 {
            return Err(DomainFault::LongLabel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_addresses_pass() {
        for address in [
            "user1@bench.test",
            "First.Last@corp.example",
            "o'brien+tag@mail.example.org",
            "a_b-c=d@x-y.test",
            "u@localhost",
        ] {
            assert_eq!(check_address(address), Ok(()), "{address}");
        }
    }

    #[test]
    fn issue_26_item_4_routing_forms_fail_the_allow_list() {
        let cases = [
            ("victim%gmail.com@bench.test", "'%'"),
            ("victim@gmail.com@bench.test", "more than one @"),
            ("@gmail.com:victim@bench.test", "more than one @"),
            ("\"victim@gmail.com\"@bench.test", "more than one @"),
            ("\"victim\"@bench.test", "'\"'"),
            ("gmail.com!victim@bench.test", "'!'"),
            ("gmail.com:victim@bench.test", "':'"),
            (".user@bench.test", "dot"),
            ("us..er@bench.test", "dot"),
            ("user.@bench.test", "dot"),
            ("user@[127.0.0.1]", "'['"),
            ("user@bench.test.", "dot"),
            ("user@-bench.test", "hyphen"),
            ("user@bench..test", "dot"),
            ("user@", "local@domain"),
            ("user", "local@domain"),
            ("us er@bench.test", "' '"),
            ("usér@bench.test", "'é'"),
        ];
        for (address, says) in cases {
            let error = check_address(address).expect_err(address);
            let text = error.to_string();
            assert!(text.contains(says), "{address}: {text}");
            assert!(text.contains(&format!("{address:?}")), "{text}");
        }
        let long = format!("{}@bench.test", "a".repeat(65));
        assert!(check_address(&long).is_err());
    }
}
