//! "Always allow" rules in memory, with the index an approval finds them by (`rule_index.rs`).

use super::{MemoryStore, State};
use crate::store::rule_index::RuleKey;
use crate::store::{Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;

impl State {
    /// Takes `id` out of the rules and out of the index, together.
    fn remove_rule(&mut self, id: &RuleId) -> Option<Rule> {
        let removed = self.rules.remove(id)?;
        let key = RuleKey::of(&removed);
        if let Some(ids) = self.rules_by_key.get_mut(&key) {
            ids.remove(id);
            if ids.is_empty() {
                self.rules_by_key.remove(&key);
            }
        }
        Some(removed)
    }
}

#[async_trait]
impl Rules for MemoryStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        {
            let mut state = self.state();
            // A rule replaced may have been filed elsewhere.
            state.remove_rule(&rule.id);
            state.rules.insert(rule.id.clone(), rule.clone());
            state
                .rules_by_key
                .entry(RuleKey::of(rule))
                .or_default()
                .insert(rule.id.clone());
        }
        let _ = self.events.send(Event::Rule {
            kind: EventKind::RuleCreated,
            rule: rule.clone(),
        });
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        Ok(self.state().rules.values().cloned().collect())
    }

    async fn rules_for(&self, digest: &str, session_id: &str) -> Result<Vec<Rule>> {
        let state = self.state();
        Ok(RuleKey::lookups(digest, session_id)
            .iter()
            .filter_map(|key| state.rules_by_key.get(key))
            .flatten()
            .filter_map(|id| state.rules.get(id).cloned())
            .collect())
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let removed = self.state().remove_rule(id);
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
    }
}
