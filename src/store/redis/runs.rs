//! Runs in Redis: stored, taken (`acquire_run.lua`), saved by their holder (`lib/save_run.lua`),
//! parked with their question in one script (`park.lua`, `insert_parked.lua`).

use super::RedisStore;
use super::args::{Named, SaveArgs, encode_park};
use super::codec::{RunFields, assemble_run, pairs, run_frame};
use super::keys::{BUCKETS, question_bucket, run_bucket};
use super::scripts::{ACQUIRE_RUN, INSERT_RUN};
use crate::store::{Error, Event, Inserted, Parked, Questions, Result, Runs, Saved};
use askbridge_core::Question;
use askbridge_core::run::{Acquire, Run};
use askbridge_core::{Millis, RunId};
use async_trait::async_trait;
use redis::ScriptInvocation;
use std::collections::HashMap;

/// What `lib/save_run.lua` answered.
fn saved_of(code: i64) -> Saved {
    match code {
        0 => Saved::Lost,
        2 => Saved::WaitsOnResolved,
        _ => Saved::Written,
    }
}

impl RedisStore {
    /// Adds `lib/save_run.lua`'s keys for `run` to `invocation`, and returns its arguments.
    pub(super) fn push_save<'a>(
        &self,
        run: &'a Run,
        owner: &'a str,
        invocation: &mut ScriptInvocation,
    ) -> SaveArgs<'a> {
        let bucket = run_bucket(run.id.as_str());
        let run_key = self.keys.run(run.id.as_str());
        // The question it waits on shares its bucket (see `keys`), so the script can look at it.
        let waited = match &run.waiting_on {
            Some(question) if question_bucket(question.as_str()) == bucket => {
                self.keys.question(question.as_str())
            }
            _ => run_key.clone(),
        };
        invocation
            .key(&run_key)
            .key(self.keys.run_data(run.id.as_str()))
            .key(self.keys.runs(bucket))
            .key(self.keys.events(bucket))
            .key(waited)
            .key(self.keys.runs_live(bucket))
            .key(self.keys.runs_ended(bucket));
        self.save_args(run, owner)
    }

    /// What `lib/save_run.lua` takes to save `run` if `owner` holds it.
    fn save_args<'a>(&self, run: &'a Run, owner: &'a str) -> SaveArgs<'a> {
        let ttl = if run.state.is_final() && run.reported {
            self.options.retention.as_millis() as u64
        } else {
            0
        };
        let fields = RunFields::of(run);
        let event = run_frame(run);
        SaveArgs {
            owner,
            state: fields.state,
            waiting_on: fields.waiting_on,
            new_owner: fields.owner,
            lease_until: fields.lease_until,
            reported: fields.reported,
            updated_at: fields.updated_at,
            created_at: run.created_at.0,
            ttl,
            lease_score: Some(fields.lease_score).filter(|score| !score.is_empty()),
            id: run.id.as_str(),
            event,
            data: fields.data,
        }
    }

    /// Runs `script` (park.lua, or insert_parked.lua for a new run) for `run` parking on
    /// `question`, which shares its bucket.
    async fn park_with(
        &self,
        script: &redis::Script,
        what: &'static str,
        run: &Run,
        owner: &str,
        question: &Question,
    ) -> Result<Parked> {
        let mut invocation = script.prepare_invoke();
        let save = self.push_save(run, owner, &mut invocation);
        let insert = self.push_insert(question, &mut invocation);
        encode_park(&mut invocation, &save, &insert);
        self.tag(&mut invocation);
        let code: i64 = self.invoke(what, &invocation).await?;
        if code == 1 || code == 2 {
            // The question is asked with this write (a cluster only).
            self.replicated(&self.keys.question(question.id.as_str()))
                .await;
            self.deliver(Event::of_parked(run, question));
        }
        Ok(match code {
            -1 => Parked::QuestionTaken,
            code => Parked::Saved(saved_of(code)),
        })
    }
}

#[async_trait]
impl Runs for RedisStore {
    async fn insert_run(&self, run: &Run) -> Result<Inserted> {
        let fields = RunFields::of(run);
        let mut invocation = INSERT_RUN.prepare_invoke();
        invocation
            .key(self.keys.run(run.id.as_str()))
            .key(self.keys.run_data(run.id.as_str()))
            .key(self.keys.runs(run_bucket(run.id.as_str())))
            .key(self.keys.runs_live(run_bucket(run.id.as_str())));
        fields.push(&mut invocation);
        invocation
            .arg(&fields.lease_score)
            .arg(run.id.as_str())
            .arg(run.created_at.0);
        let created: i64 = self.invoke("insert run", &invocation).await?;
        if created == 1 {
            return Ok(Inserted::Created);
        }
        // As for questions: our own earlier attempt may have landed.
        Ok(match self.get_run(&run.id).await? {
            Some(stored) if stored.created_at == run.created_at && stored.flow == run.flow => {
                Inserted::Created
            }
            _ => Inserted::Taken,
        })
    }

    async fn get_run(&self, id: &RunId) -> Result<Option<Run>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL")
            .arg(self.keys.run(id.as_str()))
            .cmd("GET")
            .arg(self.keys.run_data(id.as_str()));
        let (mut fields, data): (HashMap<String, String>, Option<String>) =
            self.query_pipe("get run", &pipe).await?;
        if let Some(data) = data {
            fields.insert("data".into(), data);
        }
        assemble_run(&fields)
    }

    async fn acquire_run(
        &self,
        id: &RunId,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Result<Option<Run>> {
        let (kind, question) = match why {
            Acquire::Answer(question) => ("answer", question.to_string()),
            Acquire::Recovery => ("recovery", String::new()),
        };
        let mut invocation = ACQUIRE_RUN.prepare_invoke();
        invocation
            .key(self.keys.run(id.as_str()))
            .key(self.keys.run_data(id.as_str()))
            .key(self.keys.runs(run_bucket(id.as_str())))
            .arg(kind)
            .arg(&question)
            .arg(owner)
            .arg(now.0)
            .arg(lease_until.0)
            .arg(id.as_str());
        let taken: Vec<String> = self.invoke("acquire run", &invocation).await?;
        assemble_run(&pairs(taken))
    }

    async fn save_run(&self, run: &Run, owner: &str) -> Result<Saved> {
        let mut invocation = self.scripts.save_run.prepare_invoke();
        let save = self.push_save(run, owner, &mut invocation);
        save.encode(&mut Named::new(&mut invocation));
        self.tag(&mut invocation);
        let saved: i64 = self.invoke("save run", &invocation).await?;
        if saved != 0 {
            self.deliver(Event::of_run(run));
        }
        Ok(saved_of(saved))
    }

    async fn park_run(&self, run: &Run, owner: &str, question: &Question) -> Result<Parked> {
        if question_bucket(question.id.as_str()) != run_bucket(run.id.as_str()) {
            // Not derived beside the run (see `keys`): two steps, question first.
            return Ok(match self.insert(question).await? {
                Inserted::Created => Parked::Saved(self.save_run(run, owner).await?),
                // Closed: a run's session closed by hand (`POST /api/sessions/{id}/close`); its
                // question is not stored, as when its id is taken.
                Inserted::Taken | Inserted::Closed => Parked::QuestionTaken,
            });
        }
        self.park_with(&self.scripts.park, "park run", run, owner, question)
            .await
    }

    async fn insert_parked(
        &self,
        started: &Run,
        parked: &Run,
        owner: &str,
        question: &Question,
    ) -> Result<Parked> {
        if question_bucket(question.id.as_str()) != run_bucket(parked.id.as_str()) {
            return crate::store::roles::insert_then_park(self, started, parked, owner, question)
                .await;
        }
        let parked_run = self
            .park_with(
                &self.scripts.insert_parked,
                "insert parked run",
                parked,
                owner,
                question,
            )
            .await?;
        if parked_run == Parked::QuestionTaken {
            // Nothing was written: the run is stored as it started, as the role says.
            if self.insert_run(started).await? == Inserted::Taken {
                return Ok(Parked::Saved(Saved::Lost));
            }
        }
        Ok(parked_run)
    }

    async fn expired_runs(&self, now: Millis, limit: usize) -> Result<Vec<RunId>> {
        let mut pipe = redis::pipe();
        for bucket in 0..BUCKETS {
            pipe.cmd("ZRANGE")
                .arg(self.keys.runs(bucket))
                .arg(0)
                .arg(now.0)
                .arg("BYSCORE")
                .arg("LIMIT")
                .arg(0)
                .arg(limit);
        }
        let ids: Vec<Vec<String>> = self.query_pipe("expired runs", &pipe).await?;
        ids.concat()
            .iter()
            .take(limit)
            .map(|id| RunId::parse(id).ok_or_else(|| Error::corrupt("the run lease index", id)))
            .collect()
    }

    async fn abandon_run(&self, id: &RunId, why: &str) -> Result<()> {
        // The run's state lives in fields of its own beside the unreadable JSON: mark it failed
        // and reported there, keep `why` beside it, and let it expire like any finished run.
        let (key, data) = (self.keys.run(id.as_str()), self.keys.run_data(id.as_str()));
        let retention = self.options.retention.as_millis() as i64;
        let bucket = run_bucket(id.as_str());
        let mut pipe = redis::pipe();
        pipe.atomic()
            .zrem(self.keys.runs(bucket), id.as_str())
            .ignore()
            .zrem(self.keys.runs_live(bucket), id.as_str())
            .ignore()
            .zadd(self.keys.runs_ended(bucket), id.as_str(), Millis::now().0)
            .ignore()
            .hset_multiple(
                &key,
                &[("state", "failed"), ("reported", "1"), ("abandoned", why)],
            )
            .ignore()
            .pexpire(&key, retention)
            .ignore()
            .pexpire(&data, retention)
            .ignore();
        self.query_pipe("abandon run", &pipe).await
    }
}
