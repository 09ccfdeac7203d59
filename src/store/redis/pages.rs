//! Paged, newest-first listings over the sixteen buckets' sorted sets: each bucket gives its
//! newest entries before the cursor, and the pages are merged. A page costs O(buckets × page),
//! whatever the index holds.

use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Cursor, Result, newest_first};
use askbridge_core::Millis;

impl RedisStore {
    /// The ids of the newest `limit` entries after `after` across the sorted sets `keys` names
    /// for each bucket, newest first, with their scores.
    pub(super) async fn page_everywhere(
        &self,
        keys: impl Fn(usize) -> Vec<String>,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<(String, Millis)>> {
        // Entries as old as the cursor that were on earlier pages are skipped below; there are
        // fewer than `limit` of them in a bucket, so asking twice the page is enough.
        let (max, fetch) = match after {
            Some(cursor) => (cursor.at.0.to_string(), limit * 2),
            None => ("+inf".to_owned(), limit),
        };
        let mut pipe = redis::pipe();
        for key in (0..BUCKETS).flat_map(keys) {
            pipe.cmd("ZRANGE")
                .arg(key)
                .arg(&max)
                .arg("-inf")
                .arg("BYSCORE")
                .arg("REV")
                .arg("LIMIT")
                .arg(0)
                .arg(fetch)
                .arg("WITHSCORES");
        }
        let pages: Vec<Vec<(String, f64)>> = self.query_pipe("page", &pipe).await?;
        let mut merged: Vec<(String, Millis)> = pages
            .into_iter()
            .flatten()
            .map(|(id, score)| (id, Millis(score as u64)))
            .filter(|(id, at)| after.is_none_or(|c| c.precedes(*at, id)))
            .collect();
        merged.sort_by(|a, b| newest_first((a.1, &a.0), (b.1, &b.0)));
        merged.truncate(limit);
        Ok(merged)
    }
}
