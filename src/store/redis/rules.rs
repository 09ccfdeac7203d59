//! "Always allow" rules in Redis: a hash per bucket, announced with their write.

use super::RedisStore;
use super::events::EVENTS_MAXLEN;
use super::keys::{BUCKETS, rule_bucket};
use super::scripts::REVOKE_RULE;
use crate::store::{Error, Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;

pub(super) fn corrupt_rule(error: serde_json::Error) -> Error {
    Error::corrupt("a rule in Redis", error)
}

#[async_trait]
impl Rules for RedisStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let json = serde_json::to_string(rule).expect("a rule serialises");
        let bucket = rule_bucket(rule.id.as_str());
        // The rule and its announcement together (one slot: the bucket's).
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hset(self.keys.rules(bucket), rule.id.as_str(), &json)
            .ignore()
            .zadd(
                self.keys.rules_by_time(bucket),
                rule.id.as_str(),
                rule.created_at.0,
            )
            .ignore()
            .cmd("XADD")
            .arg(self.keys.events(bucket))
            .arg("MAXLEN")
            .arg("~")
            .arg(EVENTS_MAXLEN)
            .arg("*")
            .arg("data")
            .arg(format!(r#"{{"kind":"rule.created","rule":{json}}}"#))
            .arg("o")
            .arg(&*self.origin)
            .ignore();
        self.query_pipe::<()>("put rule", &pipe).await?;
        self.deliver([Event::Rule {
            kind: EventKind::RuleCreated,
            rule: rule.clone(),
        }]);
        Ok(())
    }

    async fn rules(&self) -> Result<Vec<Rule>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("HVALS").arg(self.keys.rules(bucket));
        }
        let stored: Vec<Vec<String>> = self.query_pipe("rules", &pipe).await?;
        stored
            .concat()
            .iter()
            .map(|json| serde_json::from_str(json).map_err(corrupt_rule))
            .collect()
    }

    async fn delete_rule(&self, id: &RuleId) -> Result<Option<Rule>> {
        let bucket = rule_bucket(id.as_str());
        let mut invocation = REVOKE_RULE.prepare_invoke();
        invocation
            .key(self.keys.rules(bucket))
            .key(self.keys.events(bucket))
            .key(self.keys.rules_by_time(bucket))
            .arg(id.as_str())
            .arg(EVENTS_MAXLEN);
        self.tag(&mut invocation);
        let stored: Option<String> = self.invoke("revoke rule", &invocation).await?;
        let revoked: Option<Rule> = stored
            .map(|json| serde_json::from_str(&json).map_err(corrupt_rule))
            .transpose()?;
        if let Some(rule) = &revoked {
            self.deliver([Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            }]);
        }
        Ok(revoked)
    }
}
