//! The ops page's listings on the embedded store: history from the resolved index; runs and
//! rules by reading them all (one process, modest numbers; the Redis store keeps indexes).

use super::EmbeddedStore;
use super::questions::load;
use super::tables::{BY_SESSION, DONE, ID_END, RUNS, decode_run};
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

/// History pages come from the resolved index (status, resolved at, id), newest first per
/// status from the cursor down; a session's from its index.
fn history_page(
    txn: &ReadTransaction,
    filter: &crate::store::HistoryFilter,
) -> Result<Page<Question>> {
    let limit = filter.effective_limit();
    let ids: Vec<String> = match &filter.session_id {
        Some(session) => {
            let mut ids = Vec::new();
            let range = (session.as_str(), "")..(session.as_str(), ID_END);
            for entry in txn.open_table(BY_SESSION)?.range(range)? {
                ids.push(entry?.0.value().1.to_owned());
            }
            ids
        }
        None => {
            let (until, last) = filter
                .after
                .as_ref()
                .map_or((u64::MAX, ID_END.to_owned()), |c| (c.at.0, c.id.clone()));
            let done = txn.open_table(DONE)?;
            let mut ids = Vec::new();
            for status in FINAL
                .iter()
                .filter(|s| filter.status.is_none_or(|f| f == **s))
            {
                let range = (status.as_str(), 0, "")..=(status.as_str(), until, last.as_str());
                for entry in done.range(range)?.rev().take(limit + 1) {
                    ids.push(entry?.0.value().2.to_owned());
                }
            }
            ids
        }
    };
    Ok(filter.page(load(txn, ids)?))
}
