//! What the paged listings (the ops page's runs, rules and history views) take and give: the
//! filters, a [`Page`] of items with the [`Cursor`] of the next one, and the page for stores that
//! list by reading everything.

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

/// One page of a newest-first listing, and where the next page starts (`None` on the last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T, C = Cursor> {
    /// The page's items, newest first.
    pub items: Vec<T>,
    /// The cursor of the next page: the place of this page's last item, when more follow.
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// The page of `limit` items from `fetched`, which a source read in order with one more than
    /// `limit` (whether that one came is whether a next page exists); `cursor` gives the next
    /// page's cursor from the items kept.
    pub fn cut(mut fetched: Vec<T>, limit: usize, cursor: impl FnOnce(&[T]) -> Option<C>) -> Self {
        let more = fetched.len() > limit;
        fetched.truncate(limit);
        let next = if more { cursor(&fetched) } else { None };
        Page {
            items: fetched,
            next,
        }
    }

    /// The same page with each item mapped.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U, C> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next: self.next,
        }
    }
}

impl<T> Page<T> {
    /// The page of `limit` items from `fetched` (in order, one more than `limit` read), whose
    /// next cursor is the place (time and id) of the last item kept.
    pub fn after_last(fetched: Vec<T>, limit: usize, place: impl Fn(&T) -> (Millis, &str)) -> Self {
        Self::cut(fetched, limit, |items| {
            items.last().map(|last| {
                let (at, id) = place(last);
                Cursor {
                    at,
                    id: id.to_owned(),
                }
            })
        })
    }

    /// The page of `limit` items out of all of `items` (any order) that `keep` accepts, newest
    /// first by `place`: for stores that list by reading everything.
    pub fn newest_first(
        items: impl IntoIterator<Item = T>,
        keep: impl Fn(&T) -> bool,
        place: impl Fn(&T) -> (Millis, &str),
        limit: usize,
    ) -> Self {
        let mut kept: Vec<T> = items.into_iter().filter(|item| keep(item)).collect();
        kept.sort_by(|a, b| newest_first(place(a), place(b)));
        kept.truncate(limit + 1);
        Self::after_last(kept, limit, place)
    }
}

/// Most bytes of items one listing page carries, as JSON. A count alone does not bound a page:
/// 500 resolved forms, each near its limits, made a page of 80 MB that took half a minute.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

impl<T, C> Page<T, C> {
    /// The page cut further so that its items' sizes (`size`, in bytes) add up to at most
    /// `max_bytes`, keeping at least one item so that every listing moves on; when cut, the next
    /// page is `cursor` of the items kept.
    pub fn within_bytes_by(
        mut self,
        max_bytes: usize,
        size: impl Fn(&T) -> usize,
        cursor: impl FnOnce(&[T]) -> Option<C>,
    ) -> Self {
        let mut total = 0;
        let keep = self
            .items
            .iter()
            .position(|item| {
                total += size(item);
                total > max_bytes
            })
            .map_or(self.items.len(), |over| over.max(1));
        if keep < self.items.len() {
            self.items.truncate(keep);
            self.next = cursor(&self.items);
        }
        self
    }
}

impl<T> Page<T> {
    /// [`Page::within_bytes_by`], the next page starting after the place of the last item kept.
    pub fn within_bytes(
        self,
        max_bytes: usize,
        size: impl Fn(&T) -> usize,
        place: impl Fn(&T) -> (Millis, &str),
    ) -> Self {
        self.within_bytes_by(max_bytes, size, |items| {
            items.last().map(|last| {
                let (at, id) = place(last);
                Cursor {
                    at,
                    id: id.to_owned(),
                }
            })
        })
    }
}

/// The size of `item` as the JSON it is sent as, in bytes: how listing pages are measured.
pub fn json_size<T: serde::Serialize>(item: &T) -> usize {
    serde_json::to_vec(item).map_or(0, |json| json.len())
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
    /// At most this many (0: 50, at most 500).
    pub limit: usize,
}

impl RunFilter {
    /// The page's size.
    pub fn effective_limit(&self) -> usize {
        page_size(self.limit)
    }

    /// The time a run is listed by: when it started (live) or last changed (ended).
    pub fn time_of(&self, run: &Run) -> Millis {
        if self.ended {
            run.updated_at
        } else {
            run.created_at
        }
    }

    /// A run's place in the listing: its time and id.
    pub fn place<'r>(&self, run: &'r Run) -> (Millis, &'r str) {
        (self.time_of(run), run.id.as_str())
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
pub fn page_of(runs: impl IntoIterator<Item = Run>, filter: &RunFilter) -> Page<Run> {
    Page::newest_first(
        runs,
        |r| filter.accepts(r),
        |r| filter.place(r),
        filter.effective_limit(),
    )
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
    /// The page's size.
    pub fn effective_limit(&self) -> usize {
        page_size(self.limit)
    }

    /// When `question` was resolved (its place in the listing).
    pub fn time_of(question: &Question) -> Millis {
        question
            .resolution
            .as_ref()
            .map_or(question.created_at, |r| r.at)
    }

    /// A question's place in the listing: when it was resolved, and its id.
    pub fn place(question: &Question) -> (Millis, &str) {
        (Self::time_of(question), question.id.as_str())
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
    pub fn page(&self, questions: impl IntoIterator<Item = Question>) -> Page<Question> {
        Page::newest_first(
            questions,
            |q| self.accepts(q),
            Self::place,
            self.effective_limit(),
        )
    }
}

/// One page of `rules` (any order), newest first after `after`: for stores that list by reading
/// every rule.
pub fn rules_page_of(
    rules: impl IntoIterator<Item = askbridge_core::Rule>,
    after: Option<&Cursor>,
    limit: usize,
) -> Page<askbridge_core::Rule> {
    Page::newest_first(
        rules,
        |r| after.is_none_or(|c| c.precedes(r.created_at, r.id.as_str())),
        rule_place,
        limit,
    )
}

/// A rule's place in its listing: when it was created, and its id.
pub fn rule_place(rule: &askbridge_core::Rule) -> (Millis, &str) {
    (rule.created_at, rule.id.as_str())
}

/// A listing's page size for a requested `limit`: 0 means 50; at most 500.
fn page_size(limit: usize) -> usize {
    match limit {
        0 => 50,
        n => n.min(500),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place<'a>(item: &'a (u64, &'static str)) -> (Millis, &'a str) {
        (Millis(item.0), item.1)
    }

    #[test]
    fn a_page_has_a_next_cursor_only_when_more_were_read() {
        let read = vec![(3, "c"), (2, "b"), (1, "a")];
        let page = Page::after_last(read.clone(), 2, place);
        assert_eq!(page.items, [(3, "c"), (2, "b")]);
        assert_eq!(page.next.map(|c| c.to_string()).as_deref(), Some("2-b"));
        let last = Page::after_last(read, 3, place);
        assert_eq!((last.items.len(), last.next), (3, None));
    }

    #[test]
    fn a_page_is_bounded_in_bytes_but_never_empty() {
        let read = vec![(4, "d"), (3, "c"), (2, "b"), (1, "a")];
        let page = Page::after_last(read.clone(), 3, place).within_bytes(25, |_| 10, place);
        assert_eq!(page.items, [(4, "d"), (3, "c")]);
        assert_eq!(page.next.map(|c| c.to_string()).as_deref(), Some("3-c"));
        let one = Page::after_last(read.clone(), 3, place).within_bytes(5, |_| 10, place);
        assert_eq!(one.items, [(4, "d")]);
        let all = Page::after_last(read, 4, place).within_bytes(100, |_| 10, place);
        assert_eq!((all.items.len(), all.next), (4, None));
    }

    #[test]
    fn a_page_of_everything_is_newest_first_with_ties_by_id() {
        let all = [(1, "a"), (2, "b"), (2, "c"), (0, "z")];
        let page = Page::newest_first(all, |i| i.1 != "z", place, 2);
        assert_eq!(page.items, [(2, "c"), (2, "b")]);
        let cursor = page.next.unwrap();
        let rest = Page::newest_first(all, |i| cursor.precedes(Millis(i.0), i.1), place, 2);
        assert_eq!((rest.items, rest.next), (vec![(1, "a"), (0, "z")], None));
    }
}
