//! The differential test: one table of generated cases run through core's rules and through
//! every store (memory, embedded, Redis, Redis Cluster), failing on any disagreement.
//!
//! A store makes core's rules atomic: the memory and embedded stores by calling them (the claim's
//! steps are `store/claim.rs`), Redis by a Lua copy of what must run inside a script (a
//! question still pending, a run still parked on it, a vote not yet cast, a run's lease run out,
//! a claim finishing at once). A copy is a second place for a rule to be wrong, so every case is
//! decided here by core (`Question::apply`, `Run::acquire`, `Run::still_waits_on`,
//! `tally::apply_vote`, `Claimed::idle`) and each store must answer the same: claims (statuses,
//! deadlines, a question resolved already, runs parked, busy or elsewhere, carried ahead as they
//! were or not, shown or not), votes (sequences of voters and tallies) and run leases (states,
//! lease ends, why).

use crate::store_conformance::{Fixture, cluster, embedded, memory, options, redis};
use askbridge::store::{AheadRun, ClaimOptions, Claimed, Shown, TakeRun, Work};
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::quorum::Vote;
use askbridge_core::run::{Acquire, Origin, Run, RunState};
use askbridge_core::tally;
use askbridge_core::{
    Actor, Answer, Claim, ClaimOutcome, Millis, NewQuestion, Question, QuestionId, Transition,
};
use std::time::Duration;

const SETTLE: Duration = Duration::from_secs(10);
const LEASE: Millis = Millis(4_000_000_000_000);

/// Every store, each with a name for the failure message.
async fn stores(test: &str) -> Vec<(&'static str, Fixture)> {
    vec![
        ("memory", memory(options(test)).await),
        ("embedded", embedded(options(test)).await),
        ("redis", redis(options(test)).await),
        (
            "redis cluster",
            cluster(options(test), &format!("rules::{test}")).await,
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Claims.

/// The run a claimed question has, if any, and how it stands when the claim comes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RunCase {
    None,
    /// Parked on the question, nobody executing it.
    Parked,
    /// Taken by another process already (running).
    Busy,
    /// Parked on another question.
    Elsewhere,
}

/// What the claimer carried the run ahead to, if anything.
#[derive(Clone, Copy, Debug, PartialEq)]
enum AheadCase {
    None,
    /// As the run is stored.
    AsStored,
    /// From an older state of the run.
    Stale,
    /// To a next question whose id is taken.
    NextTaken,
}

#[derive(Clone, Debug)]
struct ClaimCase {
    resolved_before: bool,
    transition: Transition,
    late: bool,
    run: RunCase,
    take: bool,
    ahead: AheadCase,
    shown: bool,
    finish_when_idle: bool,
}

fn transitions() -> Vec<Transition> {
    vec![
        Transition::Answer {
            value: Answer::Text("yes".into()),
        },
        Transition::Decline {
            message: Some("no".into()),
        },
        Transition::Cancel { reason: None },
        Transition::Expire,
    ]
}

/// The table: every combination that means something (the run cases with a run to take, ahead
/// only with a parked run taken).
fn claim_cases() -> Vec<ClaimCase> {
    let runs = [
        (RunCase::None, false, AheadCase::None),
        (RunCase::None, true, AheadCase::None),
        (RunCase::Parked, false, AheadCase::None),
        (RunCase::Parked, true, AheadCase::None),
        (RunCase::Parked, true, AheadCase::AsStored),
        (RunCase::Parked, true, AheadCase::Stale),
        (RunCase::Parked, true, AheadCase::NextTaken),
        (RunCase::Busy, true, AheadCase::AsStored),
        (RunCase::Elsewhere, true, AheadCase::None),
    ];
    let mut cases = Vec::new();
    for resolved_before in [false, true] {
        for transition in transitions() {
            for late in [false, true] {
                for (run, take, ahead) in runs {
                    for shown in [false, true] {
                        for finish_when_idle in [false, true] {
                            cases.push(ClaimCase {
                                resolved_before,
                                transition: transition.clone(),
                                late,
                                run,
                                take,
                                ahead,
                                shown,
                                finish_when_idle,
                            });
                        }
                    }
                }
            }
        }
    }
    cases
}

fn new_run() -> Run {
    let origin = Origin {
        chat: None,
        user: "chat:7".into(),
        user_name: None,
    };
    let now = Millis::now();
    Run::new("deploy", "staging", origin, "p1", now, now.after(SETTLE))
}

fn asked(id: QuestionId, text: &str, session: &str) -> Question {
    NewQuestion::ask(text)
        .session(session)
        .into_question(id, Millis::now(), DEFAULT_TIMEOUT)
        .unwrap()
}

fn parked_on(run: &Run, question: &QuestionId, at: Millis) -> Run {
    let mut parked = run.clone();
    parked.park_on(question.clone(), at);
    parked
}

/// What a claim found and did, as compared: the outcome, the question's status and resolution,
/// the run taken, whether it finished and carried the run ahead, and afterwards the stored
/// question's state, the stored run and whether the next question is stored.
type Seen = (
    ClaimOutcome,
    String,
    Option<askbridge_core::Resolution>,
    Option<Run>,
    bool,
    bool,
    (String, Option<Run>, bool),
);

fn seen_of(claimed: &Claimed, after: (String, Option<Run>, bool)) -> Seen {
    (
        claimed.outcome,
        claimed.question.status.as_str().to_owned(),
        claimed.question.resolution.clone(),
        claimed.run.clone(),
        claimed.finished,
        claimed.ahead,
        after,
    )
}

/// A claim case set up in a store: the question (resolved before when the case says so, shown
/// when it says so), the same question as core sees it, and its run as stored.
struct SetUp {
    question: Question,
    model: Question,
    stored_run: Option<Run>,
    started: Run,
}

async fn set_up(f: &Fixture, case: &ClaimCase) -> SetUp {
    let store = &f.store;
    let started = new_run();
    let mut question = asked(started.question_id(0), "Go?", &started.session_id());
    let mut stored_run = None;
    if case.run != RunCase::None {
        question.run_id = Some(started.id.clone());
        let waits_on = match case.run {
            RunCase::Elsewhere => started.question_id(5),
            _ => question.id.clone(),
        };
        let parked = parked_on(&started, &waits_on, started.updated_at);
        store
            .insert_parked(&started, &parked, "p1", &question)
            .await
            .unwrap();
        let mut run = parked;
        if case.run == RunCase::Busy {
            let why = Acquire::Answer(&question.id);
            run = store
                .acquire_run(&run.id, why, "other", Millis::now(), LEASE)
                .await
                .unwrap()
                .expect("taken by another");
        }
        stored_run = Some(run);
    } else {
        store.insert(&question).await.unwrap();
    }
    let mut model = question.clone();
    if case.resolved_before {
        let first = Claim::new(
            Transition::Cancel { reason: None },
            Actor::new("api", "test"),
            question.created_at.after(Duration::from_millis(1)),
        );
        model.apply(&first);
        let options = ClaimOptions::new(SETTLE);
        store.claim(&question, &first, options).await.unwrap();
    }
    if case.shown {
        let shown = Shown {
            target: "chat:1".into(),
            reference: "m1".into(),
        };
        store
            .record_shown(&question.id, &shown, Millis::now())
            .await
            .unwrap();
    }
    SetUp {
        question,
        model,
        stored_run,
        started,
    }
}

/// Sets `case` up in `f`, claims, and returns what the store answered beside what core says.
async fn run_claim_case(f: &Fixture, case: &ClaimCase) -> (Seen, Seen) {
    let store = &f.store;
    let SetUp {
        question,
        model,
        stored_run,
        started,
    } = set_up(f, case).await;
    let at = if case.late {
        question.expires_at.after(Duration::from_millis(1))
    } else {
        question.created_at.after(Duration::from_millis(2))
    };
    let claim = Claim::new(case.transition.clone(), Actor::new("chat:1", "test"), at);
    // The run carried ahead to its next question, as a claimer's process computes it.
    let mut next = asked(started.question_id(1), "And then?", &started.session_id());
    next.run_id = Some(started.id.clone());
    let carried = stored_run
        .as_ref()
        .map(|run| parked_on(run, &next.id, Millis(run.updated_at.0 + 1)));
    if case.ahead == AheadCase::NextTaken {
        store.insert(&next).await.unwrap();
    }
    let was = stored_run
        .as_ref()
        .map_or(Millis(0), |run| match case.ahead {
            AheadCase::Stale => Millis(run.updated_at.0 - 1),
            _ => run.updated_at,
        });
    let ahead = match (&carried, case.ahead) {
        (Some(run), AheadCase::AsStored | AheadCase::Stale | AheadCase::NextTaken) => {
            Some(AheadRun {
                was,
                run,
                next: &next,
            })
        }
        _ => None,
    };
    let options = ClaimOptions {
        take_run: case.take.then_some(TakeRun {
            owner: "p2",
            lease_until: LEASE,
        }),
        finish_when_idle: case.finish_when_idle,
        ahead,
        ..ClaimOptions::new(SETTLE)
    };
    let claimed = store
        .claim(&question, &claim, options)
        .await
        .unwrap()
        .expect("the question is stored");
    let stored = store.get(&question.id).await.unwrap().unwrap();
    let run_after = match &stored_run {
        Some(run) => store.get_run(&run.id).await.unwrap(),
        None => None,
    };
    let next_stored = store.get(&next.id).await.unwrap().is_some();
    let after = (stored.status.as_str().to_owned(), run_after, next_stored);
    let seen = seen_of(&claimed, after);
    let expected = core_claim(case, model, stored_run, &claim, &options);
    (seen, expected)
}

/// What core's rules say a claim does: `Question::apply`; then, resolved now, the run carried
/// ahead when it still waits as it was (`Run::still_waits_on`) and the next id is free, or else
/// taken (`Run::acquire`); finished at once when `Claimed::idle`.
fn core_claim(
    case: &ClaimCase,
    mut question: Question,
    stored_run: Option<Run>,
    claim: &Claim,
    options: &ClaimOptions<'_>,
) -> Seen {
    let outcome = question.apply(claim);
    let resolved_now = outcome != ClaimOutcome::AlreadyResolved;
    let mut run_after = stored_run.clone();
    let (mut taken, mut carried) = (None, false);
    if resolved_now {
        if let (ClaimOutcome::Won, Some(_), Some(ahead), Some(stored)) =
            (outcome, options.take_run, &options.ahead, &stored_run)
        {
            carried = stored.still_waits_on(&question.id, ahead.was)
                && case.ahead != AheadCase::NextTaken;
            if carried {
                run_after = Some(ahead.run.clone());
            }
        }
        if let (false, Some(take), Some(mut run)) = (carried, options.take_run, stored_run) {
            let why = Acquire::Answer(&question.id);
            if run.acquire(why, take.owner, claim.at, take.lease_until) {
                taken = Some(run.clone());
                run_after = Some(run);
            }
        }
    }
    let work = Work {
        shown: if case.shown {
            vec![Shown {
                target: "chat:1".into(),
                reference: "m1".into(),
            }]
        } else {
            Vec::new()
        },
        done: Vec::new(),
    };
    let finished =
        resolved_now && Claimed::idle(&question, &work, taken.is_some() || carried, options);
    let next_stored = carried || case.ahead == AheadCase::NextTaken;
    (
        outcome,
        question.status.as_str().to_owned(),
        question.resolution.clone(),
        taken,
        finished,
        carried,
        (question.status.as_str().to_owned(), run_after, next_stored),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_claims_as_core_decides() {
    let cases = claim_cases();
    let mut disagreements = Vec::new();
    for (name, f) in stores("claims").await {
        for case in &cases {
            let (seen, expected) = run_claim_case(&f, case).await;
            if seen != expected {
                disagreements.push(format!(
                    "{name}: {case:?}\n    store: {seen:?}\n    core:  {expected:?}"
                ));
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} claim cases disagree with core:\n{}",
        disagreements.len(),
        cases.len() * 4,
        disagreements.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Votes.

/// A sequence of votes: who votes and whether for the first answer, on a question needing
/// `needs` votes that agree, resolved before the votes or not.
#[derive(Debug)]
struct VoteCase {
    needs: u32,
    resolved: bool,
    ballots: Vec<(&'static str, bool)>,
}

/// Sequences of votes: who votes and which of two answers (votes agree when their answers do), on
/// a question needing `needs` of two voters, pending or resolved already.
fn vote_cases() -> Vec<VoteCase> {
    let ballots = [
        ("chat:1", true),
        ("chat:1", false),
        ("api", true),
        ("api", false),
    ];
    let mut cases = Vec::new();
    for needs in [1, 2] {
        for resolved in [false, true] {
            for a in ballots {
                for b in ballots {
                    for c in ballots {
                        if resolved && (needs == 1 || a != b) {
                            continue;
                        }
                        cases.push(VoteCase {
                            needs,
                            resolved,
                            ballots: vec![a, b, c],
                        });
                    }
                }
            }
        }
    }
    cases
}

fn vote_of(question: &Question, by: &str, first: bool) -> Vote {
    let choice = if first { "dayjs" } else { "luxon" };
    let claim = Claim::new(
        Transition::Answer {
            value: Answer::Text(choice.into()),
        },
        Actor::new(by, "test"),
        question.created_at.after(Duration::from_millis(1)),
    );
    tally::vote_of(question, &claim).expect("an answer to a question with a quorum is a vote")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_counts_votes_as_core_does() {
    let cases = vote_cases();
    let mut disagreements = Vec::new();
    for (name, f) in stores("votes").await {
        for VoteCase {
            needs,
            resolved,
            ballots,
        } in &cases
        {
            let question = NewQuestion::ask("Which library?")
                .session("s1")
                .options(["dayjs", "luxon"])
                .quorum(*needs, ["chat:1", "api"])
                .into_question(QuestionId::random(), Millis::now(), DEFAULT_TIMEOUT)
                .unwrap();
            f.store.insert(&question).await.unwrap();
            let mut model = question.clone();
            if *resolved {
                let cancel = Claim::new(
                    Transition::Cancel { reason: None },
                    Actor::new("api", "test"),
                    question.created_at,
                );
                model.apply(&cancel);
                let options = ClaimOptions::new(SETTLE);
                f.store.claim(&question, &cancel, options).await.unwrap();
            }
            for (by, yes) in ballots {
                let vote = vote_of(&question, by, *yes);
                let expected = tally::apply_vote(&mut model, &vote);
                let due = Millis::now();
                let (outcome, voted) = f.store.vote(&question, &vote, due).await.unwrap().unwrap();
                // A resolved question's votes are its resolution's; a store need not read them.
                let votes_agree = *resolved || voted.votes == model.votes;
                if outcome != expected || !votes_agree {
                    disagreements.push(format!(
                        "{name}: needs {needs}, resolved {resolved}, {ballots:?} at {by}/{yes}: \
                         store {outcome:?} {:?}, core {expected:?} {:?}",
                        voted.votes, model.votes
                    ));
                }
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "votes disagree with core:\n{}",
        disagreements.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Run leases.

/// How a run stands when someone wants to execute it.
fn lease_states() -> Vec<(RunState, bool, Option<i64>)> {
    let mut states = Vec::new();
    for state in [
        RunState::Waiting,
        RunState::Running,
        RunState::Done,
        RunState::Failed,
    ] {
        for reported in [false, true] {
            // The lease's end relative to now, in ms (none, run out, still held).
            for lease in [None, Some(-1_000), Some(60_000)] {
                states.push((state, reported, lease));
            }
        }
    }
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_takes_runs_as_core_does() {
    let mut disagreements = Vec::new();
    let mut count = 0;
    for (name, f) in stores("leases").await {
        for (state, reported, lease) in lease_states() {
            for why in ["answer", "other question", "recovery"] {
                count += 1;
                let now = Millis::now();
                let mut run = new_run();
                let question = run.question_id(0);
                run.state = state;
                run.reported = reported;
                run.waiting_on = (state == RunState::Waiting).then(|| question.clone());
                run.owner = (state != RunState::Waiting).then(|| "p1".to_owned());
                run.lease_until = lease.map(|ms| Millis(now.0.saturating_add_signed(ms)));
                f.store.insert_run(&run).await.unwrap();
                let stored = f.store.get_run(&run.id).await.unwrap().unwrap();
                let other = run.question_id(1);
                let acquire = match why {
                    "answer" => Acquire::Answer(&question),
                    "other question" => Acquire::Answer(&other),
                    _ => Acquire::Recovery,
                };
                let until = now.after(SETTLE);
                let mut model = stored.clone();
                let expected = model
                    .acquire(acquire, "p2", now, until)
                    .then(|| model.clone());
                let taken = f
                    .store
                    .acquire_run(&run.id, acquire, "p2", now, until)
                    .await
                    .unwrap();
                let after = f.store.get_run(&run.id).await.unwrap().unwrap();
                if taken != expected || after != model {
                    disagreements.push(format!(
                        "{name}: {state:?} reported {reported} lease {lease:?} for {why}: \
                         store {taken:?}, core {expected:?}"
                    ));
                }
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {count} lease cases disagree with core:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
