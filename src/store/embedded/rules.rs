//! "Always allow" rules in the embedded store, with the index an approval finds them by
//! (`rule_index.rs`), written in the rule's transaction.

use super::EmbeddedStore;
use super::tables::{RULES, RULES_BY_KEY, decode_rule};
use crate::store::rule_index::RuleKey;
use crate::store::{Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};

/// Takes rule `id` out of the rules and out of the index, in `txn`.
fn remove_rule(txn: &WriteTransaction, id: &str) -> Result<Option<Rule>> {
    let mut rules = txn.open_table(RULES)?;
    let Some(json) = rules.remove(id)? else {
        return Ok(None);
    };
    let rule = decode_rule(json.value())?;
    let key = RuleKey::of(&rule);
    txn.open_table(RULES_BY_KEY)?
        .remove((key.digest.as_str(), key.scope.as_str(), id))?;
    Ok(Some(rule))
}

#[async_trait]
impl Rules for EmbeddedStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let (rule, stored) = (rule.clone(), rule.clone());
        self.write(move |txn| {
            // A rule replaced may have been filed elsewhere.
            remove_rule(txn, stored.id.as_str())?;
            let json = serde_json::to_string(&stored).expect("a rule serialises");
            txn.open_table(RULES)?
                .insert(stored.id.as_str(), json.as_str())?;
            let key = RuleKey::of(&stored);
            txn.open_table(RULES_BY_KEY)?.insert(
                (key.digest.as_str(), key.scope.as_str(), stored.id.as_str()),
                (),
            )?;
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

    async fn rules_for(&self, digest: &str, session_id: &str) -> Result<Vec<Rule>> {
        let keys = RuleKey::lookups(digest, session_id);
        self.read(move |txn| {
            let (by_key, rules) = (txn.open_table(RULES_BY_KEY)?, txn.open_table(RULES)?);
            let mut found = Vec::new();
            for key in &keys {
                let (digest, scope) = (key.digest.as_str(), key.scope.as_str());
                // Every id under (digest, scope), whatever characters it holds.
                for entry in by_key.range((digest, scope, "")..)? {
                    let (entry, _) = entry?;
                    let (d, s, id) = entry.value();
                    if (d, s) != (digest, scope) {
                        break;
                    }
                    if let Some(json) = rules.get(id)? {
                        found.push(decode_rule(json.value())?);
                    }
                }
            }
            Ok(found)
        })
        .await
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let id = id.clone();
        let removed = self.write(move |txn| remove_rule(txn, id.as_str())).await?;
        if let Some(rule) = &removed {
            let _ = self.events.send(Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            });
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tables::{META, create_all};
    use super::*;
    use askbridge_core::{Action, Millis, Scope};

    /// A file written before rules were filed by action (layout 2: the rule, no entry) gets
    /// its rules filed when it is opened.
    #[test]
    fn rules_of_an_older_file_are_filed_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("old.redb")).unwrap();
        let rule = Rule {
            id: "rule-1".into(),
            action: Action::new("shell", serde_json::json!({"command": "make"})),
            scope: Scope::Everywhere,
            created_by: "telegram:1".into(),
            created_at: Millis(5),
            question_id: None,
            quorum: 0,
        };
        let txn = db.begin_write().unwrap();
        create_all(&txn).unwrap();
        let json = serde_json::to_string(&rule).unwrap();
        txn.open_table(RULES)
            .unwrap()
            .insert("rule-1", json.as_str())
            .unwrap();
        txn.open_table(META).unwrap().insert("layout", 2).unwrap();
        txn.commit().unwrap();
        let key = RuleKey::of(&rule);
        let filed = |db: &redb::Database| {
            let txn = redb::ReadableDatabase::begin_read(db).unwrap();
            let table = txn.open_table(RULES_BY_KEY).unwrap();
            let entry = table
                .get((key.digest.as_str(), key.scope.as_str(), "rule-1"))
                .unwrap();
            entry.is_some()
        };
        assert!(!filed(&db));
        let txn = db.begin_write().unwrap();
        create_all(&txn).unwrap();
        txn.commit().unwrap();
        assert!(filed(&db));
    }
}
