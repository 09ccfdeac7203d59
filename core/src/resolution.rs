//! How a question left `pending`: its [`Resolution`], as stored and sent.
//!
//! Apart from [`crate::question`] so that the question module stays about the question and its
//! state machine; a resolution needs only the answer, the decider and the rule id.

use crate::actions::Entry;
use crate::actor::{Decider, WireDecider};
use crate::approval::Edited;
use crate::id::RuleId;
use crate::identity::Identity;
use crate::quorum::Vote;
use crate::time::Millis;
use crate::value::Answer;
use serde::{Deserialize, Serialize};

/// How a question left `pending`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ResolutionWire", from = "ResolutionWire")]
pub struct Resolution {
    /// The answer (for `expired`, the default if there was one).
    pub value: Option<Answer>,
    /// Who decided: a person or program, a rule, or the deadline. Sent and stored as the
    /// `by`, `by_name` and `via` strings ([`Decider::wire`]).
    pub decider: Decider,
    /// When.
    pub at: Millis,
    /// A decline's (or cancel's) message; an approval's response (its answer `respond`).
    pub message: Option<String>,
    /// For approvals: the rule that allowed it, or that its "always" created.
    pub rule_id: Option<RuleId>,
    /// On a question with a quorum: every vote cast (who, when, through which surface).
    pub votes: Vec<Vote>,
    /// An approval edited before it was allowed: the proposed action and the one approved.
    pub edited: Option<Edited>,
    /// A batch's decisions, one per action decided, in order ([`crate::batch`]).
    pub decisions: Vec<Entry>,
}

impl Resolution {
    /// The identity that resolved it (`telegram:42`, `console`, `api`, `rule:<id>`, `askbridge`).
    pub fn by(&self) -> Identity {
        self.decider.wire().by
    }

    /// A human name for [`Resolution::by`], when the surface knows one (`@alice`).
    pub fn by_name(&self) -> Option<&str> {
        self.decider.actor().and_then(|a| a.by_name.as_deref())
    }

    /// The surface it came through (`telegram`, `api`, `rule`, `timeout` ...).
    pub fn via(&self) -> String {
        self.decider.wire().via
    }

    /// The rule this resolution creates: an approval's "always", answered by a person (a rule's
    /// own decision creates nothing). Decided once, by [`crate::Question::apply`].
    pub fn rule_to_create(&self) -> Option<&RuleId> {
        self.decider.actor().and(self.rule_id.as_ref())
    }

    /// A batch's "always" decisions made by people: each creates a rule.
    pub fn batch_rules(&self) -> impl Iterator<Item = &Entry> {
        self.decisions
            .iter()
            .filter(|e| e.decision == crate::Decision::Always && !e.by_rule)
    }

    /// True when this resolution creates a rule (or, for a batch, rules).
    pub fn creates_rules(&self) -> bool {
        self.rule_to_create().is_some() || self.batch_rules().next().is_some()
    }
}

/// [`Resolution`] as stored and sent, field for field as it has always been.
#[derive(Serialize, Deserialize)]
struct ResolutionWire {
    value: Option<Answer>,
    by: Identity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by_name: Option<String>,
    via: String,
    at: Millis,
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rule_id: Option<RuleId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    votes: Vec<Vote>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edited: Option<Edited>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    decisions: Vec<Entry>,
}

impl From<Resolution> for ResolutionWire {
    fn from(resolution: Resolution) -> Self {
        let WireDecider { by, by_name, via } = resolution.decider.wire();
        ResolutionWire {
            value: resolution.value,
            by,
            by_name,
            via,
            at: resolution.at,
            message: resolution.message,
            rule_id: resolution.rule_id,
            votes: resolution.votes,
            edited: resolution.edited,
            decisions: resolution.decisions,
        }
    }
}

impl From<ResolutionWire> for Resolution {
    fn from(wire: ResolutionWire) -> Self {
        Resolution {
            value: wire.value,
            decider: Decider::from_wire(WireDecider {
                by: wire.by,
                by_name: wire.by_name,
                via: wire.via,
            }),
            at: wire.at,
            message: wire.message,
            rule_id: wire.rule_id,
            votes: wire.votes,
            edited: wire.edited,
            decisions: wire.decisions,
        }
    }
}
