//! Quorum: a question that needs M distinct people out of a set to agree.
//!
//! Each person votes once, store-side (the store refuses a second vote by the same identity
//! atomically, as it refuses a second claim), and the question stays pending, showing its
//! progress, until `needs` votes agree — or one member declines (rejects), which ends it at once.
//! The winning resolution lists every vote. This module holds the data and the request check;
//! [`crate::tally`] the rules that need the question.
//!
//! It imports only identities, time and answer values, so the question can hold its types.

use crate::error::Error;
use crate::identity::{Identity, is_well_formed};
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};

/// Most members of one quorum.
pub const MAX_MEMBERS: usize = 20;

/// `needs` distinct members of `of` must agree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quorum {
    /// How many must agree (2 for "two of three").
    pub needs: u32,
    /// Who may vote: identities, like answerers (`api` is one identity: every HTTP caller
    /// together is one vote).
    pub of: Vec<Identity>,
}

/// One person's vote on a question with a quorum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    /// Who voted.
    pub by: Identity,
    /// Their display name, when the surface gives one (`@alice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_name: Option<String>,
    /// Through which surface.
    pub via: String,
    /// When.
    pub at: Millis,
    /// What they answered (for approvals `once` or `always`).
    pub value: Answer,
    /// What votes must share to count together: `allow` for approvals, `yes` for confirms,
    /// the answer itself for other questions.
    pub tally: String,
}

impl Vote {
    /// The name to show for the voter (`@alice`, else `telegram:42`).
    pub fn who(&self) -> String {
        self.by_name.clone().unwrap_or_else(|| self.by.to_string())
    }
}

/// How many of `votes` share `tally`.
pub fn count(votes: &[Vote], tally: &str) -> u32 {
    votes.iter().filter(|v| v.tally == tally).count() as u32
}

/// Checks a request's quorum: `needs` at least 1 and at most the members, members well formed,
/// distinct, at most [`MAX_MEMBERS`].
pub fn check(quorum: &Quorum) -> Result<(), Error> {
    let invalid = |reason: String| Error::Invalid {
        field: "quorum",
        reason,
    };
    if quorum.of.is_empty() || quorum.of.len() > MAX_MEMBERS {
        return Err(invalid(format!(
            "`of` must name 1 to {MAX_MEMBERS} identities"
        )));
    }
    if let Some(bad) = quorum.of.iter().find(|who| !is_well_formed(who.as_str())) {
        return Err(invalid(crate::identity::malformed(bad.as_str())));
    }
    let mut seen: Vec<&Identity> = Vec::new();
    for who in &quorum.of {
        if seen.contains(&who) {
            return Err(invalid(format!("{who} is named twice")));
        }
        seen.push(who);
    }
    if quorum.needs == 0 || quorum.needs as usize > quorum.of.len() {
        return Err(invalid(format!(
            "`needs` must be between 1 and the {} members",
            quorum.of.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quorum(needs: u32, of: &[&str]) -> Quorum {
        Quorum {
            needs,
            of: of.iter().map(|o| Identity::new(*o)).collect(),
        }
    }

    #[test]
    fn a_quorum_is_checked() {
        assert!(check(&quorum(2, &["telegram:42", "discord:7", "api"])).is_ok());
        for bad in [
            quorum(0, &["api"]),
            quorum(3, &["api", "telegram:1"]),
            quorum(1, &[]),
            quorum(1, &["nobody"]),
            quorum(1, &["api", "api"]),
        ] {
            match check(&bad) {
                Err(Error::Invalid { field, .. }) => assert_eq!(field, "quorum"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
