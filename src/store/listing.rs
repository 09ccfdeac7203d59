//! What the paged listings (the ops page's runs, rules and history views) take: a cursor, the
//! filters, and the page of items for stores that list by reading everything.

use askbridge_core::run::{Run, RunState};
use askbridge_core::{Millis, Question, Status};

/// Where a page of a newest-first listing ended: the next page holds what comes after it (older,
/// or as old with a smaller id). Written `<ms>-<id>` in URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The last item's time (its score in the index).
    pub at: Millis,
    /// The last item's id.
    pub id: String,
}

impl Cursor {
    /// Reads `<ms>-<id>`.
    pub fn parse(text: &str) -> Option<Self> {
        let (at, id) = text.split_once('-')?;
        let well_formed = !id.is_empty()
            && id.len() <= 128
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_:.".contains(&b));
        Some(Cursor {
            at: Millis(at.parse().ok()?),
            id: id.to_owned(),
        })
        .filter(|_| well_formed)
    }

    /// Does an item at `at` with `id` come after the cursor (on the next pages)?
    pub fn precedes(&self, at: Millis, id: &str) -> bool {
        at < self.at || (at == self.at && id < self.id.as_str())
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.at.0, self.id)
    }
}

/// Newest first, then by id (descending): the order of every paged listing.
pub fn newest_first(a: (Millis, &str), b: (Millis, &str)) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1))
}

/// Which runs to list (`GET /api/runs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Ended runs (done and failed), newest ended first; otherwise live runs (waiting and
    /// running), newest started first.
    pub ended: bool,
    /// Only in this state (within `ended`'s group).
    pub state: Option<RunState>,
    /// The page after this cursor.
    pub after: Option<Cursor>,
    /// At most this many (0: 50).
    pub limit: usize,
}

impl RunFilter {
    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        match self.limit {
            0 => 50,
            n => n.min(501),
        }
    }

    /// The time a run is listed by: when it started (live) or last changed (ended).
    pub fn time_of(&self, run: &Run) -> Millis {
        if self.ended {
            run.updated_at
        } else {
            run.created_at
        }
    }

    /// Does `run` pass (state group, state, cursor)?
    pub fn accepts(&self, run: &Run) -> bool {
        run.state.is_final() == self.ended
            && self.state.is_none_or(|s| s == run.state)
            && self
                .after
                .as_ref()
                .is_none_or(|c| c.precedes(self.time_of(run), run.id.as_str()))
    }
}

/// One page of `runs` as `filter` selects them, newest first: for stores that list by reading
/// every run.
pub fn page_of(runs: impl IntoIterator<Item = Run>, filter: &RunFilter) -> Vec<Run> {
    let mut page: Vec<Run> = runs.into_iter().filter(|r| filter.accepts(r)).collect();
    page.sort_by(|a, b| {
        newest_first(
            (filter.time_of(a), a.id.as_str()),
            (filter.time_of(b), b.id.as_str()),
        )
    });
    page.truncate(filter.effective_limit());
    page
}

/// Which resolved questions to list (`GET /api/history`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only of this outcome (a final status); every outcome when `None`.
    pub status: Option<Status>,
    /// Only this session's.
    pub session_id: Option<String>,
    /// The page after this cursor (resolution time and id).
    pub after: Option<Cursor>,
    /// At most this many (0: 50, at most 500).
    pub limit: usize,
}

impl HistoryFilter {
    /// The limit to apply.
    pub fn effective_limit(&self) -> usize {
        match self.limit {
            0 => 50,
            n => n.min(501),
        }
    }

    /// When `question` was resolved (its place in the listing).
    pub fn time_of(question: &Question) -> Millis {
        question
            .resolution
            .as_ref()
            .map_or(question.created_at, |r| r.at)
    }

    /// Does `question` pass (resolved, status, session, cursor)?
    pub fn accepts(&self, question: &Question) -> bool {
        question.status != Status::Pending
            && self.status.is_none_or(|s| s == question.status)
            && self
                .session_id
                .as_ref()
                .is_none_or(|s| *s == question.session_id)
            && self
                .after
                .as_ref()
                .is_none_or(|c| c.precedes(Self::time_of(question), question.id.as_str()))
    }

    /// The page from `questions` (any order, unfiltered).
    pub fn page(&self, questions: impl IntoIterator<Item = Question>) -> Vec<Question> {
        let mut page: Vec<Question> = questions.into_iter().filter(|q| self.accepts(q)).collect();
        page.sort_by(|a, b| {
            newest_first(
                (Self::time_of(a), a.id.as_str()),
                (Self::time_of(b), b.id.as_str()),
            )
        });
        page.truncate(self.effective_limit());
        page
    }
}

/// One page of `rules` (any order), newest first after `after`: for stores that list by reading
/// every rule.
pub fn rules_page_of(
    rules: impl IntoIterator<Item = askbridge_core::Rule>,
    after: Option<&Cursor>,
    limit: usize,
) -> Vec<askbridge_core::Rule> {
    let mut page: Vec<askbridge_core::Rule> = rules
        .into_iter()
        .filter(|r| after.is_none_or(|c| c.precedes(r.created_at, r.id.as_str())))
        .collect();
    page.sort_by(|a, b| newest_first((a.created_at, a.id.as_str()), (b.created_at, b.id.as_str())));
    page.truncate(limit);
    page
}
