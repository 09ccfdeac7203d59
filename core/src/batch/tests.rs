use super::*;
use crate::actor::Actor;
use crate::id::QuestionId;
use crate::question::DEFAULT_TIMEOUT;
use crate::request::NewQuestion;
use crate::value::Answer;
use serde_json::Value;
use serde_json::json;

pub(crate) fn item(tool: &str, args: Value, allowed: &[Decision]) -> BatchAction {
    BatchAction {
        allowed: allowed.to_vec(),
        ..BatchAction::new(Action::new(tool, args))
    }
}

pub(crate) fn batch() -> Question {
    NewQuestion::ask("The agent proposes 3 actions")
        .session("s")
        .approve_all([
            item("shell", json!({"command": "make"}), &[]),
            item(
                "deploy",
                json!({"replicas": 2}),
                &[Decision::Once, Decision::Edit, Decision::Reject],
            ),
            item("rm", json!({"path": "/tmp/x"}), &[Decision::Reject]),
        ])
        .into_question(QuestionId::random(), Millis(1_000), DEFAULT_TIMEOUT)
        .unwrap()
}

pub(crate) fn choices(q: &Question, raw: &str) -> Result<Vec<Choice>, Error> {
    match q.read_typed(raw)? {
        Transition::Decide { choices } => Ok(choices),
        other => panic!("{other:?}"),
    }
}

fn decide(q: &mut Question, raw: &str, at: u64) -> DecideOutcome {
    let choices = choices(q, raw).unwrap();
    let decider = Decider::Actor(Actor::new("telegram:42", "telegram"));
    let entries = q.entries_of(&choices, &decider, Millis(at));
    apply_decisions(q, &entries)
}

#[test]
fn a_batch_is_checked_numbered_and_bound_to_one_digest() {
    let q = batch();
    assert_eq!(q.actions.iter().map(|a| a.n).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(q.actions[0].allowed, crate::decision::DEFAULT_DECISIONS);
    let digest = q.batch_digest.clone().unwrap();
    assert_eq!(digest.len(), 16);
    let mut other = batch();
    other.actions[2].action.args = json!({"path": "/"});
    assert_ne!(digest, digest_of(&other));
    let json = serde_json::to_value(&q).unwrap();
    assert_eq!(json["digest"], digest);
    assert_eq!(json["actions"][1]["n"], 2);
    assert_eq!(json["actions"][1]["digest"], q.actions[1].action.digest());
    let back: Question = serde_json::from_value(json).unwrap();
    assert_eq!(back, q);
    let refused = |request: NewQuestion| match request.into_question(
        QuestionId::random(),
        Millis(0),
        DEFAULT_TIMEOUT,
    ) {
        Err(Error::Invalid { field, reason }) => format!("{field}: {reason}"),
        other => panic!("{other:?}"),
    };
    let many = NewQuestion::ask("x").session("s");
    let many = many.approve_all(vec![item("x", json!({}), &[]); 21]);
    assert!(refused(many).starts_with("actions: name 1 to 20 actions"));
    let both = NewQuestion::ask("x")
        .session("s")
        .approve(Action::new("x", json!({})))
        .approve_all([item("y", json!({}), &[])]);
    assert_eq!(
        refused(both),
        "actions: give either action or actions, not both"
    );
    let bad_schema = NewQuestion::ask("x")
        .session("s")
        .approve_all([BatchAction {
            args_schema: Some(json!(3)),
            ..item("y", json!({}), &[])
        }]);
    assert_eq!(
        refused(bad_schema),
        "actions: action 1: args_schema must be a JSON Schema object"
    );
}

fn digest_of(q: &Question) -> String {
    digest(&q.actions)
}

#[test]
fn each_action_is_decided_once_and_the_last_completes_the_batch() {
    let mut q = batch();
    let short = q.batch_short_digest();
    assert_eq!(
        decide(&mut q, &format!("1 once #{short}"), 2_000),
        DecideOutcome::Recorded
    );
    let Err(Error::AlreadyDecided { action: 1, reason }) = choices(&q, "1 reject") else {
        panic!()
    };
    assert!(
        reason.starts_with("Action 1 was decided already (once by"),
        "{reason}"
    );
    let Err(Error::NotFit { reason }) = choices(&q, "3 once") else {
        panic!()
    };
    assert!(
        reason.starts_with("Action 3 does not offer \"once\"; choose reject."),
        "{reason}"
    );
    let Err(Error::Argument { field, .. }) = choices(&q, r#"2 edit {"replicas": "x"}"#) else {
        panic!()
    };
    assert_eq!(field, "action 2 args.replicas");
    assert!(matches!(
        choices(&q, "1 once #00000000"),
        Err(Error::NotFit { .. })
    ));
    assert!(matches!(choices(&q, "4 once"), Err(Error::NotFit { .. })));
    assert_eq!(
        decide(&mut q, r#"2 edit {"replicas": 3}"#, 3_000),
        DecideOutcome::Recorded
    );
    assert!(completing_claim(&q).is_none());
    assert_eq!(
        decide(&mut q, "all reject too broad", 4_000),
        DecideOutcome::Complete
    );
    let claim = completing_claim(&q).unwrap();
    assert_eq!(q.apply(&claim), crate::ClaimOutcome::Won);
    let resolution = q.resolution.as_ref().unwrap();
    assert_eq!(
        resolution.value,
        Some(Answer::List(vec![
            "once".into(),
            "edit".into(),
            "reject".into()
        ]))
    );
    let d = &resolution.decisions;
    assert_eq!(d[1].args, Some(json!({"replicas": 3})));
    assert_eq!(d[1].proposed_args, Some(json!({"replicas": 2})));
    assert_eq!(d[2].message.as_deref(), Some("too broad"));
    assert!(!resolution.creates_rules());
}

#[test]
fn the_first_decision_on_an_action_wins_all_or_nothing() {
    let mut q = batch();
    let decider = Decider::Actor(Actor::new("api", "api"));
    let one = choices(&q, "1 once").unwrap();
    let three = choices(&q, "3 reject").unwrap();
    let first = q.entries_of(&one, &decider, Millis(2));
    assert_eq!(apply_decisions(&mut q, &first), DecideOutcome::Recorded);
    let both: Vec<Entry> = q.entries_of(&[three[0].clone(), one[0].clone()], &decider, Millis(3));
    let before = q.clone();
    assert_eq!(apply_decisions(&mut q, &both), DecideOutcome::Decided(1));
    assert_eq!(q, before, "nothing changed");
}

#[test]
fn every_button_of_twenty_actions_fits_telegram_and_reads_back() {
    let all = crate::decision::ALL_DECISIONS;
    let q = NewQuestion::ask("x")
        .session("s")
        .approve_all((0..MAX_ACTIONS).map(|i| item("shell", json!({"i": i}), &all)))
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap();
    let buttons = super::render::buttons(&q);
    assert_eq!(buttons.len(), MAX_ACTIONS * 5 + 2);
    for button in buttons {
        assert!(
            button.payload.len() <= 64,
            "{} is {} bytes",
            button.payload,
            button.payload.len()
        );
        let line = crate::command::CommandLine::parse(&button.payload)
            .unwrap()
            .unwrap();
        let crate::command::Command::Answer(answer) = line.command else {
            panic!("{}", button.payload)
        };
        match q.read_typed(&answer.choice) {
            Ok(_) => {}
            // Edit and Respond ask for the words that go with them.
            Err(Error::NotFit { reason })
                if reason.contains(" edit {") || reason.contains("respond <") => {}
            Err(other) => panic!("{}: {other}", button.payload),
        }
    }
}

#[test]
fn a_batch_reads_as_a_numbered_list_with_its_decisions() {
    let mut q = batch();
    decide(&mut q, "3 reject too broad", 2);
    let text = format!(
        "{}\n{}",
        super::render::block(&q, None),
        super::render::hint(&q)
    );
    assert!(text.contains("3 actions (digest "), "{text}");
    assert!(
        text.contains("\n1. shell\n   command: make\n   (undecided: once, always or reject)"),
        "{text}"
    );
    assert!(
        text.contains("\n3. rm\n   path: /tmp/x\n   🚫 rejected: too broad (by telegram:42)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("/answer {} all once", q.id)),
        "{text}"
    );
    let labels: Vec<String> = super::render::buttons(&q)
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(
        labels,
        [
            "1: Allow",
            "1: Always",
            "1: Reject",
            "2: Allow",
            "2: Edit",
            "2: Reject",
            "Approve all",
            "Reject all"
        ]
    );
}
