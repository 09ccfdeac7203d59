//! A batch of actions on Discord: one message listing them all, and per undecided action one row
//! of its decisions' buttons (an action offers at most five decisions, a row's worth).
//!
//! Discord allows 5 rows of 5 components, so a message holds the buttons of 4 actions and a
//! fifth row for "Approve all", "Reject all" and, when more actions are undecided, the page
//! buttons: "◀ Actions 1-4" and "Actions 9-12 ▶" redraw the message with that page's rows. A
//! page button's custom_id is not a command ([`PAGE_PREFIX`]`<id> <page>`): the adapter
//! handles it itself (`paging.rs`), redrawing the clicked message for whoever may decide. Every decision
//! redraws the message from the first page of what is still undecided, so decided actions'
//! buttons leave and the next ones move up.

use crate::parts::{BUTTON_LABEL_CHARS, BUTTONS_PER_ROW, Part, ROWS, Style};
use askbridge_core::render::{self, ButtonRole};
use askbridge_core::{Question, QuestionId};

/// The actions whose buttons one page shows: every row but the last.
pub(crate) const ACTIONS_PER_PAGE: usize = ROWS - 1;
/// The start of a page button's custom_id (`askbridge:page <id> <page>`).
pub(crate) const PAGE_PREFIX: &str = "askbridge:page ";

/// The question and page a page button's custom_id names, if it is one.
pub(crate) fn page_of(custom_id: &str) -> Option<(QuestionId, usize)> {
    let (id, page) = custom_id.strip_prefix(PAGE_PREFIX)?.split_once(' ')?;
    Some((QuestionId::parse(id).ok()?, page.parse().ok()?))
}

/// The rows of page `page` (from 0; past the last, the last) of a batch's buttons.
pub(crate) fn rows(question: &Question, page: usize) -> Vec<Vec<Part>> {
    let mut per_action: Vec<(usize, Vec<Part>)> = Vec::new();
    let mut all = Vec::new();
    for button in render::buttons(question, &[]) {
        let style = match button.role {
            ButtonRole::Refuse => Style::Danger,
            _ if button.number.is_none() => Style::Success,
            _ => Style::Primary,
        };
        let part = Part::Button {
            label: render::shorten(&button.label, BUTTON_LABEL_CHARS),
            custom_id: button.payload,
            style,
        };
        match button.number {
            Some(n) if per_action.last().is_some_and(|(last, _)| *last == n) => {
                if let Some((_, row)) = per_action.last_mut() {
                    row.push(part);
                }
            }
            Some(n) => per_action.push((n, vec![part])),
            None => all.push(part),
        }
    }
    let pages = per_action.len().div_ceil(ACTIONS_PER_PAGE).max(1);
    let page = page.min(pages - 1);
    let shown: Vec<_> = per_action
        .chunks(ACTIONS_PER_PAGE)
        .map(<[_]>::to_vec)
        .nth(page)
        .unwrap_or_default();
    let mut rows: Vec<Vec<Part>> = shown
        .into_iter()
        .map(|(_, mut row)| {
            row.truncate(BUTTONS_PER_ROW);
            row
        })
        .collect();
    let mut last = Vec::new();
    let numbers: Vec<usize> = per_action.iter().map(|(n, _)| *n).collect();
    if page > 0 {
        let label = format!("◀ Actions {}", span(&numbers, page - 1));
        last.push(page_button(&question.id, page - 1, label));
    }
    if page + 1 < pages {
        let label = format!("Actions {} ▶", span(&numbers, page + 1));
        last.push(page_button(&question.id, page + 1, label));
    }
    last.extend(all);
    if !last.is_empty() {
        rows.push(last);
    }
    rows
}

/// The action numbers page `page` shows: "9-12", or "13" alone.
fn span(numbers: &[usize], page: usize) -> String {
    let shown: Vec<usize> = numbers
        .chunks(ACTIONS_PER_PAGE)
        .nth(page)
        .unwrap_or_default()
        .to_vec();
    match (shown.first(), shown.last()) {
        (Some(first), Some(last)) if first != last => format!("{first}-{last}"),
        (Some(first), _) => first.to_string(),
        _ => String::new(),
    }
}

fn page_button(id: &QuestionId, page: usize, label: String) -> Part {
    Part::Button {
        label,
        custom_id: format!("{PAGE_PREFIX}{id} {page}"),
        style: Style::Secondary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::batch::BatchAction;
    use askbridge_core::decision::ALL_DECISIONS;
    use askbridge_core::question::DEFAULT_TIMEOUT;
    use askbridge_core::{Action, Millis, NewQuestion};

    fn batch(count: usize, every_decision: bool) -> Question {
        let actions = (1..=count).map(|n| {
            let mut item = BatchAction::new(Action::new(
                "shell",
                serde_json::json!({"command": format!("make target-{n}")}),
            ));
            if every_decision {
                item.allowed = ALL_DECISIONS.to_vec();
            }
            item
        });
        NewQuestion::new("s", "The agent proposes these")
            .approve_all(actions)
            .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
            .unwrap()
    }

    fn custom_ids(rows: &[Vec<Part>]) -> Vec<String> {
        rows.concat()
            .into_iter()
            .map(|p| match p {
                Part::Button { custom_id, .. } | Part::Select { custom_id, .. } => custom_id,
            })
            .collect()
    }

    #[test]
    fn twenty_actions_page_four_at_a_time_within_discords_limits() {
        for every_decision in [false, true] {
            let q = batch(20, every_decision);
            let mut seen = Vec::new();
            for page in 0..5 {
                let rows = rows(&q, page);
                crate::layout::tests::assert_rows_within_limits(&rows);
                assert_eq!(rows.len(), 5);
                let ids = custom_ids(&rows);
                seen.extend(ids.iter().filter(|id| id.starts_with("/answer")).cloned());
                let pages: Vec<_> = ids.iter().filter_map(|id| page_of(id)).collect();
                let expected: Vec<usize> = [page.checked_sub(1), (page < 4).then_some(page + 1)]
                    .into_iter()
                    .flatten()
                    .collect();
                assert_eq!(pages.iter().map(|p| p.1).collect::<Vec<_>>(), expected);
                assert!(pages.iter().all(|p| p.0 == q.id));
            }
            // Every action's buttons show on some page, plus Approve all / Reject all.
            for n in 1..=20 {
                assert!(seen.iter().any(|id| id.contains(&format!(" {n} once "))));
            }
            assert!(seen.iter().any(|id| id.contains(" all once ")));
        }
    }

    #[test]
    fn decided_actions_leave_and_the_page_labels_name_the_actions() {
        let mut q = batch(9, false);
        let labels = |rows: &[Vec<Part>]| -> Vec<String> {
            rows.last()
                .unwrap()
                .iter()
                .map(|p| match p {
                    Part::Button { label, .. } => label.clone(),
                    Part::Select { .. } => String::new(),
                })
                .collect()
        };
        assert_eq!(
            labels(&rows(&q, 0)),
            ["Actions 5-8 ▶", "Approve all", "Reject all"]
        );
        assert_eq!(labels(&rows(&q, 2))[0], "◀ Actions 5-8");
        assert_eq!(labels(&rows(&q, 1))[1], "Actions 9 ▶");
        let by = askbridge_core::Actor::new("discord:1", "discord").into();
        for n in 1..=8 {
            let once = askbridge_core::question::Choice {
                action: n,
                then: askbridge_core::Transition::Answer {
                    value: askbridge_core::Answer::Text("once".into()),
                },
            };
            q.actions[n - 1].decision = Some(q.entry_of(&once, &by, Millis(1)));
        }
        // One action left: its row alone (no page buttons, no "all" for one).
        let left = rows(&q, 3);
        assert_eq!(left.len(), 1);
        assert!(custom_ids(&left).iter().all(|id| id.contains(" 9 ")));
    }

    #[test]
    fn page_ids_are_read_back_and_nothing_else_is() {
        let q = batch(1, false);
        assert_eq!(
            page_of(&format!("{PAGE_PREFIX}{} 3", q.id)),
            Some((q.id.clone(), 3))
        );
        assert_eq!(page_of(&format!("/answer {} 1 once", q.id)), None);
        assert_eq!(page_of(&format!("{PAGE_PREFIX}{} x", q.id)), None);
    }
}
