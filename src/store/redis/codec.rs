//! How records are spread over hash fields: a question is its compact JSON as asked plus the
//! fields the claim script changes (`status`, `res`); a run is its JSON plus the fields the lease
//! scripts change. Reading puts them back together; a field that does not read is a corrupt
//! record.

use super::compact::without_empty;
use crate::store::{Error, Event, EventKind, Result, Shown, Work};
use askbridge_core::quorum::Vote;
use askbridge_core::run::{JournalEntry, Origin, Run, RunState};
use askbridge_core::{Kind, Millis, Question, QuestionId, Resolution, RunId, Status, Target};
use serde::Serialize;
use std::collections::HashMap;

/// The votes of a question as `lua/vote.lua` keeps them: JSON objects, comma-joined.
pub(super) fn votes_of(joined: &str) -> Result<Vec<Vote>> {
    if joined.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&format!("[{joined}]"))
        .map_err(|e| Error::corrupt("a question's votes in Redis", e.to_string()))
}

/// Rebuilds a question from its hash fields.
pub(super) fn assemble(
    json: &str,
    status: &str,
    resolution: Option<&str>,
    votes: Option<&str>,
) -> Result<Question> {
    let mut question: Question = serde_json::from_str(json)
        .map_err(|e| Error::corrupt("a question in Redis", e.to_string()))?;
    if let Some(votes) = votes {
        question.votes = votes_of(votes)?;
    }
    set_outcome(&mut question, status, resolution, &[])?;
    Ok(question)
}

/// Gives `question` its stored `status` and `resolution` (JSON). A resolution that is one of
/// `known` — the JSON a claimer sent beside the value it was made from — is taken from there
/// instead of being parsed again: a claim's reply is most often its own resolution.
pub(super) fn set_outcome(
    question: &mut Question,
    status: &str,
    resolution: Option<&str>,
    known: &[(&str, &Resolution)],
) -> Result<()> {
    let corrupt = |why: String| Error::corrupt("a question in Redis", why);
    question.status = Status::parse(status).ok_or_else(|| corrupt(format!("status {status}")))?;
    question.resolution = match resolution.filter(|r| !r.is_empty()) {
        Some(json) => match known.iter().find(|(sent, _)| *sent == json) {
            Some((_, value)) => Some((*value).clone()),
            None => {
                Some(serde_json::from_str::<Resolution>(json).map_err(|e| corrupt(e.to_string()))?)
            }
        },
        None => None,
    };
    Ok(())
}

/// An event around a record its script stores: `head`, the record's JSON members, `tail`. Both
/// ends are written here, where everything in them is known; the script only puts the record
/// in (`framed` in `lua/lib/announce.lua`), so that a record and its event cross the network
/// once, not twice. Why: sent twice, the next question and the run carried ahead made a resume
/// ship about 0.8 KB more, and Redis reads every byte.
#[derive(Debug, Default)]
pub(super) struct Frame {
    pub(super) head: String,
    pub(super) tail: String,
}

impl Frame {
    /// The event around `object` (a JSON object), as the script builds it.
    #[cfg(test)]
    pub(super) fn around(&self, object: &str) -> String {
        let open = object.strip_suffix('}').unwrap_or(object);
        format!("{}{open}{}", self.head, self.tail)
    }
}

/// A question's `q` field and the event announcing it asked, around it. `q` is the question's
/// JSON as asked: an object without its status and resolution (they have fields of their own)
/// and without empty fields (they read back as their defaults), which keeps a pending
/// question's memory in Redis small.
pub(super) fn asked_and_frame(question: &Question) -> (String, Frame) {
    let q = without_empty(question, &["resolution", "status"]);
    let frame = Frame {
        head: format!(r#"{{"kind":"{}","question":"#, EventKind::Asked.name()),
        tail: format!(r#","status":"{}"}}}}"#, Status::Pending.as_str()),
    };
    (q, frame)
}

/// The `question.voted` event's pieces: around the question's `q` (`Frame`), with its votes
/// (their JSON objects, comma-joined) between the returned text and the frame's tail. The vote
/// script decides the votes, the stored ones and the new one; everything else is written here.
pub(super) fn voted_frame() -> (Frame, String) {
    let frame = Frame {
        head: format!(r#"{{"kind":"{}","question":"#, EventKind::Voted.name()),
        tail: "]}}".to_owned(),
    };
    let before_votes = format!(r#","status":"{}","votes":["#, Status::Pending.as_str());
    (frame, before_votes)
}

/// The event announcing `question` as it is (resolved, for a claim), without its empty fields.
pub(super) fn question_event(kind: EventKind, question: &Question) -> String {
    let fields = without_empty(question, &[]);
    // A name of ours (`question.resolved`, ...): nothing in it to escape.
    let name = kind.name();
    let mut event = String::with_capacity(fields.len() + name.len() + 26);
    event.push_str(r#"{"kind":""#);
    event.push_str(name);
    event.push_str(r#"","question":"#);
    event.push_str(&fields);
    event.push('}');
    event
}

/// The event announcing a run that parked or ended (`None` for a run nobody waits on), around
/// its data as stored: the whole run, its fields kept apart appended, without serialising it
/// again (this runs on every save of a run).
pub(super) fn run_frame(run: &Run) -> Option<Frame> {
    let kind = Event::of_run(run)?.kind().name();
    Some(Frame {
        head: format!(r#"{{"kind":"{kind}","run":"#),
        tail: format!("{}}}}}", kept_apart_members(run)),
    })
}

/// Pairs `field, value, field, value, ...` as a Lua script returns a hash.
pub(super) fn pairs(flat: Vec<String>) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let mut items = flat.into_iter();
    while let (Some(field), Some(value)) = (items.next(), items.next()) {
        map.insert(field, value);
    }
    map
}

/// A run's mutable fields, as the run hash holds them beside its JSON.
pub(super) struct RunFields {
    pub(super) data: String,
    pub(super) state: &'static str,
    pub(super) waiting_on: String,
    pub(super) owner: String,
    pub(super) lease_until: String,
    pub(super) reported: &'static str,
    pub(super) updated_at: String,
    /// Its score in the lease index, or empty when it needs no executor.
    pub(super) lease_score: String,
}

impl RunFields {
    pub(super) fn of(run: &Run) -> Self {
        RunFields {
            data: run_data(run),
            state: run.state.as_str(),
            waiting_on: run
                .waiting_on
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            owner: run.owner.clone().unwrap_or_default(),
            lease_until: run.lease_until.map(|m| m.0.to_string()).unwrap_or_default(),
            reported: if run.reported { "1" } else { "0" },
            updated_at: run.updated_at.0.to_string(),
            lease_score: if run.needs_executor() {
                run.lease_until.unwrap_or_default().0.to_string()
            } else {
                String::new()
            },
        }
    }

    pub(super) fn push(&self, invocation: &mut redis::ScriptInvocation<'_>) {
        invocation
            .arg(&self.data)
            .arg(self.state)
            .arg(&self.waiting_on)
            .arg(&self.owner)
            .arg(&self.lease_until)
            .arg(self.reported)
            .arg(&self.updated_at);
    }
}

/// The run's data key: its JSON without the fields kept apart in its hash, and without empty
/// fields (both read back as defaults and are then set from the hash). Serialised from borrowed
/// fields, not through a `serde_json::Value`: this runs on every write of a run, on the hot path
/// of a follow-up run (the test below keeps it in step with `Run`'s own fields).
#[derive(Serialize)]
struct RunData<'a> {
    id: &'a RunId,
    #[serde(skip_serializing_if = "str::is_empty")]
    flow: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    input: &'a str,
    origin: &'a Origin,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    journal: &'a [JournalEntry],
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a str>,
    created_at: Millis,
}

fn run_data(run: &Run) -> String {
    let data = RunData {
        id: &run.id,
        flow: &run.flow,
        input: &run.input,
        origin: &run.origin,
        journal: &run.journal,
        result: run.result.as_deref().filter(|r| !r.is_empty()),
        created_at: run.created_at,
    };
    serde_json::to_string(&data).expect("a run always serialises")
}

/// The fields of a run kept apart from its data (see [`kept_apart_members`]).
#[derive(Serialize)]
struct KeptApart<'a> {
    state: RunState,
    waiting_on: Option<&'a QuestionId>,
    owner: Option<&'a str>,
    lease_until: Option<Millis>,
    reported: bool,
    updated_at: Millis,
}

/// The run's fields kept apart from its data, as JSON object members (`,"state":"waiting",...`):
/// what a script appends to the data to announce the whole run.
pub(super) fn kept_apart_members(run: &Run) -> String {
    let members = KeptApart {
        state: run.state,
        waiting_on: run.waiting_on.as_ref(),
        owner: run.owner.as_deref(),
        lease_until: run.lease_until,
        reported: run.reported,
        updated_at: run.updated_at,
    };
    let mut text = serde_json::to_string(&members).expect("a run always serialises");
    // `{"state":...}` becomes `,"state":...`.
    text.pop();
    text.replace_range(..1, ",");
    text
}

/// Rebuilds a run from its hash fields and its data (under `data`): the JSON, overridden by the
/// fields scripts change.
pub(super) fn assemble_run(fields: &HashMap<String, String>) -> Result<Option<Run>> {
    let Some(data) = fields.get("data") else {
        return Ok(None);
    };
    let corrupt = |why: String| Error::corrupt("a run in Redis", why);
    let mut run: Run = serde_json::from_str(data).map_err(|e| corrupt(e.to_string()))?;
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    run.state = match field("state") {
        "running" => RunState::Running,
        "waiting" => RunState::Waiting,
        "done" => RunState::Done,
        "failed" => RunState::Failed,
        other => return Err(corrupt(format!("run state `{other}`"))),
    };
    run.waiting_on = QuestionId::parse(field("waiting_on")).ok();
    run.owner = Some(field("owner").to_owned()).filter(|o| !o.is_empty());
    run.lease_until = field("lease_until").parse().ok().map(Millis);
    run.reported = field("reported") == "1";
    if let Ok(updated) = field("updated_at").parse() {
        run.updated_at = Millis(updated);
    }
    Ok(Some(run))
}

/// What the claim script returns.
pub(super) type ClaimReply = (
    String,
    Option<String>,
    Option<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    i64,
    String,
);

/// The claim script's reply: its first eight elements, and whether it carried the run ahead.
pub(super) fn split_claim_reply(
    mut reply: Vec<redis::Value>,
) -> std::result::Result<(ClaimReply, i64), String> {
    let carried = match reply.pop() {
        Some(value) if reply.len() == 8 => {
            redis::FromRedisValue::from_redis_value(value).map_err(|e| e.to_string())?
        }
        _ => return Err(format!("{} elements, expected nine", reply.len() + 1)),
    };
    let head = redis::FromRedisValue::from_redis_value(redis::Value::Array(reply))
        .map_err(|e| e.to_string())?;
    Ok((head, carried))
}

/// A question kind's name, as in JSON.
pub(super) fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Ask => "ask",
        Kind::Confirm => "confirm",
        Kind::Approval => "approval",
        Kind::Form => "form",
    }
}

pub(super) fn work_of(shown: Vec<String>, done: Vec<String>) -> Work {
    Work {
        shown: pairs(shown)
            .into_iter()
            .map(|(target, reference)| Shown {
                target: Target::new(target),
                reference,
            })
            .collect(),
        done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn which_library() -> Question {
        askbridge_core::NewQuestion::ask("Which library?")
            .options(["dayjs", "luxon"])
            .session("s")
            .into_question(
                QuestionId::random(),
                Millis(1_000),
                std::time::Duration::from_secs(60),
            )
            .unwrap()
    }

    /// Every field of `Run` either goes to its data or is kept apart in its hash: a field added
    /// to `Run` and forgotten by `RunData` fails here instead of vanishing from the store.
    #[test]
    fn a_runs_data_and_kept_apart_fields_hold_all_of_it() {
        let origin = Origin {
            chat: Some("telegram:-1".into()),
            user: "telegram:7".into(),
            user_name: Some("Ann".into()),
        };
        let mut run = Run::new("deploy", "staging", origin, "p1", Millis(5), Millis(9));
        run.journal.push(JournalEntry::Step {
            name: "build".into(),
            value: serde_json::json!(1),
        });
        run.result = Some("ok".into());
        run.waiting_on = Some(QuestionId::parse("abcdefghij").unwrap());
        let whole = serde_json::to_value(&run).unwrap();
        let data: serde_json::Value = serde_json::from_str(&run_data(&run)).unwrap();
        let apart: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", &kept_apart_members(&run)[1..])).unwrap();
        let mut joined = data.as_object().unwrap().clone();
        joined.extend(apart.as_object().unwrap().clone());
        assert_eq!(serde_json::Value::Object(joined), whole);
        // Empty fields are left out and read back as their defaults.
        let bare = Run::new("deploy", "", run.origin.clone(), "p1", Millis(5), Millis(9));
        let data = run_data(&bare);
        assert!(!data.contains("input") && !data.contains("journal") && !data.contains("result"));
        let read: Run = serde_json::from_str(&data).unwrap();
        assert_eq!(
            (read.input, read.journal.len(), read.result),
            (String::new(), 0, None)
        );
    }

    /// The events a script builds around the records it stores are the events every store
    /// publishes (`Event::of`, `Event::of_run`), read as the event reader reads them.
    #[test]
    fn framed_events_are_the_store_events() {
        let question = which_library();
        let (q, frame) = asked_and_frame(&question);
        let read: Event = serde_json::from_str(&frame.around(&q)).unwrap();
        assert_eq!(read, Event::of(&question));
        let origin = Origin {
            chat: None,
            user: "api".into(),
            user_name: None,
        };
        let mut run = Run::new("deploy", "staging", origin, "p1", Millis(5), Millis(9));
        assert!(run_frame(&run).is_none(), "a running run is not announced");
        for state in [RunState::Waiting, RunState::Done] {
            run.state = state;
            run.waiting_on = (state == RunState::Waiting).then(|| question.id.clone());
            run.reported = state == RunState::Done;
            let event = run_frame(&run).unwrap().around(&run_data(&run));
            let read: Event = serde_json::from_str(&event).unwrap();
            assert_eq!(Some(read), Event::of_run(&run));
        }
    }

    /// The vote script's event, with the votes spliced in as the script keeps them
    /// (comma-joined), is the one every store publishes.
    #[test]
    fn a_framed_vote_event_is_the_store_event() {
        let mut question = which_library();
        question.quorum = Some(askbridge_core::quorum::Quorum {
            needs: 2,
            of: vec!["chat:1".into(), "chat:2".into()],
        });
        let (q, _) = asked_and_frame(&question);
        let vote = |by: &str| Vote {
            by: by.into(),
            by_name: Some(format!("@{by}")),
            via: "chat".into(),
            at: Millis(1_500),
            value: askbridge_core::Answer::Text("dayjs".into()),
            tally: "dayjs".into(),
        };
        question.votes = vec![vote("chat:1"), vote("chat:2")];
        let joined = question
            .votes
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect::<Vec<_>>()
            .join(",");
        let (frame, before_votes) = voted_frame();
        let spliced = Frame {
            head: frame.head,
            tail: format!("{before_votes}{joined}{}", frame.tail),
        };
        let read: Event = serde_json::from_str(&spliced.around(&q)).unwrap();
        assert_eq!(read, Event::voted(&question));
    }

    /// A claim's reply builds its question from the claimer's snapshot rather than from the
    /// stored JSON: the two must be the same question, with the resolution taken from what the
    /// claimer sent when the store kept it, and parsed when another claim's won.
    #[test]
    fn a_claimed_question_from_its_snapshot_is_the_stored_one() {
        let snapshot = which_library();
        let (status, ours) = snapshot.expiry_resolution(Millis(2_000));
        let (_, theirs) = snapshot.expiry_resolution(Millis(3_000));
        let (ours_json, theirs_json) = (
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap(),
        );
        for stored in [&ours_json, &theirs_json] {
            let from_store = assemble(
                &asked_and_frame(&snapshot).0,
                status.as_str(),
                Some(stored),
                None,
            )
            .unwrap();
            let mut from_snapshot = snapshot.clone();
            set_outcome(
                &mut from_snapshot,
                status.as_str(),
                Some(stored),
                &[(&ours_json, &ours)],
            )
            .unwrap();
            assert_eq!(from_snapshot, from_store);
        }
        assert_eq!(
            assemble(
                &asked_and_frame(&snapshot).0,
                "answered",
                Some(&theirs_json),
                None
            )
            .unwrap()
            .resolution,
            Some(theirs)
        );
        assert!(set_outcome(&mut snapshot.clone(), "gone", None, &[]).is_err());
    }
}
