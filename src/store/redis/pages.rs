//! Paged, newest-first listings over the sixteen buckets' sorted sets: each bucket gives its
//! newest entries before the cursor, and the pages are merged. A page costs O(buckets × page),
//! whatever the index holds.
//!
//! The newest `limit` of an index ([`RedisStore::newest_everywhere`]: the pending list, the SSE
//! replay's 1,000) first asks each bucket for about its share, twice over, not for `limit`: ids
//! are spread evenly over the buckets, so the share nearly always settles the page, and a
//! thousand-entry page read 16,000 ids where it needs 1,000 (the replay with a million pending
//! took twice as long per event as with 300). Only when a full bucket's share might hide an
//! entry the page needs are those buckets read again, whole pages.

use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Cursor, Result, newest_first};
use askbridge_core::Millis;

/// What a bucket is first asked for, beyond twice its share of the page: room for the buckets
/// that hold more than their share of a small page.
const SHARE_SLACK: usize = 8;

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

    /// The newest `limit` members of one sorted set in every bucket, newest first (see the
    /// module documentation: each bucket's share first, a bucket read whole only when needed).
    pub(super) async fn newest_everywhere(
        &self,
        key: impl Fn(usize) -> String,
        limit: usize,
    ) -> Result<Vec<String>> {
        let share = limit
            .div_ceil(BUCKETS)
            .saturating_mul(2)
            .saturating_add(SHARE_SLACK)
            .min(limit);
        let buckets: Vec<usize> = (0..BUCKETS).collect();
        let mut pages = self.newest_of(&key, &buckets, share).await?;
        let unsettled = unsettled(&pages, share, limit);
        if !unsettled.is_empty() {
            let again = self.newest_of(&key, &unsettled, limit).await?;
            for (bucket, page) in unsettled.into_iter().zip(again) {
                pages[bucket] = page;
            }
        }
        let mut merged: Vec<(String, f64)> = pages.into_iter().flatten().collect();
        merged.sort_by(|a, b| b.1.total_cmp(&a.1));
        merged.truncate(limit);
        Ok(merged.into_iter().map(|(id, _)| id).collect())
    }

    /// The newest `count` members with scores of `buckets`' sorted sets, a page per bucket.
    async fn newest_of(
        &self,
        key: &impl Fn(usize) -> String,
        buckets: &[usize],
        count: usize,
    ) -> Result<Vec<Vec<(String, f64)>>> {
        let mut pipe = redis::pipe();
        for bucket in buckets {
            pipe.cmd("ZRANGE")
                .arg(key(*bucket))
                .arg("+inf")
                .arg("-inf")
                .arg("BYSCORE")
                .arg("REV")
                .arg("LIMIT")
                .arg(0)
                // "Every one" (usize::MAX) is -1 to Redis, which takes no larger count.
                .arg(i64::try_from(count).unwrap_or(-1))
                .arg("WITHSCORES");
        }
        self.query_pipe("zrange", &pipe).await
    }
}

/// The buckets whose first `share` entries may not hold all of theirs among the newest `limit`
/// of every bucket: the full ones (they may have more), unless `limit` entries were read that
/// are strictly newer than everything the other full buckets left unread.
fn unsettled(pages: &[Vec<(String, f64)>], share: usize, limit: usize) -> Vec<usize> {
    if share >= limit {
        return Vec::new();
    }
    // A full bucket's unread entries are no newer than its last one read.
    let left: Vec<(usize, f64)> = (0..pages.len())
        .filter(|b| pages[*b].len() >= share)
        .filter_map(|b| pages[b].last().map(|(_, score)| (b, *score)))
        .collect();
    if left.is_empty() {
        return Vec::new();
    }
    let newer = pages
        .iter()
        .enumerate()
        .map(|(bucket, page)| {
            let bound = left
                .iter()
                .filter(|(b, _)| *b != bucket)
                .map(|(_, score)| *score)
                .max_by(f64::total_cmp)
                .unwrap_or(f64::NEG_INFINITY);
            page.iter().filter(|(_, score)| *score > bound).count()
        })
        .sum::<usize>();
    if newer >= limit {
        Vec::new()
    } else {
        left.into_iter().map(|(b, _)| b).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::unsettled;

    fn page(scores: &[u32]) -> Vec<(String, f64)> {
        scores
            .iter()
            .map(|s| (format!("q{s}"), f64::from(*s)))
            .collect()
    }

    #[test]
    fn shares_settle_a_page_when_enough_entries_are_newer_than_every_full_bucket_left() {
        // Two buckets read 3 each for a page of 3: both full; bucket 1 left nothing newer than 5.
        let pages = [page(&[10, 9, 8]), page(&[7, 6, 5])];
        assert!(unsettled(&pages, 3, 3).is_empty());
        // A page of 4 needs 7, and bucket 0's unread entries could be newer than 7 (up to 8).
        assert_eq!(unsettled(&pages, 3, 4), vec![0, 1]);
    }

    #[test]
    fn buckets_that_are_not_full_never_hold_more() {
        let pages = [page(&[10, 9]), page(&[7])];
        assert!(unsettled(&pages, 3, 6).is_empty());
        // A tie with a full bucket's last entry is not "newer": read again.
        let pages = [page(&[10, 9, 8]), page(&[8])];
        assert_eq!(unsettled(&pages, 3, 4), vec![0]);
    }
}
