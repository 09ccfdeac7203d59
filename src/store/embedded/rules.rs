//! "Always allow" rules in the embedded store.

use super::EmbeddedStore;
use super::tables::{RULES, decode_rule};
use crate::store::{Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;
use redb::ReadableTable;

#[async_trait]
impl Rules for EmbeddedStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let (rule, stored) = (rule.clone(), rule.clone());
        self.write(move |txn| {
            let json = serde_json::to_string(&stored).expect("a rule serialises");
            txn.open_table(RULES)?
                .insert(stored.id.as_str(), json.as_str())?;
            Ok(())
        })
        .await?;
        let _ = self.events.send(Event::Rule {
            kind: EventKind::RuleCreated,
            rule,
        });
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        self.read(|txn| {
            let table = txn.open_table(RULES)?;
            let mut rules = Vec::new();
            for entry in table.iter()? {
                rules.push(decode_rule(entry?.1.value())?);
            }
            Ok(rules)
        })
        .await
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let id = id.clone();
        let removed = self
            .write(move |txn| {
                let mut rules = txn.open_table(RULES)?;
                let removed = rules.remove(id.as_str())?;
                removed.map(|json| decode_rule(json.value())).transpose()
            })
            .await?;
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
    }
}
