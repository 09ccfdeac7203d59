//! "Always allow" rules in Redis: a hash per bucket, announced with their write, and filed by
//! their action's digest and scope (`rule_index.rs`) in the same script: a sorted set per bucket
//! whose members `<digest>/<scope>/<rule id>` are read by lex range, so that an approval finds
//! its rules with one command per bucket and place, however many rules there are.

use super::RedisStore;
use super::events::EVENTS_MAXLEN;
use super::keys::{BUCKETS, rule_bucket};
use super::scripts::{FILE_RULE, PUT_RULE, REVOKE_RULE};
use crate::store::rule_index::RuleKey;
use crate::store::{Error, Event, EventKind, Result, Rules};
use askbridge_core::{Rule, RuleId};
use async_trait::async_trait;

pub(super) fn corrupt_rule(error: serde_json::Error) -> Error {
    Error::corrupt("a rule in Redis", error)
}

/// The lex range of every member starting with `prefix`: `[prefix` to `[prefix` and a byte
/// above any UTF-8 byte.
fn lex_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let from = [b"[", prefix.as_bytes()].concat();
    let to = [from.as_slice(), &[0xff]].concat();
    (from, to)
}

impl RedisStore {
    /// Files the rules stored before rules were filed by action (by an older askbridge), so
    /// that approvals find them. At start-up: a bucket whose rules are all filed costs one
    /// command (two counts, in one pipeline for all buckets); any process may do it, and doing
    /// it twice files nothing twice. Returns how many it filed.
    pub(super) async fn file_unfiled_rules(&self) -> Result<usize> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.hlen(self.keys.rules(bucket))
                .hlen(self.keys.rules_filed(bucket));
        }
        let counts: Vec<usize> = self.query_pipe("count filed rules", &pipe).await?;
        let mut filed = 0;
        for (bucket, pair) in counts.chunks(2).enumerate() {
            if pair[0] != pair[1] {
                filed += self.file_bucket(bucket).await?;
            }
        }
        if filed > 0 {
            tracing::info!(
                filed,
                "rules stored before the rules' index filed by action"
            );
        }
        Ok(filed)
    }

    async fn file_bucket(&self, bucket: usize) -> Result<usize> {
        let mut pipe = redis::pipe();
        pipe.hgetall(self.keys.rules(bucket))
            .hkeys(self.keys.rules_filed(bucket));
        let (rules, done): (Vec<(String, String)>, Vec<String>) =
            self.query_pipe("unfiled rules", &pipe).await?;
        let done: std::collections::HashSet<String> = done.into_iter().collect();
        let mut filed = 0;
        for (id, json) in rules.iter().filter(|(id, _)| !done.contains(id)) {
            let rule: Rule = match serde_json::from_str(json) {
                Ok(rule) => rule,
                Err(error) => {
                    tracing::warn!(rule_id = %id, error = %error, "a stored rule cannot be read; not filed");
                    continue;
                }
            };
            let mut invocation = FILE_RULE.prepare_invoke();
            invocation
                .key(self.keys.rules(bucket))
                .key(self.keys.rules_by_action(bucket))
                .key(self.keys.rules_filed(bucket))
                .arg(id)
                .arg(json)
                .arg(format!("{}{id}", RuleKey::of(&rule).prefix()));
            filed += self.invoke::<usize>("file a rule", &invocation).await?;
        }
        Ok(filed)
    }
}

#[async_trait]
impl Rules for RedisStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let json = serde_json::to_string(rule).expect("a rule serialises");
        let id = rule.id.as_str();
        let bucket = rule_bucket(id);
        let mut invocation = PUT_RULE.prepare_invoke();
        invocation
            .key(self.keys.rules(bucket))
            .key(self.keys.rules_by_time(bucket))
            .key(self.keys.rules_by_action(bucket))
            .key(self.keys.rules_filed(bucket))
            .key(self.keys.events(bucket))
            .arg(id)
            .arg(&json)
            .arg(rule.created_at.0)
            .arg(format!("{}{id}", RuleKey::of(rule).prefix()))
            .arg(EVENTS_MAXLEN);
        self.tag(&mut invocation);
        self.invoke::<()>("put rule", &invocation).await?;
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

    async fn rules_for(&self, digest: &str, session_id: &str) -> Result<Vec<Rule>> {
        let prefixes = RuleKey::lookups(digest, session_id).map(|key| key.prefix());
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            for prefix in &prefixes {
                let (from, to) = lex_range(prefix);
                pipe.cmd("ZRANGE")
                    .arg(self.keys.rules_by_action(bucket))
                    .arg(from)
                    .arg(to)
                    .arg("BYLEX");
            }
        }
        let filed: Vec<Vec<String>> = self.query_pipe("rules for an action", &pipe).await?;
        let ids: Vec<&str> = filed
            .iter()
            .zip(prefixes.iter().cycle())
            .flat_map(|(members, prefix)| {
                members
                    .iter()
                    .filter_map(|member| member.strip_prefix(prefix.as_str()))
            })
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.hget(self.keys.rules(rule_bucket(id)), *id);
        }
        let stored: Vec<Option<String>> = self.query_pipe("rules by id", &pipe).await?;
        stored
            .iter()
            .flatten()
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
            .key(self.keys.rules_by_action(bucket))
            .key(self.keys.rules_filed(bucket))
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
