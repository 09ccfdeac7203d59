//! "Always allow" rules in memory.

use super::MemoryStore;
use crate::store::{Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;

#[async_trait]
impl Rules for MemoryStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        self.state().rules.insert(rule.id.clone(), rule.clone());
        let _ = self.events.send(Event::Rule {
            kind: EventKind::RuleCreated,
            rule: rule.clone(),
        });
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        Ok(self.state().rules.values().cloned().collect())
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let removed = self.state().rules.remove(id);
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
    }
}
