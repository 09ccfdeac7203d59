//! A claim's arguments and its reply, on either side of `lua/claim.lua` (the call itself is in
//! `questions.rs`).
//!
//! What a claim does to a pending question is decided here, by `Question::apply` itself on the
//! question as pending: won, or an expiry when late, with the resolution and the event that go
//! with it. The script decides only what must be decided atomically: whether the question is
//! still pending, and what becomes of the run parked on it.

use super::RedisStore;
use super::args::{ClaimArgs, InsertArgs, SaveArgs};
use super::codec::{
    ClaimReply, assemble_run, kind_name, pairs, question_event, set_outcome, work_of,
};
use super::keys::{question_bucket, run_bucket};
use crate::store::{AheadRun, ClaimOptions, Claimed, EventKind, Result};
use askbridge_core::{Claim, ClaimOutcome, Millis, Question, QuestionId, Resolution, Status};
use redis::ScriptInvocation;

/// Answer times each bucket keeps for the percentiles (16 buckets: about 2,000 in all). Its list
/// may hold as many older ones besides, which nobody reads: claim.lua trims it in steps.
pub(super) const ANSWERS_KEPT: usize = 125;

/// A claim as sent: its arguments, and what reading its reply needs.
pub(super) struct ClaimPlan<'a> {
    pub(super) args: ClaimArgs<'a>,
    /// What the claim does to the question if it is still pending.
    outcome: ClaimOutcome,
    resolution: Resolution,
    /// The run parked on the question, when the claim may take it (it shares the bucket).
    run: Option<&'a str>,
    /// The run carried ahead, when the claim may save it.
    pub(super) ahead: Option<AheadRun<'a>>,
}

impl RedisStore {
    /// What the claim script takes for `claim` on `snapshot`.
    pub(super) fn plan_claim<'a>(
        &self,
        snapshot: &'a Question,
        claim: &Claim,
        options: &ClaimOptions<'a>,
    ) -> ClaimPlan<'a> {
        let id = snapshot.id.as_str();
        let bucket = question_bucket(id);
        let mut applied = snapshot.clone();
        applied.status = Status::Pending;
        applied.resolution = None;
        let outcome = applied.apply(claim);
        let resolution = applied
            .resolution
            .clone()
            .expect("a claim on a pending question resolves it");
        let res = serde_json::to_string(&resolution).expect("resolutions serialise");
        let event = question_event(EventKind::for_status(applied.status), &applied);
        let won = outcome == ClaimOutcome::Won;
        // The parked run shares the question's bucket (see `keys`).
        let run = snapshot
            .run_id
            .as_ref()
            .filter(|run| options.take_run.is_some() && run_bucket(run.as_str()) == bucket)
            .map(|run| run.as_str());
        // The run carried ahead and its next question, in the run's (so the question's) slot;
        // only a claim that wins carries it.
        let ahead = options.ahead.filter(|ahead| {
            won && run == Some(ahead.run.id.as_str())
                && question_bucket(ahead.next.id.as_str()) == bucket
        });
        let args = ClaimArgs {
            now: claim.at.0,
            id,
            outcome: if won { "won" } else { "expired" },
            status: applied.status.as_str(),
            res,
            event,
            // Tells this attempt's retries (after a lost reply) from other claims.
            token: QuestionId::random().to_string(),
            settle_at: Millis::now().after(options.settle_after).0,
            session: &snapshot.session_id,
            kind: kind_name(snapshot.kind),
            digest: askbridge_core::audit::digest_of(snapshot).unwrap_or_default(),
            // Stream ids are milliseconds: MINID trims audit records older than the retention.
            oldest_audit: claim
                .at
                .0
                .saturating_sub(self.options.audit_retention.as_millis() as u64),
            answer_ms: (won && applied.status == Status::Answered)
                .then(|| claim.at.since(snapshot.created_at).as_millis() as u64),
            take: options
                .take_run
                .zip(run)
                .map(|(take, run)| (take.owner, take.lease_until.0, run)),
            finish_when_idle: options.finish_when_idle,
            has_run: snapshot.run_id.is_some(),
            ahead: None,
        };
        ClaimPlan {
            args,
            outcome,
            resolution,
            run,
            ahead,
        }
    }

    /// Adds the claim script's keys to `invocation`, and the run carried ahead's arguments to
    /// the plan (they come with its keys).
    pub(super) fn push_claim_keys<'a>(
        &self,
        snapshot: &Question,
        plan: &mut ClaimPlan<'a>,
        invocation: &mut ScriptInvocation,
    ) {
        let id = snapshot.id.as_str();
        let bucket = question_bucket(id);
        // Without a run, the question's own key stands in, so every key stays in the slot.
        let (run_key, run_data) = match plan.run {
            Some(run) => (self.keys.run(run), self.keys.run_data(run)),
            None => (self.keys.question(id), self.keys.question(id)),
        };
        invocation
            .key(self.keys.question(id))
            .key(self.keys.shown(id))
            .key(self.keys.effects(id))
            .key(self.keys.open(bucket))
            .key(self.keys.pending(bucket))
            .key(self.keys.done(bucket, plan.args.status))
            .key(self.keys.events(bucket))
            .key(self.keys.audit(bucket))
            .key(self.keys.answers(bucket))
            .key(run_key)
            .key(self.keys.runs(bucket))
            .key(run_data)
            .key(self.keys.session_pending(bucket, &snapshot.session_id))
            .key(
                self.keys
                    .session_done(bucket, plan.args.status, &snapshot.session_id),
            );
        if let Some(ahead) = plan.ahead {
            let save: SaveArgs<'a> = self.push_save(ahead.run, "", invocation);
            let insert: InsertArgs<'a> = self.push_insert(ahead.next, invocation);
            plan.args.ahead = Some((ahead.was.0, save, insert));
        }
    }
}

impl ClaimPlan<'_> {
    /// What the claim found and did, from the script's reply.
    pub(super) fn claimed(
        &self,
        snapshot: &Question,
        reply: ClaimReply,
        carried: bool,
    ) -> Result<Claimed> {
        let (outcome, status, stored, shown, done, run, finished, winner) = reply;
        let (status, stored) = (status.unwrap_or_default(), stored.unwrap_or_default());
        let outcome = match outcome.as_str() {
            "won" | "expired" => self.outcome,
            // A retry (same token) that finds its own earlier attempt won all along. Another
            // claim with the very same resolution (the same answer by the same caller in the
            // same millisecond) did not win: it is told so.
            _ if winner == self.args.token && stored == self.args.res => self.outcome,
            _ => ClaimOutcome::AlreadyResolved,
        };
        // The question as asked is the snapshot's (its `q` never changes once stored).
        let mut question = snapshot.clone();
        set_outcome(
            &mut question,
            &status,
            Some(&stored),
            &[(&self.args.res, &self.resolution)],
        )?;
        Ok(Claimed {
            outcome,
            question,
            work: work_of(shown, done),
            run: assemble_run(&pairs(run))?,
            finished: finished == 1,
            ahead: carried,
        })
    }
}
