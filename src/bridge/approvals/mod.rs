//! Approvals: who may approve, "always allow" rules, and the audit trail.
//!
//! Deny by default: an approval that names no approvers gets `ASKBRIDGE_APPROVERS`, and with
//! neither it is refused at creation rather than shown to people none of whom may answer. Showing
//! an approval in a group makes nobody an approver ([`Question::may_answer`]).
//!
//! "Always allow" creates a rule bound to the approved action (tool and exact arguments) for the
//! session, or everywhere when the approver says so; whether a resolution creates one is decided
//! once, by the state machine ([`askbridge_core::Resolution::rule_to_create`]). A new approval a
//! rule matches is allowed at once without being shown, and pending approvals a new rule matches
//! are allowed too; both are resolved by [`Decider::Rule`], recorded as `by rule:<id> via rule`.

use crate::bridge::roles::ApprovalRoles;
use crate::bridge::{Bridge, EFFECT_RULE, SETTLE_GRACE};
use crate::store::{ClaimOptions, Error as StoreError, ListFilter};
use crate::{AskError, Error, NoAnswer};
use askbridge_core::audit::{AuditEntry, AuditEvent, AuditFilter};
use askbridge_core::{
    Action, Actor, Answer, Approval, ApprovalReply, Claim, Decider, Decision, Identity, Kind,
    Millis, NewQuestion, Question, QuestionId, Rule, RuleId, Scope, Status, Transition,
};

mod batch;

pub use batch::outcomes_of;

/// What the function that asked for approval gets.
pub fn approval_of(question: &Question) -> Result<Approval, AskError> {
    let digest = question
        .action
        .as_ref()
        .map(Action::digest)
        .unwrap_or_default();
    let resolution = question.resolution.as_ref();
    let by = resolution.map_or_else(|| Identity::new(""), |r| r.by());
    decide(
        &question.id,
        Decided {
            status: question.status,
            value: resolution.and_then(|r| r.value.as_ref()),
            message: resolution.and_then(|r| r.message.clone()),
            by: &by,
            rule_id: resolution.and_then(|r| r.rule_id.clone()),
            digest,
            edited: resolution.and_then(|r| r.edited.as_ref().map(|e| e.approved.clone())),
        },
    )
}

/// A resolved approval's parts, as a question or a run's journal keeps them.
#[derive(Debug)]
pub struct Decided<'a> {
    /// How it ended.
    pub status: Status,
    /// Its answer (`once`, `always ...`, `edit`, `respond`).
    pub value: Option<&'a Answer>,
    /// A rejection's feedback, or a response's text.
    pub message: Option<String>,
    /// Who decided (`rule:<id>` for a rule).
    pub by: &'a Identity,
    /// The rule an "always" created.
    pub rule_id: Option<RuleId>,
    /// The proposed action's digest.
    pub digest: String,
    /// The action as approved, when it was edited.
    pub edited: Option<Action>,
}

/// The approval (or refusal) a resolved approval question amounts to. Shared by waiting callers
/// and by flows replaying their journal, so both read an approval the same way. `by` tells a
/// rule's decision (`rule:<id>`) from a person's.
pub fn decide(id: &QuestionId, decided: Decided<'_>) -> Result<Approval, AskError> {
    let Decided {
        status,
        value,
        message,
        by,
        rule_id,
        digest,
        edited,
    } = decided;
    match status {
        Status::Answered | Status::Expired => {
            let Some(value) = value else {
                return Err(NoAnswer::Timeout { id: id.clone() }.into());
            };
            if let Some(rule_id) = by.rule() {
                return Ok(Approval::ByRule { rule_id, digest });
            }
            let corrupt = || {
                Err(Error::from(StoreError::corrupt(
                    format!("approval {id}"),
                    format!("the unexpected answer `{value}`"),
                ))
                .into())
            };
            match (ApprovalReply::of_answer(value), value) {
                (Some(ApprovalReply::Once), _) => Ok(Approval::Once { digest }),
                (Some(ApprovalReply::AlwaysInSession | ApprovalReply::AlwaysEverywhere), _) => {
                    Ok(Approval::Always {
                        rule_id: rule_id.unwrap_or_else(|| RuleId::for_question(id)),
                        digest,
                    })
                }
                (None, Answer::Text(word)) if word == Decision::Edit.as_str() => match edited {
                    Some(action) => Ok(Approval::Edited {
                        action,
                        proposed_digest: digest,
                    }),
                    None => corrupt(),
                },
                (None, Answer::Text(word)) if word == Decision::Respond.as_str() => {
                    Ok(Approval::Responded {
                        text: message.unwrap_or_default(),
                    })
                }
                (None, _) => corrupt(),
            }
        }
        Status::Declined => Err(NoAnswer::Declined { message }.into()),
        Status::Cancelled => Err(NoAnswer::Cancelled { id: id.clone() }.into()),
        Status::Pending => Err(NoAnswer::Timeout { id: id.clone() }.into()),
    }
}

/// Does `rule` decide `question` (about `action`)? It must match the action in its scope, and its
/// creator must be one who may approve this question: a rule never lets one approver decide for
/// another's approvals.
///
/// An approval with a quorum is decided only by a rule a quorum at least as large made: one
/// person's "always" never stands in for several people's votes.
fn decides(rule: &Rule, question: &Question, action: &Action) -> bool {
    let quorum_kept = question
        .quorum
        .as_ref()
        .is_none_or(|q| rule.quorum >= q.needs);
    quorum_kept
        && rule.matches(&question.session_id, action)
        && question.answerers.contains(&rule.created_by)
}

/// The rule an "always" on `question` creates for `action` (for the session, or `everywhere`),
/// `made` as its id, creator and time.
fn rule_of(
    question: &Question,
    action: &Action,
    everywhere: bool,
    (id, created_by, created_at): (RuleId, Identity, Millis),
) -> Rule {
    let scope = if everywhere {
        Scope::Everywhere
    } else {
        Scope::Session {
            session_id: question.session_id.clone(),
        }
    };
    Rule {
        id,
        action: action.clone(),
        scope,
        created_by,
        created_at,
        question_id: Some(question.id.clone()),
        quorum: question.quorum.as_ref().map_or(0, |q| q.needs),
    }
}

/// The approvals' part of the bridge: see the module documentation.
pub(super) struct Approvals {
    store: ApprovalRoles,
}

impl Approvals {
    pub(super) fn new(store: ApprovalRoles) -> Self {
        Approvals { store }
    }

    /// Gives an approval without approvers the configured ones; refuses one with none.
    pub(super) fn name_approvers(
        &self,
        bridge: &Bridge,
        request: &mut NewQuestion,
    ) -> Result<(), Error> {
        if request.kind != Kind::Approval {
            return Ok(());
        }
        let configured = &bridge.options().approvers;
        if let Some(quorum) = &request.quorum {
            // A quorum's members are its approvers: each must be one when approvers are set.
            self.all_approvers(bridge, "quorum", &quorum.of)?;
            request.answerers = quorum.of.clone();
            return Ok(());
        }
        let invalid = |reason: &str| {
            Err(Error::from(askbridge_core::Error::Invalid {
                field: "answerers",
                reason: reason.to_owned(),
            }))
        };
        if !request.answerers.is_empty() {
            if configured.is_empty() {
                return Ok(());
            }
            // With approvers configured, a caller cannot name others (say, itself).
            request.answerers.retain(|a| configured.contains(a));
            if request.answerers.is_empty() {
                return invalid("none of these answerers is among ASKBRIDGE_APPROVERS");
            }
            return Ok(());
        }
        if configured.is_empty() {
            return invalid(
                "an approval needs approvers: list them in answerers, or set ASKBRIDGE_APPROVERS",
            );
        }
        request.answerers = configured.clone();
        Ok(())
    }

    /// Refuses (naming `field`) the first of `people` who is not among `ASKBRIDGE_APPROVERS`,
    /// when approvers are configured: nobody else may approve, whatever a request names.
    pub(super) fn all_approvers<'a>(
        &self,
        bridge: &Bridge,
        field: &'static str,
        people: impl IntoIterator<Item = &'a Identity>,
    ) -> Result<(), Error> {
        let configured = &bridge.options().approvers;
        if configured.is_empty() {
            return Ok(());
        }
        match people.into_iter().find(|who| !configured.contains(who)) {
            None => Ok(()),
            Some(who) => Err(askbridge_core::Error::Invalid {
                field,
                reason: format!("{who} is not among ASKBRIDGE_APPROVERS, so cannot approve"),
            }
            .into()),
        }
    }

    /// Allows a new approval at once when a rule matches it. Returns the resolved question then
    /// (for a batch, the actions rules decide; it stays pending while others are undecided).
    ///
    /// Every ask comes here, and only an approval or a batch searches: the searches are boxed,
    /// so that this future stays small (inline they were 4 KB of an ask's 10, and the HTTP
    /// handler moves the whole of it).
    pub(super) async fn allow_by_rule(
        &self,
        bridge: &Bridge,
        question: &Question,
    ) -> Result<Option<Question>, Error> {
        if question.is_batch() {
            return Box::pin(self.decide_batch_by_rules(bridge, question)).await;
        }
        let Some(action) = question
            .action
            .as_ref()
            .filter(|_| question.kind == Kind::Approval)
        else {
            return Ok(None);
        };
        Box::pin(self.allow_action_by_rule(bridge, question, action)).await
    }

    /// [`Approvals::allow_by_rule`] for an approval of one action.
    async fn allow_action_by_rule(
        &self,
        bridge: &Bridge,
        question: &Question,
        action: &Action,
    ) -> Result<Option<Question>, Error> {
        let rules = self
            .store
            .rules
            .rules_for(&action.digest(), &question.session_id)
            .await?;
        let Some(rule) = rules.iter().find(|rule| decides(rule, question, action)) else {
            return Ok(None);
        };
        self.allow_with(bridge, question, rule).await.map(Some)
    }

    async fn allow_with(
        &self,
        bridge: &Bridge,
        question: &Question,
        rule: &Rule,
    ) -> Result<Question, Error> {
        tracing::info!(question_id = %question.id, rule_id = %rule.id, "approval allowed by rule");
        let claim = Claim::new(
            Transition::Answer {
                value: ApprovalReply::Once.into(),
            },
            Decider::Rule(rule.id.clone()),
            Millis::now(),
        );
        // Straight to the store, not through `Bridge::claim` (which may create a rule and so
        // come back here): a rule's decision creates no rule, so its effects can run later.
        let Some(claimed) = self
            .store
            .questions
            .claim(question, &claim, ClaimOptions::new(SETTLE_GRACE))
            .await?
        else {
            return Err(Error::NotFound(question.id.clone()));
        };
        let resolved = claimed.question.clone();
        if resolved
            .resolution
            .as_ref()
            .is_some_and(|r| r.decider.rule().is_some())
        {
            bridge
                .effects()
                .after_win(bridge, claimed, None)
                .let_run()
                .await;
        }
        Ok(resolved)
    }

    /// The effect of an approval answered "always": the rule, then the pending approvals it
    /// matches; recorded as done. For a batch, a rule per action decided "always". Idempotent
    /// (a rule's id comes from the question, and the action's number).
    pub(super) async fn create_rule_now(
        &self,
        bridge: &Bridge,
        question: &Question,
    ) -> Result<(), Error> {
        let rules = if question.is_batch() {
            batch::rules_of(question)
        } else {
            let (Some(action), Some(resolution)) = (&question.action, &question.resolution) else {
                return Ok(());
            };
            let Some(rule_id) = resolution.rule_to_create() else {
                return Ok(());
            };
            let reply = resolution.value.as_ref().and_then(ApprovalReply::of_answer);
            let everywhere = reply == Some(ApprovalReply::AlwaysEverywhere);
            let made = (rule_id.clone(), resolution.by(), resolution.at);
            vec![rule_of(question, action, everywhere, made)]
        };
        for rule in &rules {
            self.record_rule(bridge, question, rule).await?;
        }
        self.store
            .outbox
            .mark_effect(&question.id, EFFECT_RULE)
            .await?;
        Ok(())
    }

    /// Stores `rule`, made by `question`'s resolution, records it in the audit trail, and
    /// allows the pending approvals it decides.
    async fn record_rule(
        &self,
        bridge: &Bridge,
        question: &Question,
        rule: &Rule,
    ) -> Result<(), Error> {
        self.store.rules.put_rule(rule).await?;
        let mut entry = AuditEntry::resolved(question);
        entry.event = AuditEvent::RuleCreated;
        entry.message = Some(rule.describe());
        self.store.audit.append_audit(&entry).await?;
        tracing::info!(rule = %rule.describe(), "rule created");
        // The pending approvals it may decide: its session's, or every pending question for a
        // rule that applies everywhere (rare: a person chose "always, everywhere").
        let session_id = match &rule.scope {
            Scope::Session { session_id } => Some(session_id.clone()),
            Scope::Everywhere => None,
        };
        let pending = bridge
            .list(&ListFilter {
                limit: usize::MAX,
                session_id,
                ..ListFilter::pending()
            })
            .await?;
        for other in pending.iter().filter(|q| q.kind == Kind::Approval) {
            if other.is_batch() {
                // Its actions the rules now decide (this one among them).
                self.decide_batch_by_rules(bridge, other).await?;
            } else if other
                .action
                .as_ref()
                .is_some_and(|a| decides(rule, other, a))
            {
                self.allow_with(bridge, other, rule).await?;
            }
        }
        Ok(())
    }

    /// Every "always allow" rule.
    pub(super) async fn rules(&self) -> Result<Vec<Rule>, Error> {
        let mut rules = self.store.rules.rules().await?;
        rules.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(rules)
    }

    /// Revokes a rule on behalf of `actor`; the audit trail records it, with the rule's scope
    /// and action.
    pub(super) async fn revoke_rule(&self, id: &RuleId, actor: &Actor) -> Result<(), Error> {
        let Some(rule) = self.store.rules.delete_rule(id).await? else {
            return Err(Error::UnknownRule(id.to_string()));
        };
        let mut entry = AuditEntry::refused(&actor.by, &actor.via, None, None, "");
        entry.event = AuditEvent::RuleRevoked;
        entry.rule_id = Some(id.clone());
        entry.session_id = match &rule.scope {
            Scope::Session { session_id } => Some(session_id.clone()),
            Scope::Everywhere => None,
        };
        entry.digest = Some(rule.action.digest());
        entry.message = Some(rule.describe());
        self.store.audit.append_audit(&entry).await?;
        tracing::info!(rule_id = %id, by = %actor.by, "rule revoked");
        Ok(())
    }

    /// Audit records passing `filter`.
    pub(super) async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        Ok(self.store.audit.audit(filter).await?)
    }
}

/// True when the rule an "always" answer creates is known to exist.
pub(super) fn rule_done(done: &[String]) -> bool {
    done.iter().any(|e| e == EFFECT_RULE)
}
