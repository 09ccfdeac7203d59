//! Where a rule is found: under its action's digest and its scope. Asking an approval looks up
//! the two places a rule for it could be (its session's, and everywhere) rather than reading
//! every rule, so an approval costs the same with 100,000 rules as with none. Every store keeps
//! this index in the same write as the rule, and drops an entry in the same write that drops
//! the rule: an entry never outlives its rule, and a rule is never unfindable.
//!
//! The key is written here once, for every store: a store that spelled it its own way could file
//! a rule where its lookups never look.

use askbridge_core::{Rule, Scope};

/// A place in the index: an action's digest in one scope.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RuleKey {
    /// The action's digest ([`askbridge_core::Action::digest`]).
    pub(crate) digest: String,
    /// The scope: `*` everywhere, `s<length>:<session>` in a session (the length keeps a
    /// session named `*`, or one whose name starts with another's, from meeting another).
    pub(crate) scope: String,
}

impl RuleKey {
    /// Where `rule` is filed.
    pub(crate) fn of(rule: &Rule) -> Self {
        RuleKey::in_scope(&rule.action.digest(), &rule.scope)
    }

    fn in_scope(digest: &str, scope: &Scope) -> Self {
        let scope = match scope {
            Scope::Everywhere => "*".to_owned(),
            Scope::Session { session_id } => format!("s{}:{session_id}", session_id.len()),
        };
        RuleKey {
            digest: digest.to_owned(),
            scope,
        }
    }

    /// The places a rule deciding the action with `digest` in `session_id` may be: that
    /// session's, and everywhere.
    pub(crate) fn lookups(digest: &str, session_id: &str) -> [RuleKey; 2] {
        [
            RuleKey::in_scope(
                digest,
                &Scope::Session {
                    session_id: session_id.to_owned(),
                },
            ),
            RuleKey::in_scope(digest, &Scope::Everywhere),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::{Action, Millis};

    fn rule(scope: Scope) -> Rule {
        Rule {
            id: "rule-1".into(),
            action: Action::new("shell", serde_json::json!({"command": "make"})),
            scope,
            created_by: "telegram:1".into(),
            created_at: Millis(5),
            question_id: None,
            quorum: 0,
        }
    }

    #[test]
    fn a_rule_is_filed_where_its_lookups_look() {
        let digest = rule(Scope::Everywhere).action.digest();
        let [session, everywhere] = RuleKey::lookups(&digest, "s1");
        assert_eq!(RuleKey::of(&rule(Scope::Everywhere)), everywhere);
        let in_s1 = rule(Scope::Session {
            session_id: "s1".into(),
        });
        assert_eq!(RuleKey::of(&in_s1), session);
        assert_ne!(RuleKey::of(&in_s1), everywhere);
    }

    #[test]
    fn no_two_scopes_meet() {
        let scope = |session: &str| RuleKey::lookups("d", session)[0].scope.clone();
        let everywhere = RuleKey::lookups("d", "a")[1].scope.clone();
        assert_ne!(scope("a"), scope("a/b"));
        assert_ne!(scope("*"), everywhere);
        assert_ne!(scope(""), everywhere);
    }
}
