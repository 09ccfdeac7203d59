//! The ops page's listings in Redis: runs from the live and ended indexes, rules from their
//! index by creation time, history from the resolved indexes (a session's from its own, which
//! the claim script writes); each page O(buckets x page) (see `pages.rs`).

use super::RedisStore;
use super::codec::assemble_run;
use super::keys::rule_bucket;
use super::rules::corrupt_rule;
use crate::store::{Error, Page, Result, rule_place};
use askbridge_core::run::Run;
use askbridge_core::{Question, Rule, Status};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};

#[async_trait]
impl crate::store::Listings for RedisStore {
    async fn list_runs(&self, filter: &crate::store::RunFilter) -> Result<Page<Run>> {
        let limit = filter.effective_limit();
        // One more than the page tells whether there is a next one.
        let ids = if filter.ended {
            self.page_everywhere(
                |b| vec![self.keys.runs_ended(b)],
                filter.after.as_ref(),
                limit + 1,
            )
            .await?
        } else {
            self.page_everywhere(
                |b| vec![self.keys.runs_live(b)],
                filter.after.as_ref(),
                limit + 1,
            )
            .await?
        };
        let mut runs = Vec::with_capacity(ids.len());
        // One round trip for the page: the runs' fields and data, pipelined.
        let mut pipe = redis::pipe();
        for (id, _) in &ids {
            pipe.hgetall(self.keys.run(id)).get(self.keys.run_data(id));
        }
        let replies: Vec<redis::Value> = self.query_pipe("list runs", &pipe).await?;
        let corrupt = |e: redis::ParsingError| Error::corrupt("a run in Redis", e);
        for pair in replies.chunks(2) {
            let [fields, data] = pair else { continue };
            let mut fields: HashMap<String, String> =
                redis::FromRedisValue::from_redis_value_ref(fields).map_err(corrupt)?;
            let data: Option<String> =
                redis::FromRedisValue::from_redis_value_ref(data).map_err(corrupt)?;
            if let Some(data) = data {
                fields.insert("data".into(), data);
            }
            // An index entry whose run expired meanwhile is skipped; so is one whose run moved
            // to the other group since it was read.
            if let Some(run) = assemble_run(&fields)?
                && run.state.is_final() == filter.ended
                && filter.state.is_none_or(|s| s == run.state)
            {
                runs.push(run);
            }
        }
        Ok(Page::after_last(runs, limit, |r| filter.place(r)))
    }

    async fn rules_page(
        &self,
        after: Option<&crate::store::Cursor>,
        limit: usize,
    ) -> Result<Page<Rule>> {
        let ids = self
            .page_everywhere(|b| vec![self.keys.rules_by_time(b)], after, limit + 1)
            .await?;
        let mut pipe = redis::pipe();
        for (id, _) in &ids {
            pipe.hget(self.keys.rules(rule_bucket(id)), id);
        }
        let stored: Vec<Option<String>> = self.query_pipe("rules page", &pipe).await?;
        let rules = stored
            .into_iter()
            .flatten()
            .map(|json| serde_json::from_str(&json).map_err(corrupt_rule))
            .collect::<Result<Vec<Rule>>>()?;
        Ok(Page::after_last(rules, limit, rule_place))
    }

    async fn history(&self, filter: &crate::store::HistoryFilter) -> Result<Page<Question>> {
        let limit = filter.effective_limit();
        let statuses: Vec<Status> = crate::store::FINAL
            .iter()
            .copied()
            .filter(|s| filter.status.is_none_or(|f| f == *s))
            .collect();
        let after = filter.after.as_ref();
        let ids: Vec<String> = match &filter.session_id {
            Some(session) => {
                let index = |b| {
                    statuses
                        .iter()
                        .map(|s| self.keys.session_done(b, s.as_str(), session))
                        .collect()
                };
                let page = self.page_everywhere(index, after, limit + 1).await?;
                self.with_older_session_ids(session, page.into_iter().map(|(id, _)| id))
                    .await?
            }
            None => {
                let index = |b| {
                    statuses
                        .iter()
                        .map(|s| self.keys.done(b, s.as_str()))
                        .collect()
                };
                let page = self.page_everywhere(index, after, limit + 1).await?;
                page.into_iter().map(|(id, _)| id).collect()
            }
        };
        Ok(filter.page(self.load_many(&ids).await?))
    }
}

impl RedisStore {
    /// A page of a session's resolved ids (`page`, read from its resolved indexes), and every id
    /// of the set an older askbridge wrote at each ask into the session, while that set lives:
    /// the questions it resolved are in no resolved index of the session's. The caller's filter
    /// drops what is pending or off the page; the set expires a retention after its last ask,
    /// and with it the only read here that is not a page.
    pub(super) async fn with_older_session_ids(
        &self,
        session: &str,
        page: impl IntoIterator<Item = String>,
    ) -> Result<Vec<String>> {
        let mut ids: Vec<String> = page.into_iter().collect();
        let older = self
            .members_everywhere(|b| self.keys.session(b, session))
            .await?;
        if !older.is_empty() {
            let mut seen: HashSet<String> = ids.iter().cloned().collect();
            ids.extend(older.into_iter().filter(|id| seen.insert(id.clone())));
        }
        Ok(ids)
    }
}
