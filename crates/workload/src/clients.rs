//! Client personalities (issue 28): which mail client each simulated user
//! imitates. `peakhour` is peakhour's own IMAP (one session all day, IDLE
//! between actions), the default; the others imitate clients recorded
//! against Dovecot (docs/clients.md). A profile's `[clients]` table mixes
//! them by weight (`thunderbird = 0.6, roundcube = 0.3, mbsync = 0.1`);
//! `run --client NAME` gives every user one. Each user's personality is
//! drawn from the run's seed and the user's number alone, so user 7 is the
//! same client whether 10 or 1000 users run.

use std::collections::BTreeMap;
use std::fmt;

use crate::rng::{Rng, domain};

/// A mail client a simulated user imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Personality {
    /// peakhour's own IMAP: one session kept all day, IDLE between actions.
    Peakhour,
    /// Thunderbird (153 ESR, warm start).
    Thunderbird,
    /// mbsync (isync 1.4), run after each change and every 5 minutes.
    Mbsync,
    /// neomutt (2022), without a header cache.
    Neomutt,
    /// Roundcube (1.6) webmail.
    Roundcube,
}

impl Personality {
    /// Every personality, in the order help texts list them.
    pub const ALL: [Personality; 5] = [
        Personality::Peakhour,
        Personality::Thunderbird,
        Personality::Mbsync,
        Personality::Neomutt,
        Personality::Roundcube,
    ];

    /// The name `run --client` and `[clients]` use.
    pub fn name(self) -> &'static str {
        match self {
            Personality::Peakhour => "peakhour",
            Personality::Thunderbird => "thunderbird",
            Personality::Mbsync => "mbsync",
            Personality::Neomutt => "neomutt",
            Personality::Roundcube => "roundcube",
        }
    }

    /// The personality called `name`; the error names it and lists the valid ones.
    pub fn parse(name: &str) -> Result<Personality, UnknownClient> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| UnknownClient(name.to_owned()))
    }

    /// The valid names, comma-separated, for messages and help texts.
    pub fn names() -> String {
        Self::ALL.map(Personality::name).join(", ")
    }
}

impl fmt::Display for Personality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A client name that is none of the personalities.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown client `{0}`: the clients are {names}", names = Personality::names())]
pub struct UnknownClient(pub String);

/// The users' clients: each personality with its share of the users.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientMix {
    /// Personalities with a weight above 0, in [`Personality::ALL`] order.
    shares: Vec<(Personality, f64)>,
}

impl Default for ClientMix {
    fn default() -> Self {
        ClientMix::only(Personality::Peakhour)
    }
}

impl ClientMix {
    /// Every user the same client.
    pub fn only(personality: Personality) -> ClientMix {
        ClientMix {
            shares: vec![(personality, 1.0)],
        }
    }

    /// A mix from a profile's `[clients]` table: names and weights (any
    /// positive scale; they need not add up to 1).
    pub fn from_weights(weights: &BTreeMap<String, f64>) -> Result<ClientMix, MixError> {
        let mut shares = Vec::new();
        for (name, &weight) in weights {
            let personality = Personality::parse(name).map_err(MixError::Unknown)?;
            if !weight.is_finite() || weight < 0.0 {
                return Err(MixError::Weight(name.clone(), weight));
            }
            if weight > 0.0 {
                shares.push((personality, weight));
            }
        }
        let total: f64 = shares.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            return Err(MixError::Empty);
        }
        shares.sort_by_key(|(p, _)| *p);
        for share in &mut shares {
            share.1 /= total;
        }
        Ok(ClientMix { shares })
    }

    /// The personalities and their shares (adding up to 1).
    pub fn shares(&self) -> &[(Personality, f64)] {
        &self.shares
    }

    /// True when every user is peakhour's own client.
    pub fn is_default(&self) -> bool {
        self.shares == [(Personality::Peakhour, 1.0)]
    }

    /// The client of `user` under `seed`: drawn by weight from the user's
    /// own stream, so that it does not depend on how many users run.
    pub fn client_of(&self, seed: u64, user: u32) -> Personality {
        if let [(only, _)] = self.shares[..] {
            return only;
        }
        let mut rng = Rng::derive(seed, domain::CLIENT, u64::from(user), 0);
        let mut draw = rng.unit();
        for &(personality, share) in &self.shares {
            if draw < share {
                return personality;
            }
            draw -= share;
        }
        self.shares.last().map_or(Personality::Peakhour, |s| s.0)
    }

    /// `thunderbird=0.6,roundcube=0.3,mbsync=0.1`, or one name alone: what
    /// the summary's meta records.
    pub fn describe(&self) -> String {
        if let [(only, _)] = self.shares[..] {
            return only.name().to_owned();
        }
        self.shares
            .iter()
            .map(|(p, s)| format!("{}={}", p.name(), (s * 1000.0).round() / 1000.0))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// What is wrong with a `[clients]` table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MixError {
    /// A name that is no personality.
    #[error(transparent)]
    Unknown(UnknownClient),
    /// A weight below 0 or not a number.
    #[error("the weight of `{0}` must be 0 or more (got {1})")]
    Weight(String, f64),
    /// Every weight is 0.
    #[error("at least one client needs a weight above 0")]
    Empty,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_item_2_an_unknown_client_is_named_with_the_valid_ones() {
        let error = Personality::parse("outlook").unwrap_err().to_string();
        assert!(error.contains("`outlook`"), "{error}");
        for p in Personality::ALL {
            assert!(error.contains(p.name()), "{error}");
        }
        let weights = BTreeMap::from([("evolution".to_owned(), 1.0)]);
        let error = ClientMix::from_weights(&weights).unwrap_err().to_string();
        assert!(
            error.contains("`evolution`") && error.contains("roundcube"),
            "{error}"
        );
    }

    #[test]
    fn issue_28_item_2_a_mix_gives_each_user_one_client_by_weight_from_the_seed() {
        let weights = BTreeMap::from([
            ("thunderbird".to_owned(), 6.0),
            ("roundcube".to_owned(), 3.0),
            ("mbsync".to_owned(), 1.0),
        ]);
        let mix = ClientMix::from_weights(&weights).unwrap();
        assert_eq!(mix.describe(), "thunderbird=0.6,mbsync=0.1,roundcube=0.3");
        let users = 4000;
        let count = |p| (0..users).filter(|&u| mix.client_of(9, u) == p).count() as f64;
        let share = |p| count(p) / f64::from(users);
        assert!((share(Personality::Thunderbird) - 0.6).abs() < 0.03);
        assert!((share(Personality::Roundcube) - 0.3).abs() < 0.03);
        assert!((share(Personality::Mbsync) - 0.1).abs() < 0.02);
        assert_eq!(count(Personality::Peakhour), 0.0);
        // The same seed, the same clients; another seed, others.
        let a: Vec<_> = (0..50).map(|u| mix.client_of(9, u)).collect();
        assert_eq!(a, (0..50).map(|u| mix.client_of(9, u)).collect::<Vec<_>>());
        assert_ne!(a, (0..50).map(|u| mix.client_of(10, u)).collect::<Vec<_>>());
        assert!(ClientMix::default().is_default());
    }

    #[test]
    fn issue_28_item_2_a_profile_naming_an_unknown_client_is_refused_at_its_line() {
        let source = crate::builtin("mmb-medium").unwrap().source.to_owned()
            + "\n[clients]\nthunderbird = 0.5\noutlook = 0.5\n";
        let error = crate::Profile::parse("mix.toml", &source)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("mix.toml:"), "{error}");
        assert!(
            error.contains("`outlook`") && error.contains("neomutt"),
            "{error}"
        );
        let source = crate::builtin("mmb-medium").unwrap().source.to_owned()
            + "\n[clients]\nthunderbird = 0.6\nroundcube = 0.4\n";
        let profile = crate::Profile::parse("mix.toml", &source).unwrap();
        let plan = crate::Plan::resolve(&profile, &crate::Overrides::default()).unwrap();
        assert_eq!(
            plan.client_mix().describe(),
            "thunderbird=0.6,roundcube=0.4"
        );
        let only = crate::Overrides {
            client: Some(Personality::Neomutt),
            ..crate::Overrides::default()
        };
        let plan = crate::Plan::resolve(&profile, &only).unwrap();
        assert_eq!(
            plan.client_of(3),
            Personality::Neomutt,
            "--client wins over [clients]"
        );
    }
}
