//! The ops page's listings on the embedded store: history from the resolved indexes (a
//! session's from its own, so its page reads a page, however many questions it had); runs and
//! rules by reading them all (one process, modest numbers; the Redis store keeps indexes).

use super::EmbeddedStore;
use super::questions::load;
use super::tables::{DONE, RUNS, bound, decode_run, session_done};
use crate::store::{FINAL, Page, Result, Rules};
use askbridge_core::run::Run;
use askbridge_core::{Question, Rule};
use async_trait::async_trait;
use redb::{ReadTransaction, ReadableTable};

/// Runs are listed by reading them all: the embedded store serves one process with a modest
/// number of runs (the Redis store keeps indexes for this).
#[async_trait]
impl crate::store::Listings for EmbeddedStore {
    async fn list_runs(&self, filter: &crate::store::RunFilter) -> Result<Page<Run>> {
        let filter = filter.clone();
        self.read(move |txn| {
            let table = txn.open_table(RUNS)?;
            let mut runs = Vec::new();
            for entry in table.iter()? {
                let (_, json) = entry?;
                runs.push(decode_run(json.value())?);
            }
            Ok(crate::store::page_of(runs, &filter))
        })
        .await
    }

    async fn rules_page(
        &self,
        after: Option<&crate::store::Cursor>,
        limit: usize,
    ) -> Result<Page<Rule>> {
        let rules = self.rules().await?;
        Ok(crate::store::rules_page_of(rules, after, limit))
    }

    async fn history(&self, filter: &crate::store::HistoryFilter) -> Result<Page<Question>> {
        let filter = filter.clone();
        self.read(move |txn| history_page(txn, &filter)).await
    }
}

/// History pages come from the resolved indexes, newest first per status from the cursor down:
/// (status, resolved at, id), or a session's (session, status, resolved at, id).
fn history_page(
    txn: &ReadTransaction,
    filter: &crate::store::HistoryFilter,
) -> Result<Page<Question>> {
    let limit = filter.effective_limit();
    let statuses = FINAL
        .iter()
        .filter(|s| filter.status.is_none_or(|f| f == **s));
    let mut ids = Vec::new();
    for status in statuses {
        match &filter.session_id {
            Some(session) => ids.extend(session_done(
                txn,
                session,
                *status,
                filter.after.as_ref(),
                limit + 1,
            )?),
            None => {
                let (until, last) = bound(filter.after.as_ref());
                let range = (status.as_str(), 0, "")..(status.as_str(), until, last);
                for entry in txn.open_table(DONE)?.range(range)?.rev().take(limit + 1) {
                    ids.push(entry?.0.value().2.to_owned());
                }
            }
        }
    }
    Ok(filter.page(load(txn, ids)?))
}
