//! Reading a run's journal at the function's cursor: the recorded answer or step result the
//! function meets again on replay, or what it does differently (the flow changed under the run).

use super::FlowContext;
use crate::flows::Interrupt;
use askbridge_core::run::{AskRecord, JournalEntry};
use askbridge_core::{NewQuestion, QuestionId};

/// What the journal says at the cursor, for an ask.
pub(super) enum AskAt {
    Recorded(Box<AskRecord>),
    New(QuestionId),
}

impl FlowContext {
    pub(super) fn next_ask(
        &self,
        request: &NewQuestion,
        fingerprint: &str,
    ) -> Result<AskAt, Interrupt> {
        let mut replay = self.unsuspended()?;
        let cursor = replay.cursor;
        let diverged =
            |expected: String, found: String| Err(Interrupt::Diverged { expected, found });
        match replay.run.journal.get(cursor) {
            Some(JournalEntry::Ask(record)) if record.fingerprint == fingerprint => {
                let record = record.clone();
                replay.cursor += 1;
                Ok(AskAt::Recorded(Box::new(record)))
            }
            // Same words, different question: other options, or another action to approve.
            Some(JournalEntry::Ask(record)) if record.prompt == request.prompt.trim() => diverged(
                format!("\"{}\" with other options or another action", record.prompt),
                format!("asks \"{}\" differently", request.prompt),
            ),
            Some(JournalEntry::Ask(record)) => diverged(
                format!("the question \"{}\"", record.prompt),
                format!("asks \"{}\"", request.prompt),
            ),
            Some(JournalEntry::Step { name, .. }) => diverged(
                format!("step `{name}`"),
                format!("asks \"{}\"", request.prompt),
            ),
            None => Ok(AskAt::New(replay.run.question_id(replay.run.asks()))),
        }
    }

    pub(super) fn next_step(&self, name: &str) -> Result<Option<serde_json::Value>, Interrupt> {
        let mut replay = self.unsuspended()?;
        let cursor = replay.cursor;
        let diverged = |expected: String| {
            Err(Interrupt::Diverged {
                expected,
                found: format!("runs step `{name}`"),
            })
        };
        match replay.run.journal.get(cursor) {
            Some(JournalEntry::Step {
                name: recorded,
                value,
            }) if recorded == name => {
                let value = value.clone();
                replay.cursor += 1;
                Ok(Some(value))
            }
            Some(JournalEntry::Step { name: recorded, .. }) => {
                diverged(format!("step `{recorded}`"))
            }
            Some(JournalEntry::Ask(record)) => {
                diverged(format!("the question \"{}\"", record.prompt))
            }
            None => Ok(None),
        }
    }
}
