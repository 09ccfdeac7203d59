//! The ops page's listings in memory.

use super::MemoryStore;
use crate::store::{Page, Result};
use askbridge_core::run::Run;
use askbridge_core::{Question, Rule};
use async_trait::async_trait;

#[async_trait]
impl crate::store::Listings for MemoryStore {
    async fn list_runs(&self, filter: &crate::store::RunFilter) -> Result<Page<Run>> {
        let state = self.state();
        Ok(crate::store::page_of(state.runs.values().cloned(), filter))
    }

    async fn rules_page(
        &self,
        after: Option<&crate::store::Cursor>,
        limit: usize,
    ) -> Result<Page<Rule>> {
        let rules: Vec<Rule> = self.state().rules.values().cloned().collect();
        Ok(crate::store::rules_page_of(rules, after, limit))
    }

    async fn history(&self, filter: &crate::store::HistoryFilter) -> Result<Page<Question>> {
        Ok(filter.page(self.state().questions.values().cloned()))
    }
}
