//! A batch's decisions in Redis (`lua/decide.lua`): the caller applies core's rule to its
//! snapshot, and the script records the result only if the snapshot's decisions are still the
//! stored ones (their count), announcing it and making the outbox entry due when the batch is
//! complete; a snapshot behind the store is read again and the rule applied again. So the rule
//! stays in core, and the script holds a compare-and-append.

use super::RedisStore;
use super::args::{Named, Sink};
use super::codec::question_event;
use super::keys::question_bucket;
use crate::store::{Error, Event, EventKind, Result};
use askbridge_core::batch::{self, DecideOutcome, Entry};
use askbridge_core::{Millis, Question};

/// How often a decision is tried again on a snapshot others' decisions made stale.
const ATTEMPTS: usize = 16;

/// What `lua/decide.lua` takes.
#[derive(Debug, Default)]
pub(super) struct DecideArgs<'a> {
    pub(super) count: usize,
    pub(super) entries: String,
    pub(super) added: usize,
    pub(super) complete: bool,
    pub(super) due: u64,
    pub(super) id: &'a str,
    pub(super) event: String,
}

impl DecideArgs<'_> {
    pub(super) fn encode<S: Sink>(&self, named: &mut Named<'_, S>) {
        named
            .put("count", self.count)
            .put("entries", &self.entries)
            .put("added", self.added)
            .flag("complete", self.complete)
            .put("due", self.due)
            .put("id", self.id)
            .put("event", &self.event);
    }
}

/// The decisions of a question as `lua/decide.lua` keeps them (JSON objects, comma-joined),
/// put in their actions.
pub(super) fn put_decisions(question: &mut Question, joined: &str) -> Result<()> {
    if joined.is_empty() {
        return Ok(());
    }
    let corrupt = |why: String| Error::corrupt("a batch's decisions in Redis", why);
    let entries: Vec<Entry> =
        serde_json::from_str(&format!("[{joined}]")).map_err(|e| corrupt(e.to_string()))?;
    for entry in entries {
        let at = entry.action.wrapping_sub(1);
        let Some(action) = question.actions.get_mut(at) else {
            return Err(corrupt(format!("a decision on action {}", entry.action)));
        };
        action.decision = Some(entry);
    }
    Ok(())
}

impl RedisStore {
    /// See [`crate::store::Votes::decide`].
    pub(super) async fn record_decisions(
        &self,
        snapshot: &Question,
        entries: &[Entry],
        due_if_complete: Millis,
    ) -> Result<Option<(DecideOutcome, Question)>> {
        let id = snapshot.id.as_str();
        let mut current = snapshot.clone();
        for _ in 0..ATTEMPTS {
            let mut question = current.clone();
            let outcome = batch::apply_decisions(&mut question, entries);
            if !outcome.is_recorded() {
                // A retry after a lost reply finds its own decisions recorded.
                let ours = entries.iter().all(|e| {
                    let stored = current.actions.get(e.action.wrapping_sub(1));
                    stored.is_some_and(|a| a.decision.as_ref() == Some(e))
                });
                let outcome = match outcome {
                    DecideOutcome::Decided(_) if ours && batch::is_complete(&current) => {
                        DecideOutcome::Complete
                    }
                    DecideOutcome::Decided(_) if ours => DecideOutcome::Recorded,
                    other => other,
                };
                return Ok(Some((outcome, current)));
            }
            let joined: Vec<String> = entries
                .iter()
                .map(|e| serde_json::to_string(e).expect("a decision serialises"))
                .collect();
            let args = DecideArgs {
                count: current.decided().len(),
                entries: joined.join(","),
                added: entries.len(),
                complete: outcome == DecideOutcome::Complete,
                due: due_if_complete.0,
                id,
                event: question_event(EventKind::Voted, &question),
            };
            let mut invocation = self.scripts.decide.prepare_invoke();
            invocation
                .key(self.keys.question(id))
                .key(self.keys.open(question_bucket(id)))
                .key(self.keys.events(question_bucket(id)));
            args.encode(&mut Named::new(&mut invocation));
            self.tag(&mut invocation);
            let reply: Vec<String> = self.invoke("decide", &invocation).await?;
            match reply.first().map(String::as_str) {
                Some("recorded") => {
                    self.replicated(&self.keys.question(id)).await;
                    self.deliver([Event::voted(&question)]);
                    return Ok(Some((outcome, question)));
                }
                Some("missing") => return Ok(None),
                Some("resolved") => {
                    let resolved = self.load_many(&[id.to_owned()]).await?.pop();
                    return Ok(resolved.map(|q| (DecideOutcome::AlreadyResolved, q)));
                }
                Some("stale") => match self.load_many(&[id.to_owned()]).await?.pop() {
                    Some(stored) => current = stored,
                    None => return Ok(None),
                },
                other => {
                    let why = format!("decide reply {other:?}");
                    return Err(Error::corrupt(format!("question {id}"), why));
                }
            }
        }
        Err(Error::unavailable(
            format!("recording decisions on question {id}"),
            std::io::Error::other("its decisions kept changing meanwhile"),
        ))
    }
}
