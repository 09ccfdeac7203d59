//! "Always allow" rules in Redis: a hash per bucket, announced with their write, and filed by
//! their action's digest and scope (`rule_index.rs`) in the same script: a key per digest and
//! bucket holding the ids by scope, so that an approval asks each bucket for one key, which for
//! an action without rules is not there, with 100,000 rules as with none. (A sorted set of
//! every rule of a bucket, read by lex range, cost more per read as it grew: 0.55-0.88 of the
//! rate.)

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

/// Tries of a write that finds its rule moved to another place meanwhile (stored again with
/// another action by someone else): each try follows it once.
const MOVES: usize = 3;

fn moving(id: &str) -> Error {
    Error::corrupt(
        format!("rule {id} in Redis"),
        "its place in the index changed at every try",
    )
}

impl RedisStore {
    /// Files the rules stored before the rules' index had its present shape (by an older
    /// askbridge), so that approvals find them. At start-up: a bucket whose rules are all filed
    /// costs one command (two counts, in one pipeline for all buckets); any process may do it,
    /// and doing it twice files nothing twice. Returns how many it filed.
    pub(super) async fn file_unfiled_rules(&self) -> Result<usize> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.hlen(self.keys.rules(bucket))
                .hlen(self.keys.rules_places(bucket));
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
            .hkeys(self.keys.rules_places(bucket));
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
            let place = RuleKey::of(&rule);
            invocation
                .key(self.keys.rules(bucket))
                .key(self.keys.rules_for(bucket, &place.digest))
                .key(self.keys.rules_places(bucket))
                .arg(id)
                .arg(json)
                .arg(&place.scope);
            filed += self.invoke::<usize>("file a rule", &invocation).await?;
        }
        // The older index's keys: nothing reads them any more.
        let mut forget = redis::cmd("DEL");
        forget.arg(&self.keys.rules_index_before(bucket)[..]);
        self.query::<()>("forget the older rules' index", &forget)
            .await?;
        Ok(filed)
    }
}

#[async_trait]
impl Rules for RedisStore {
    async fn put_rule(&self, rule: &Rule) -> Result<()> {
        let json = serde_json::to_string(rule).expect("a rule serialises");
        let id = rule.id.as_str();
        let bucket = rule_bucket(id);
        let place = RuleKey::of(rule);
        // Stored again under another digest, the script names its old place's key to declare.
        let mut old_place: Option<String> = None;
        for _ in 0..MOVES {
            let mut invocation = PUT_RULE.prepare_invoke();
            invocation
                .key(self.keys.rules(bucket))
                .key(self.keys.rules_by_time(bucket))
                .key(self.keys.rules_for(bucket, &place.digest))
                .key(self.keys.rules_places(bucket))
                .key(self.keys.events(bucket));
            if let Some(key) = &old_place {
                invocation.key(key);
            }
            invocation
                .arg(id)
                .arg(&json)
                .arg(rule.created_at.0)
                .arg(&place.scope)
                .arg(EVENTS_MAXLEN);
            self.tag(&mut invocation);
            let elsewhere: String = self.invoke("put rule", &invocation).await?;
            if elsewhere.is_empty() {
                self.deliver([Event::Rule {
                    kind: EventKind::RuleCreated,
                    rule: rule.clone(),
                }]);
                return Ok(());
            }
            old_place = Some(elsewhere);
        }
        Err(moving(id))
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
        let scopes = RuleKey::lookups(digest, session_id).map(|key| key.scope);
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("HMGET")
                .arg(self.keys.rules_for(bucket, digest))
                .arg(&scopes[..]);
        }
        let filed: Vec<Vec<Option<String>>> = self.query_pipe("rules for an action", &pipe).await?;
        let mut found = Vec::new();
        for (bucket, scopes) in filed.iter().enumerate() {
            for ids in scopes.iter().flatten() {
                let ids: Vec<String> = serde_json::from_str(ids).map_err(corrupt_rule)?;
                found.extend(ids.into_iter().map(|id| (bucket, id)));
            }
        }
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (bucket, id) in &found {
            pipe.hget(self.keys.rules(*bucket), id);
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
        for _ in 0..MOVES {
            // Its place's key, to declare (none for a rule an older askbridge stored unfiled).
            let mut read = redis::cmd("HGET");
            read.arg(self.keys.rules_places(bucket)).arg(id.as_str());
            let place: Option<String> = self.query("rule's place", &read).await?;
            let mut invocation = REVOKE_RULE.prepare_invoke();
            invocation
                .key(self.keys.rules(bucket))
                .key(self.keys.events(bucket))
                .key(self.keys.rules_by_time(bucket))
                .key(self.keys.rules_places(bucket));
            if let Some((key, _scope)) = place.as_deref().and_then(|p| p.split_once('\n')) {
                invocation.key(key);
            }
            invocation.arg(id.as_str()).arg(EVENTS_MAXLEN);
            self.tag(&mut invocation);
            let reply: Vec<String> = self.invoke("revoke rule", &invocation).await?;
            let json = match reply.first().map(String::as_str) {
                None => return Ok(None),
                Some("revoked") if reply.len() == 2 => &reply[1],
                Some("moved") => continue,
                Some(_) => return Err(Error::corrupt("revoking a rule", format!("{reply:?}"))),
            };
            let rule: Rule = serde_json::from_str(json).map_err(corrupt_rule)?;
            self.deliver([Event::Rule {
                kind: EventKind::RuleRevoked,
                rule: rule.clone(),
            }]);
            return Ok(Some(rule));
        }
        Err(moving(id.as_str()))
    }
}
