//! Follow-up runs: a function started from a chat that waits for people without holding anything.
//!
//! A run is a *record*, not a task. When its function asks something not yet answered, the
//! question is registered and the run is written down as waiting on it; the function returns at
//! once. When the question is resolved, the run is loaded, the answer appended to its journal, and
//! the function runs again from the top: asks already in the journal return their recorded
//! answers (checked against a fingerprint of the question, so a function whose shape changed
//! fails loudly instead of taking a wrong answer), steps return their recorded results, and the
//! function goes on to its next unanswered ask or to its end. A million waiting runs cost store
//! space only.

use crate::Error;
use crate::id::{QuestionId, RunId};
use crate::identity::{Identity, Target};
use crate::question::{Answer, Kind, Question, Status};
use crate::request::NewQuestion;
use crate::time::Millis;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a run came from, and so where its questions and result go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The chat it was started in (`telegram:-100`, `console`); `None` for runs started over the
    /// HTTP API without a chat, whose questions are answered over HTTP.
    pub chat: Option<Target>,
    /// Who started it (`telegram:42`); by default the only one who may answer its questions.
    pub user: Identity,
    /// Their display name.
    pub user_name: Option<String>,
}

/// Where a run is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// A process is executing it (it holds the lease).
    #[default]
    Running,
    /// It waits for its question to be resolved; nothing executes.
    Waiting,
    /// It finished with a result.
    Done,
    /// It ended with an error.
    Failed,
}

impl RunState {
    /// The name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Waiting => "waiting",
            RunState::Done => "done",
            RunState::Failed => "failed",
        }
    }

    /// Done or failed.
    pub fn is_final(self) -> bool {
        matches!(self, RunState::Done | RunState::Failed)
    }
}

/// How an ask ended, as the run remembers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskRecord {
    /// The question.
    pub question_id: QuestionId,
    /// [`fingerprint`] of the question.
    pub fingerprint: String,
    /// Its prompt, for people and HTTP flows reading the journal.
    pub prompt: String,
    /// Answered, declined, expired or cancelled.
    pub status: Status,
    /// The answer (or the default used on expiry).
    pub value: Option<Answer>,
    /// A decline's message.
    pub message: Option<String>,
    /// Who resolved it.
    pub by: Identity,
    /// An approval's action as approved, when it was edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Box<crate::approval::Action>>,
    /// A batch's decisions, one per action decided, in order ([`crate::batch`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<crate::batch::Entry>,
}

/// One thing a run has learned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JournalEntry {
    /// The outcome of an ask.
    Ask(AskRecord),
    /// The recorded result of a step (`ctx.step(name, ...)`), which never runs twice.
    Step {
        /// The step's name.
        name: String,
        /// Its result, as JSON.
        value: serde_json::Value,
    },
}

/// A run, as stored. (Stores may leave out empty fields, and fields they keep apart; they read
/// back as their defaults.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Random id.
    pub id: RunId,
    /// The flow's name.
    pub flow: String,
    /// What it was started with (`/deploy staging` gives `staging`).
    #[serde(default)]
    pub input: String,
    /// Where it came from.
    pub origin: Origin,
    /// What it has learned so far, in order.
    #[serde(default)]
    pub journal: Vec<JournalEntry>,
    /// The question it waits on (or whose answer it is absorbing).
    pub waiting_on: Option<QuestionId>,
    /// Where it is.
    #[serde(default)]
    pub state: RunState,
    /// The result (done) or the error (failed).
    pub result: Option<String>,
    /// True once the result has been posted to the origin chat.
    #[serde(default)]
    pub reported: bool,
    /// When it started.
    pub created_at: Millis,
    /// Last change.
    #[serde(default)]
    pub updated_at: Millis,
    /// The process executing it, while running.
    pub owner: Option<String>,
    /// Until when `owner` holds it; after that another process may take it over.
    pub lease_until: Option<Millis>,
}

impl Run {
    /// A new run, owned by `owner` until `lease_until`.
    pub fn new(
        flow: &str,
        input: &str,
        origin: Origin,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> Self {
        Run {
            id: RunId::random(),
            flow: flow.to_owned(),
            input: input.to_owned(),
            origin,
            journal: Vec::new(),
            waiting_on: None,
            state: RunState::Running,
            result: None,
            reported: false,
            created_at: now,
            updated_at: now,
            owner: Some(owner.to_owned()),
            lease_until: Some(lease_until),
        }
    }

    /// The session its questions belong to (cancelling it stops the run's question).
    pub fn session_id(&self) -> String {
        format!("run-{}", self.id)
    }

    /// The id of the run's `index`-th question (0-based). Derived, so that a run re-executed
    /// after a crash asks "the same" question instead of a second one; its first character is the
    /// run id's second, so stores can keep a run and its questions together.
    pub fn question_id(&self, index: usize) -> QuestionId {
        let first = self.id.as_str().as_bytes().get(1).copied().unwrap_or(b'0');
        QuestionId::derived_beside(format!("{}/{index}", self.id).as_bytes(), first)
    }

    /// How many asks the journal holds.
    pub fn asks(&self) -> usize {
        self.journal
            .iter()
            .filter(|e| matches!(e, JournalEntry::Ask(_)))
            .count()
    }

    /// Appends the outcome of the resolved `question` (the one the run waits on).
    pub fn absorb(&mut self, question: &Question) {
        let resolution = question.resolution.clone();
        self.journal.push(JournalEntry::Ask(AskRecord {
            question_id: question.id.clone(),
            fingerprint: fingerprint(question),
            prompt: question.prompt.clone(),
            status: question.status,
            value: resolution.as_ref().and_then(|r| r.value.clone()),
            message: resolution.as_ref().and_then(|r| r.message.clone()),
            edited: resolution
                .as_ref()
                .and_then(|r| r.edited.as_ref().map(|e| Box::new(e.approved.clone()))),
            decisions: resolution
                .as_ref()
                .map(|r| r.decisions.clone())
                .unwrap_or_default(),
            by: resolution.map_or_else(|| Identity::new(""), |r| r.by()),
        }));
        self.waiting_on = None;
    }

    /// Is it parked on `question` (waiting, nobody executing it)?
    pub fn waits_on(&self, question: &QuestionId) -> bool {
        self.state == RunState::Waiting && self.waiting_on.as_ref() == Some(question)
    }

    /// Is it still parked on `question` as it was at `was` (its `updated_at`), held by nobody?
    /// What a claim checks before it saves the run as the claimer carried it ahead.
    pub fn still_waits_on(&self, question: &QuestionId, was: Millis) -> bool {
        self.waits_on(question) && self.updated_at == was && self.owner.is_none()
    }

    /// Parks it on `question` as of `at`: waiting, nobody executing it.
    pub fn park_on(&mut self, question: QuestionId, at: Millis) {
        self.state = RunState::Waiting;
        self.waiting_on = Some(question);
        self.owner = None;
        self.lease_until = None;
        self.updated_at = at;
    }

    /// Does the journal already hold the outcome of `question_id`?
    pub fn knows(&self, question_id: &QuestionId) -> bool {
        self.journal
            .iter()
            .any(|e| matches!(e, JournalEntry::Ask(record) if record.question_id == *question_id))
    }
}

/// Why a process wants to execute a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire<'a> {
    /// The question it waits on was resolved.
    Answer(&'a QuestionId),
    /// Its previous executor's lease ran out (that process died or stalled).
    Recovery,
}

impl Run {
    /// The run's claim-once rule, as [`Question::apply`] is the question's: takes the run for
    /// `owner` when `why` applies, and says whether it did. Stores make it atomic.
    pub fn acquire(
        &mut self,
        why: Acquire<'_>,
        owner: &str,
        now: Millis,
        lease_until: Millis,
    ) -> bool {
        let allowed = match why {
            Acquire::Answer(question) => self.waits_on(question),
            Acquire::Recovery => {
                let unfinished =
                    self.state == RunState::Running || (self.state.is_final() && !self.reported);
                unfinished && self.lease_until.is_none_or(|until| until <= now)
            }
        };
        if allowed {
            if self.state == RunState::Waiting {
                self.state = RunState::Running;
            }
            self.owner = Some(owner.to_owned());
            self.lease_until = Some(lease_until);
            self.updated_at = now;
        }
        allowed
    }

    /// True while some process should be executing or reporting it (it belongs in the lease
    /// index that recovery scans).
    pub fn needs_executor(&self) -> bool {
        self.state == RunState::Running || (self.state.is_final() && !self.reported)
    }
}

/// A short digest of what a question asks (kind, prompt, options, multi, free text): a replayed
/// ask must match the recorded one.
pub fn fingerprint(question: &Question) -> String {
    digest(&Covered {
        kind: question.kind,
        prompt: &question.prompt,
        options: &question.options,
        multi: question.multi,
        allow_custom: question.allow_custom,
        action: question.action.as_ref(),
        batch_digest: question.batch_digest.as_deref(),
        form: question.form.as_ref(),
    })
}

/// The fingerprint `request` will have once asked (fields are normalised as on creation).
///
/// Every ask a run replays computes one, so it reads the request where it can instead of making
/// the question (a copy of the request, every check): the prompt and the options are trimmed
/// here as on creation, free text is allowed by the same rule ([`NewQuestion::allows_custom`]),
/// and the rest is fingerprinted as given, as a question keeps it. A batch's digest covers its
/// actions as checked, so a batch takes the whole way. A request that could not become a
/// question is refused when it is asked, not here.
pub fn fingerprint_of(request: &NewQuestion) -> Result<String, Error> {
    if !request.actions.is_empty() {
        let question = request
            .clone()
            .session(if request.session_id.is_empty() {
                "fingerprint"
            } else {
                request.session_id.as_str()
            })
            .into_question(
                QuestionId::derived(b"fingerprint"),
                Millis(0),
                crate::question::DEFAULT_TIMEOUT,
            )?;
        return Ok(fingerprint(&question));
    }
    Ok(digest(&Covered {
        kind: request.kind,
        prompt: &request.prompt,
        options: &request.options,
        multi: request.multi,
        allow_custom: request.allows_custom(),
        action: request.action.as_ref(),
        batch_digest: None,
        form: request.form.as_ref(),
    }))
}

/// What a fingerprint covers, from a question or from a request about to become one.
struct Covered<'a> {
    kind: Kind,
    prompt: &'a str,
    options: &'a [String],
    multi: bool,
    allow_custom: bool,
    action: Option<&'a crate::approval::Action>,
    batch_digest: Option<&'a str>,
    form: Option<&'a crate::form::FormSchema>,
}

/// The digest of what `c` covers. The prompt and the options are trimmed, as they are when a
/// question is created (a question's own are trimmed already, and stay as they are).
fn digest(c: &Covered<'_>) -> String {
    let mut hasher = Sha256::new();
    let kind = match c.kind {
        Kind::Ask => "ask",
        Kind::Confirm => "confirm",
        Kind::Approval => "approval",
        Kind::Form => "form",
    };
    for part in [kind, c.prompt.trim()] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    for option in c.options {
        hasher.update(option.trim().as_bytes());
        hasher.update([1]);
    }
    hasher.update([u8::from(c.multi), u8::from(c.allow_custom)]);
    if let Some(action) = c.action {
        hasher.update(action.digest().as_bytes());
    }
    // A batch: its digest covers its actions, in order.
    if let Some(digest) = c.batch_digest {
        hasher.update(digest.as_bytes());
    }
    if let Some(form) = c.form {
        hasher.update(serde_json::to_string(form).unwrap_or_default().as_bytes());
    }
    // Every replayed ask computes one: hex by hand, not a `String` per byte.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(16);
    for byte in &hasher.finalize()[..8] {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            chat: Some("telegram:-1".into()),
            user: "telegram:7".into(),
            user_name: None,
        }
    }

    #[test]
    fn derived_question_ids_are_stable_per_run_and_index() {
        let run = Run::new("deploy", "", origin(), "p1", Millis(0), Millis(1));
        assert_eq!(run.question_id(0), run.question_id(0));
        assert_ne!(run.question_id(0), run.question_id(1));
        let other = Run::new("deploy", "", origin(), "p1", Millis(0), Millis(1));
        assert_ne!(run.id, other.id);
        assert_ne!(run.question_id(0), other.question_id(0));
    }

    #[test]
    fn acquire_follows_the_rules() {
        let mut run = Run::new("deploy", "", origin(), "p1", Millis(0), Millis(100));
        let q = run.question_id(0);
        assert!(
            !run.clone()
                .acquire(Acquire::Recovery, "p2", Millis(50), Millis(150)),
            "lease still held"
        );
        assert!(
            run.clone()
                .acquire(Acquire::Recovery, "p2", Millis(100), Millis(200)),
            "lease ran out"
        );
        assert!(
            !run.clone()
                .acquire(Acquire::Answer(&q), "p2", Millis(50), Millis(150)),
            "not waiting"
        );
        run.state = RunState::Waiting;
        run.waiting_on = Some(q.clone());
        run.owner = None;
        assert!(!run.clone().acquire(
            Acquire::Answer(&run.question_id(1)),
            "p2",
            Millis(50),
            Millis(150)
        ));
        assert!(
            !run.clone()
                .acquire(Acquire::Recovery, "p2", Millis(500), Millis(600)),
            "waiting runs are not recovered"
        );
        assert!(run.acquire(Acquire::Answer(&q), "p2", Millis(50), Millis(150)));
        assert_eq!(
            (run.state, run.owner.as_deref()),
            (RunState::Running, Some("p2"))
        );
        assert!(
            !run.acquire(Acquire::Answer(&q), "p3", Millis(51), Millis(151)),
            "once"
        );
    }

    #[test]
    fn fingerprints_change_with_what_is_asked_only() {
        let a = NewQuestion::ask("Which?").options(["x", "y"]);
        assert_eq!(
            fingerprint_of(&a).unwrap(),
            fingerprint_of(&a.clone().detail("more words")).unwrap()
        );
        assert_eq!(
            fingerprint_of(&a).unwrap(),
            fingerprint_of(&NewQuestion::ask(" Which? ").options(["x", "y"])).unwrap()
        );
        assert_ne!(
            fingerprint_of(&a).unwrap(),
            fingerprint_of(&a.clone().options(["x", "z"])).unwrap()
        );
        assert_ne!(
            fingerprint_of(&a).unwrap(),
            fingerprint_of(&a.clone().multi()).unwrap()
        );
        assert_ne!(
            fingerprint_of(&a).unwrap(),
            fingerprint_of(&NewQuestion::confirm("Which?")).unwrap()
        );
    }

    /// A request read where it stands fingerprints as the question it becomes: the rule that
    /// matters, since a replayed ask's fingerprint (`fingerprint_of`) is compared with the one
    /// recorded from the question (`fingerprint`).
    #[test]
    fn a_request_fingerprints_as_the_question_it_becomes() {
        use crate::approval::Action;
        use crate::batch::BatchAction;
        let form: crate::form::FormSchema = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["name"]
        }))
        .unwrap();
        let requests = [
            NewQuestion::ask("  Which one?\n").options([" x", "y ", "z"]),
            NewQuestion::ask("Which ones?").options(["x", "y"]).multi(),
            NewQuestion::ask("Which, or say?")
                .options(["x"])
                .allow_custom(),
            NewQuestion::ask("Anything to add?"),
            NewQuestion::confirm(" Ship it? "),
            NewQuestion::ask("Details?").kind(Kind::Form).form(form),
            NewQuestion::ask("Deploy?")
                .kind(Kind::Approval)
                .approve(Action::new("deploy", serde_json::json!({"env": "prod"}))),
            NewQuestion::ask("These?")
                .kind(Kind::Approval)
                .approve_all([
                    BatchAction::new(Action::new("a", serde_json::json!({}))),
                    BatchAction::new(Action::new("b", serde_json::json!({"n": 1}))),
                ]),
        ];
        for request in requests {
            let question = request
                .clone()
                .session("s")
                .into_question(
                    QuestionId::derived(b"q"),
                    Millis(0),
                    std::time::Duration::from_secs(60),
                )
                .unwrap_or_else(|e| panic!("{}: {e}", request.prompt));
            assert_eq!(
                fingerprint_of(&request).unwrap(),
                fingerprint(&question),
                "{}",
                request.prompt
            );
        }
    }

    /// Fingerprints are stored in run journals: they must not change between releases. This is
    /// the example `release` flow's first ask as journals written before now hold it.
    #[test]
    fn fingerprints_read_as_stored_journals_hold_them() {
        let first = NewQuestion::ask("Release 2.0 on which channel?")
            .options(["stable", "beta", "nightly"]);
        assert_eq!(fingerprint_of(&first).unwrap(), "c63c4a2e925a0f1e");
    }
}
