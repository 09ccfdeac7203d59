//! Approvals: who may approve, "always allow" rules, and the audit trail.
//!
//! Deny by default: an approval that names no approvers gets `ASKBRIDGE_APPROVERS`, and with
//! neither it is refused at creation rather than shown to people none of whom may answer. Showing
//! an approval in a group makes nobody an approver ([`Question::may_answer`]).
//!
//! "Always allow" creates a rule bound to the approved action (tool and exact arguments) for the
//! session, or everywhere when the approver says so. A new approval a rule matches is allowed at
//! once without being shown, and pending approvals a new rule matches are allowed too; both are
//! resolved `by rule:<id>` `via rule`, so the audit trail says which rule decided.

use super::Bridge;
use crate::Error;
use crate::store::ListFilter;
use askbridge_core::answer::{APPROVE_ALWAYS, APPROVE_ALWAYS_EVERYWHERE, APPROVE_ONCE};
use askbridge_core::audit::{AuditEntry, AuditEvent, AuditFilter};
use askbridge_core::{
    Action, Actor, Answer, Approval, Claim, Kind, Millis, NewQuestion, Question, Rule, Scope,
    Status, Transition,
};

/// The surface name of decisions made by rules.
pub(crate) const RULE_VIA: &str = "rule";

/// The id of the rule an "always" answer to `question` creates.
fn rule_id_for(question: &Question) -> String {
    format!("rule-{}", question.id)
}

/// The rule an answer creates, if it is an approval's "always".
pub(super) fn rule_created_by(question: &Question, transition: &Transition) -> Option<String> {
    match transition {
        Transition::Answer {
            value: Answer::Text(text),
        } if question.kind == Kind::Approval
            && (text == APPROVE_ALWAYS || text == APPROVE_ALWAYS_EVERYWHERE) =>
        {
            Some(rule_id_for(question))
        }
        _ => None,
    }
}

/// True for a person's "always" (which creates a rule), false for a rule's own decision.
pub(super) fn creates_rule(claim: &Claim) -> bool {
    claim.rule_id.is_some() && claim.actor.via != RULE_VIA
}

/// What the function that asked for approval gets.
pub fn approval_of(question: Question) -> Result<Approval, Error> {
    let digest = question
        .action
        .as_ref()
        .map(Action::digest)
        .unwrap_or_default();
    let resolution = question.resolution.clone();
    let (by, rule_id) = resolution
        .as_ref()
        .map_or((String::new(), None), |r| (r.by.clone(), r.rule_id.clone()));
    let value = resolution.as_ref().and_then(|r| r.value.clone());
    let message = resolution.and_then(|r| r.message);
    decide(
        &question.id.to_string(),
        question.status,
        value.as_ref(),
        message,
        &by,
        rule_id,
        digest,
    )
}

/// The approval (or refusal) a resolved approval question amounts to. Shared by waiting callers
/// and by flows replaying their journal, so both read an approval the same way.
pub(crate) fn decide(
    question_id: &str,
    status: Status,
    value: Option<&Answer>,
    message: Option<String>,
    by: &str,
    rule_id: Option<String>,
    digest: String,
) -> Result<Approval, Error> {
    let id = question_id.to_owned();
    match status {
        Status::Answered | Status::Expired => {
            let Some(value) = value else {
                return Err(Error::Timeout { id });
            };
            if let Some(rule) = by.strip_prefix("rule:") {
                return Ok(Approval::ByRule {
                    rule_id: rule.to_owned(),
                    digest,
                });
            }
            match value.to_string().as_str() {
                APPROVE_ONCE => Ok(Approval::Once { digest }),
                APPROVE_ALWAYS | APPROVE_ALWAYS_EVERYWHERE => Ok(Approval::Always {
                    rule_id: rule_id.unwrap_or_else(|| format!("rule-{id}")),
                    digest,
                }),
                other => Err(Error::Flow(format!(
                    "approval {id} has the unexpected answer `{other}`"
                ))),
            }
        }
        Status::Declined => Err(Error::Declined { message }),
        Status::Cancelled => Err(Error::Cancelled { id }),
        Status::Pending => Err(Error::Timeout { id }),
    }
}

/// Does `rule` decide `question` (about `action`)? It must match the action in its scope, and its
/// creator must be one who may approve this question: a rule never lets one approver decide for
/// another's approvals.
fn decides(rule: &Rule, question: &Question, action: &Action) -> bool {
    rule.matches(&question.session_id, action) && question.answerers.contains(&rule.created_by)
}

impl Bridge {
    /// Gives an approval without approvers the configured ones; refuses one with none.
    pub(super) fn name_approvers(&self, request: &mut NewQuestion) -> Result<(), Error> {
        if request.kind != Kind::Approval {
            return Ok(());
        }
        let configured = &self.options().approvers;
        if !request.answerers.is_empty() {
            if configured.is_empty() {
                return Ok(());
            }
            // With approvers configured, a caller cannot name others (say, itself).
            request.answerers.retain(|a| configured.contains(a));
            if request.answerers.is_empty() {
                return Err(askbridge_core::Error::Invalid {
                    field: "answerers",
                    reason: "none of these answerers is among ASKBRIDGE_APPROVERS".into(),
                }
                .into());
            }
            return Ok(());
        }
        if configured.is_empty() {
            return Err(askbridge_core::Error::Invalid {
                field: "answerers",
                reason: "an approval needs approvers: list them in answerers, or set ASKBRIDGE_APPROVERS".into(),
            }
            .into());
        }
        request.answerers = self.options().approvers.clone();
        Ok(())
    }

    /// Allows a new approval at once when a rule matches it. Returns the resolved question then.
    pub(super) async fn allow_by_rule(
        &self,
        question: &Question,
    ) -> Result<Option<Question>, Error> {
        let Some(action) = question
            .action
            .as_ref()
            .filter(|_| question.kind == Kind::Approval)
        else {
            return Ok(None);
        };
        let rules = self.store().rules().await?;
        let Some(rule) = rules.iter().find(|rule| decides(rule, question, action)) else {
            return Ok(None);
        };
        self.allow_with(question, rule).await.map(Some)
    }

    async fn allow_with(&self, question: &Question, rule: &Rule) -> Result<Question, Error> {
        tracing::info!(question_id = %question.id, rule_id = %rule.id, "approval allowed by rule");
        let mut claim = Claim::new(
            Transition::Answer {
                value: Answer::Text(APPROVE_ONCE.into()),
            },
            Actor::new(format!("rule:{}", rule.id), RULE_VIA),
            Millis::now(),
        );
        claim.rule_id = Some(rule.id.clone());
        // Straight to the store (not through `apply_claim`, which may settle inline and so
        // come back here): a rule's decision creates no rule, so its effects can run later.
        let Some((_, resolved)) = self.store().claim(question, &claim).await? else {
            return Err(Error::NotFound(question.id.to_string()));
        };
        if resolved
            .resolution
            .as_ref()
            .is_some_and(|r| r.via == RULE_VIA)
        {
            self.after_win(&resolved).await;
        }
        Ok(resolved)
    }

    /// The effect of an approval answered "always": the rule, then the pending approvals it
    /// matches. Idempotent (the rule's id comes from the question).
    pub(super) async fn create_rule(&self, question: &Question) -> Result<(), Error> {
        let (Some(action), Some(resolution)) = (&question.action, &question.resolution) else {
            return Ok(());
        };
        let Some(rule_id) = resolution
            .rule_id
            .clone()
            .filter(|_| resolution.via != RULE_VIA)
        else {
            return Ok(());
        };
        let everywhere = resolution.value == Some(Answer::Text(APPROVE_ALWAYS_EVERYWHERE.into()));
        let scope = if everywhere {
            Scope::Everywhere
        } else {
            Scope::Session {
                session_id: question.session_id.clone(),
            }
        };
        let rule = Rule {
            id: rule_id,
            action: action.clone(),
            scope,
            created_by: resolution.by.clone(),
            created_at: resolution.at,
            question_id: Some(question.id.to_string()),
        };
        self.store().put_rule(&rule).await?;
        let mut entry = AuditEntry::resolved(question);
        entry.event = AuditEvent::RuleCreated;
        entry.message = Some(rule.describe());
        self.store().append_audit(&entry).await?;
        tracing::info!(rule = %rule.describe(), "rule created");
        let pending = self
            .list(&ListFilter {
                limit: usize::MAX,
                ..ListFilter::pending()
            })
            .await?;
        for other in pending.iter().filter(|q| q.kind == Kind::Approval) {
            if other
                .action
                .as_ref()
                .is_some_and(|a| decides(&rule, other, a))
            {
                self.allow_with(other, &rule).await?;
            }
        }
        Ok(())
    }

    /// Every "always allow" rule.
    pub async fn rules(&self) -> Result<Vec<Rule>, Error> {
        let mut rules = self.store().rules().await?;
        rules.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(rules)
    }

    /// Revokes a rule on behalf of `actor`; the audit trail records it.
    pub async fn revoke_rule(&self, id: &str, actor: &Actor) -> Result<(), Error> {
        if !self.store().delete_rule(id).await? {
            return Err(Error::UnknownRule(id.to_owned()));
        }
        let mut entry = AuditEntry::refused(&actor.by, &actor.via, None, None, "");
        entry.event = AuditEvent::RuleRevoked;
        entry.rule_id = Some(id.to_owned());
        entry.message = None;
        self.store().append_audit(&entry).await?;
        tracing::info!(rule_id = id, by = %actor.by, "rule revoked");
        Ok(())
    }

    /// True when `identity` may manage rules from a chat.
    pub fn is_approver(&self, identity: &str) -> bool {
        self.options().approvers.iter().any(|a| a == identity)
    }

    /// Records a refused attempt to resolve a question (never failing the caller over it).
    pub async fn audit_refusal(
        &self,
        actor: &Actor,
        question_id: Option<String>,
        question: Option<&Question>,
        reason: &str,
    ) {
        // Looked up when only its full id is known, so the record carries the question's session.
        let looked_up = match (
            question,
            question_id
                .as_deref()
                .map(askbridge_core::QuestionId::parse),
        ) {
            (None, Some(Ok(id))) => self.store().get(&id).await.ok().flatten(),
            _ => None,
        };
        let question = question.or(looked_up.as_ref());
        let entry = AuditEntry::refused(&actor.by, &actor.via, question_id, question, reason);
        if let Err(error) = self.store().append_audit(&entry).await {
            tracing::warn!(%error, "cannot append to the audit trail");
        }
    }

    /// Audit records passing `filter`.
    pub async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, Error> {
        self.store().audit(filter).await
    }
}
