//! The test population: the only addresses a run may send mail to.
//!
//! A run's population is explicit. With a users file it is that file's
//! users, each with the address of its third column (or its login, when the
//! login is an address); otherwise it is the profile's name pattern and
//! domain (`user{n}@bench.test`, numbered from the profile's first user).
//! Every address the engine writes into an envelope comes from here, and
//! every recipient is checked against it again just before the SMTP
//! transaction starts ([`Population::admit`]): a recipient outside it is a
//! bug, and the run stops rather than send to it.
//!
//! Every address of it, and every recipient again, passes the one address
//! check of `peakhour_workload::address`: an allow-list (a dot-atom local
//! part without `%` or `!`, a host-name domain) that refuses the percent
//! hack, source routes, quoted local parts and bang paths (issue 26, item 4).
//!
//! On an explicit target, the population's domains must be reserved test
//! names (RFC 2606 and RFC 6761: `.test`, `.example`, `.invalid`,
//! `.localhost`, `example.com`, `example.net`, `example.org`) or be named by
//! the operator ([`Population::check_domains`]), so that a profile copied
//! with a real domain cannot mail real people by accident.

use std::collections::{BTreeSet, HashMap};

use peakhour_workload::Plan;
use peakhour_workload::address::{AddressError, check_address};

use crate::target::Credentials;

/// Domains reserved for testing and documentation: mail to them reaches
/// nobody. A domain is a test domain if it is one of these or ends with
/// `.` and one of these.
pub const RESERVED_TEST_DOMAINS: [&str; 7] = [
    "test",
    "example",
    "invalid",
    "localhost",
    "example.com",
    "example.net",
    "example.org",
];

/// Why a population or a recipient was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PopulationError {
    /// A recipient outside the population reached the SMTP stage: a bug in
    /// peakhour, so the run stops instead of sending.
    #[error(
        "refusing to send to {recipient}: it is not one of the run's {users} test users \
         (a bug in peakhour; nothing was sent to it, and the run was stopped)"
    )]
    Outside {
        /// The address refused.
        recipient: String,
        /// The population's size.
        users: u32,
    },
    /// A user index past the end of the population.
    #[error("user {user} is past the end of the population of {users} users")]
    NoSuchUser {
        /// The 0-based index asked for.
        user: u32,
        /// The population's size.
        users: u32,
    },
    /// The population's mail domains include ones that are neither reserved
    /// test names nor allowed by the operator.
    #[error(
        "the test population's addresses are in {domains}, which {is} not a reserved test \
         domain (.test, .example, .invalid, .localhost, example.com, example.net, example.org); \
         mail to it could reach real people. If these are test accounts on the server under \
         test, allow the domain explicitly: {flags}",
        domains = .domains.join(", "),
        is = if .domains.len() == 1 { "is" } else { "are" },
        flags = .domains.iter().map(|d| format!("--allow-domain {d}")).collect::<Vec<_>>().join(" "),
    )]
    DomainNotAllowed {
        /// The domains that are neither reserved nor allowed, sorted.
        domains: Vec<String>,
    },
    /// A listed address, or a recipient, that fails the one address check
    /// ([`check_address`]).
    #[error("user {user}: {error}")]
    NotAnAddress {
        /// The 0-based user index (of the envelope's recipient, for [`Population::admit`]).
        user: u32,
        /// What was given and what is wrong with it.
        error: AddressError,
    },
    /// Two users share an address: the delivery ledger could not tell their copies apart.
    #[error("users {first} and {second} share the address {address}")]
    Duplicate {
        /// The address.
        address: String,
        /// The first user (0-based).
        first: u32,
        /// The second user (0-based).
        second: u32,
    },
}

/// The users a run may send mail to, in user order.
#[derive(Debug, Clone)]
pub struct Population {
    users: u32,
    addresses: Addresses,
}

#[derive(Debug, Clone)]
enum Addresses {
    /// The profile's pattern: user `i` is `name(first + i)@domain`.
    Pattern {
        name: String,
        first: u64,
        domain: String,
    },
    /// Listed one by one (a users file); the index maps a lowercased address
    /// to its user.
    Listed {
        addresses: Vec<String>,
        index: HashMap<String, u32>,
    },
}

impl Population {
    /// The population of a run of `plan` with `credentials`: the users file's
    /// addresses when there is one, else the profile's pattern. Only the
    /// plan's first `plan.users()` users belong to it.
    pub fn new(plan: &Plan, credentials: &Credentials) -> Result<Population, PopulationError> {
        match credentials {
            Credentials::Shared(_) => Ok(Population::from_pattern(plan)),
            Credentials::PerUser(accounts) => {
                let addresses = accounts
                    .iter()
                    .take(plan.users() as usize)
                    .map(|account| account.address.clone());
                Population::listed(addresses)
            }
        }
    }

    /// The profile's pattern and domain, for `plan.users()` users.
    pub fn from_pattern(plan: &Plan) -> Population {
        let users = &plan.profile().users;
        Population {
            users: plan.users(),
            addresses: Addresses::Pattern {
                name: users.name.get_ref().clone(),
                first: u64::from(users.first),
                domain: users.domain.clone(),
            },
        }
    }

    /// Users with these addresses, in order.
    pub fn listed(addresses: impl IntoIterator<Item = String>) -> Result<Self, PopulationError> {
        let mut listed = Vec::new();
        let mut index = HashMap::new();
        for (user, address) in addresses.into_iter().enumerate() {
            let user = u32::try_from(user).unwrap_or(u32::MAX);
            let address = address.trim().to_owned();
            check_address(&address)
                .map_err(|error| PopulationError::NotAnAddress { user, error })?;
            if let Some(&first) = index.get(&address.to_ascii_lowercase()) {
                return Err(PopulationError::Duplicate {
                    address,
                    first,
                    second: user,
                });
            }
            index.insert(address.to_ascii_lowercase(), user);
            listed.push(address);
        }
        Ok(Population {
            users: u32::try_from(listed.len()).unwrap_or(u32::MAX),
            addresses: Addresses::Listed {
                addresses: listed,
                index,
            },
        })
    }

    /// How many users.
    pub fn users(&self) -> u32 {
        self.users
    }

    /// The address of user `user` (0-based).
    pub fn address(&self, user: u32) -> Result<String, PopulationError> {
        if user >= self.users {
            return Err(PopulationError::NoSuchUser {
                user,
                users: self.users,
            });
        }
        Ok(match &self.addresses {
            Addresses::Pattern {
                name,
                first,
                domain,
            } => pattern_address(name, first + u64::from(user), domain),
            Addresses::Listed { addresses, .. } => addresses[user as usize].clone(),
        })
    }

    /// The user `address` belongs to, if it is a member (case-insensitive).
    pub fn user_of(&self, address: &str) -> Option<u32> {
        let address = address.trim();
        match &self.addresses {
            Addresses::Listed { index, .. } => index.get(&address.to_ascii_lowercase()).copied(),
            Addresses::Pattern {
                name,
                first,
                domain,
            } => {
                let (local, at) = split_address(address)?;
                if !at.eq_ignore_ascii_case(domain) {
                    return None;
                }
                pattern_number(name, local)
                    .filter(|n| *n >= *first && n - first < u64::from(self.users))
                    .and_then(|n| u32::try_from(n - first).ok())
            }
        }
    }

    /// Checks, just before an SMTP transaction, that every recipient of its
    /// envelope is a plain address ([`check_address`], whatever built it) and
    /// a member of the population.
    pub fn admit(&self, envelope: &[String]) -> Result<(), PopulationError> {
        for (user, recipient) in envelope.iter().enumerate() {
            check_address(recipient).map_err(|error| PopulationError::NotAnAddress {
                user: u32::try_from(user).unwrap_or(u32::MAX),
                error,
            })?;
        }
        match envelope.iter().find(|r| self.user_of(r).is_none()) {
            Some(outside) => Err(PopulationError::Outside {
                recipient: outside.clone(),
                users: self.users,
            }),
            None => Ok(()),
        }
    }

    /// The mail domains of the population, lowercased and sorted.
    pub fn domains(&self) -> BTreeSet<String> {
        match &self.addresses {
            Addresses::Pattern { domain, .. } => BTreeSet::from([domain.to_ascii_lowercase()]),
            Addresses::Listed { addresses, .. } => addresses
                .iter()
                .filter_map(|a| split_address(a))
                .map(|(_, domain)| domain.to_ascii_lowercase())
                .collect(),
        }
    }

    /// Refuses a population with a domain that is neither a reserved test
    /// name ([`RESERVED_TEST_DOMAINS`]) nor one of `allowed`.
    pub fn check_domains(&self, allowed: &[String]) -> Result<(), PopulationError> {
        let outside: Vec<String> = self
            .domains()
            .into_iter()
            .filter(|domain| {
                !is_test_domain(domain)
                    && !allowed
                        .iter()
                        .any(|a| normalize_domain(a) == normalize_domain(domain))
            })
            .collect();
        if outside.is_empty() {
            Ok(())
        } else {
            Err(PopulationError::DomainNotAllowed { domains: outside })
        }
    }
}

/// Whether `domain` is reserved for testing: mail to it reaches nobody.
pub fn is_test_domain(domain: &str) -> bool {
    let domain = normalize_domain(domain);
    RESERVED_TEST_DOMAINS.iter().any(|reserved| {
        domain == *reserved
            || domain
                .strip_suffix(reserved)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

/// Lowercase, without a trailing dot.
fn normalize_domain(domain: &str) -> String {
    domain.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// `local@domain`, both non-empty, split at the last `@`.
fn split_address(address: &str) -> Option<(&str, &str)> {
    let (local, domain) = address.rsplit_once('@')?;
    (!local.is_empty() && !domain.is_empty() && !domain.contains(char::is_whitespace))
        .then_some((local, domain))
}

fn pattern_address(name: &str, number: u64, domain: &str) -> String {
    format!("{}@{domain}", name.replace("{n}", &number.to_string()))
}

/// The number `n` for which `name` with `{n}` replaced is `local`.
fn pattern_number(name: &str, local: &str) -> Option<u64> {
    let (prefix, _) = name.split_once("{n}")?;
    let head = local.get(..prefix.len())?;
    let rest = local.get(prefix.len()..)?;
    if !head.eq_ignore_ascii_case(prefix) {
        return None;
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // The pattern may go on with digits after `{n}`: try every split.
    (1..=digits.min(20))
        .filter_map(|len| rest[..len].parse::<u64>().ok())
        .find(|&n| {
            name.replace("{n}", &n.to_string())
                .eq_ignore_ascii_case(local)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_test_domains_and_their_subdomains_are_test_domains() {
        for domain in [
            "bench.test",
            "test",
            "mail.example",
            "x.invalid",
            "localhost",
            "a.localhost",
            "example.com",
            "lab.example.org",
            "EXAMPLE.NET.",
        ] {
            assert!(is_test_domain(domain), "{domain}");
        }
        for domain in [
            "outside.example.co",
            "example.co",
            "contest",
            "myexample.com",
            "gmail.com",
            "testing",
        ] {
            assert!(!is_test_domain(domain), "{domain}");
        }
    }

    #[test]
    fn listed_members_are_found_case_insensitively_and_others_are_not() {
        let population =
            Population::listed(["a@bench.test".to_owned(), "B@Bench.Test".to_owned()]).unwrap();
        assert_eq!(population.user_of("A@BENCH.TEST"), Some(0));
        assert_eq!(population.user_of("b@bench.test"), Some(1));
        assert_eq!(population.user_of("c@bench.test"), None);
        assert_eq!(population.address(1).unwrap(), "B@Bench.Test");
        assert!(population.address(2).is_err());
        let outside = population
            .admit(&["a@bench.test".into(), "user4@outside.example.co".into()])
            .unwrap_err();
        assert!(
            matches!(outside, PopulationError::Outside { ref recipient, .. } if recipient == "user4@outside.example.co")
        );
    }

    #[test]
    fn issue_26_item_4_a_listed_population_and_an_envelope_take_only_plain_addresses() {
        for address in [
            "victim%gmail.com@bench.test",
            "victim@gmail.com@bench.test",
            "@gmail.com:victim@bench.test",
            "\"victim@gmail.com\"@bench.test",
            "gmail.com!victim@bench.test",
        ] {
            let listed = Population::listed(["a@bench.test".to_owned(), address.to_owned()]);
            assert!(
                matches!(listed, Err(PopulationError::NotAnAddress { user: 1, .. })),
                "{address}: {listed:?}"
            );
            let population = Population::listed(["a@bench.test".to_owned()]).unwrap();
            let refused = population.admit(&["a@bench.test".into(), address.into()]);
            assert!(
                matches!(refused, Err(PopulationError::NotAnAddress { user: 1, .. })),
                "{address}"
            );
        }
    }

    #[test]
    fn a_listed_population_refuses_non_addresses_and_duplicates() {
        assert!(matches!(
            Population::listed(["alice".to_owned()]),
            Err(PopulationError::NotAnAddress { .. })
        ));
        assert!(matches!(
            Population::listed(["a@x.test".to_owned(), "A@X.TEST".to_owned()]),
            Err(PopulationError::Duplicate {
                first: 0,
                second: 1,
                ..
            })
        ));
    }

    #[test]
    fn pattern_numbers_are_parsed_back_even_with_digits_after_the_number() {
        assert_eq!(pattern_number("user{n}", "user12"), Some(12));
        assert_eq!(pattern_number("user{n}", "User12"), Some(12));
        assert_eq!(pattern_number("u{n}9", "u129"), Some(12));
        assert_eq!(pattern_number("user{n}", "user"), None);
        assert_eq!(pattern_number("user{n}", "admin1"), None);
        assert_eq!(pattern_number("user{n}", "user1x"), None);
    }

    #[test]
    fn outside_domains_are_refused_unless_allowed_and_the_error_says_how() {
        let population = Population::listed([
            "a@bench.test".to_owned(),
            "b@corp.example.co".to_owned(),
            "c@Corp.Example.Co".to_owned(),
        ])
        .unwrap();
        let error = population.check_domains(&[]).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("corp.example.co"), "{text}");
        assert!(text.contains("--allow-domain corp.example.co"), "{text}");
        assert!(!text.contains("bench.test"), "{text}");
        assert!(
            population
                .check_domains(&["CORP.example.co.".into()])
                .is_ok()
        );
    }
}
