//! An approval's decisions as a question offers them, and the checks of an edit and a
//! response against it (the rules themselves, schema and types, are [`crate::decision`]'s).

use crate::Error;
use crate::approval::Action;
use crate::decision::{DEFAULT_DECISIONS, Decision, argument, fit_fields, flat, same_types, words};
use crate::form::FormSchema;
use crate::limits::MAX_ANSWER_CHARS;
use crate::question::{Kind, Question};
use serde_json::Value;

impl Question {
    /// The decisions a person may make on this approval.
    pub fn decisions(&self) -> &[Decision] {
        if self.allowed.is_empty() {
            &DEFAULT_DECISIONS
        } else {
            &self.allowed
        }
    }

    /// Refuses `decision` when this approval does not offer it, saying what it offers.
    pub fn allows(&self, decision: Decision) -> Result<(), Error> {
        if self.decisions().contains(&decision) {
            return Ok(());
        }
        Err(Error::NotFit {
            reason: format!(
                "This approval does not offer \"{}\"; choose {}. Nothing was decided.",
                decision.as_str(),
                words(self.decisions())
            ),
        })
    }

    /// The form that edits this approval's arguments field by field (in chat, on the ops page):
    /// its flat `args_schema`, each field's default the proposed value (so skipping a field
    /// keeps it), and required only where nothing was proposed. `None` when the arguments are
    /// edited as one JSON value instead.
    pub fn edit_form(&self) -> Option<FormSchema> {
        let args = self.action.as_ref()?.args.as_object()?;
        let mut form = flat(self.args_schema.as_ref()?)?;
        for (name, field) in &mut form.properties {
            if let Some(value) = args.get(name) {
                field.default = Some(value.clone());
            }
        }
        form.required.retain(|name| !args.contains_key(name));
        Some(form)
    }

    /// True when editing is offered and happens field by field.
    pub fn edits_in_fields(&self) -> bool {
        if self.is_batch() {
            return self.actions.iter().any(|a| {
                a.decision.is_none() && self.action_view(a.n).is_ok_and(|v| v.edits_in_fields())
            });
        }
        self.kind == Kind::Approval
            && self.decisions().contains(&Decision::Edit)
            && self.edit_form().is_some()
    }

    /// Checks edited arguments: allowed, fitting the flat schema (or the proposed value's
    /// types), of at most 32 kB. Returns them as they will run.
    pub fn check_edit(&self, args: Value) -> Result<Value, Error> {
        self.allows(Decision::Edit)?;
        let Some(action) = &self.action else {
            return Err(Error::NotFit {
                reason: "This approval has no action to edit.".into(),
            });
        };
        let schema = self.args_schema.as_ref().and_then(flat);
        let args = match (schema, args) {
            (Some(form), Value::Object(given)) if action.args.is_object() => {
                Value::Object(fit_fields(&form, &given)?)
            }
            (Some(_), _) if action.args.is_object() => {
                return Err(argument(
                    "args",
                    "must be an object of the tool's arguments",
                ));
            }
            (_, args) => {
                same_types(&action.args, &args, "args")?;
                args
            }
        };
        Action::new(action.tool.clone(), args.clone())
            .check()
            .map_err(|_| argument("args", "are over 32 kB"))?;
        Ok(args)
    }

    /// Checks a response's text (trimmed, not empty, a free answer's length and policy).
    pub fn check_response(&self, text: &str) -> Result<String, Error> {
        self.allows(Decision::Respond)?;
        let text = text.trim();
        let refused = |reason: String| Err(Error::NotFit { reason });
        if text.is_empty() {
            return refused("A response needs its text: respond <your text>.".into());
        }
        if text.chars().count() > MAX_ANSWER_CHARS {
            return refused(format!(
                "That response is too long; the limit is {MAX_ANSWER_CHARS} characters."
            ));
        }
        if let Some(why) = crate::text::refusal(text, crate::text::Lines::Many) {
            return refused(format!("That response {why}."));
        }
        Ok(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use crate::Error;
    use crate::approval::Action;
    use crate::decision::*;
    use crate::id::QuestionId;
    use crate::question::DEFAULT_TIMEOUT;
    use crate::question::Question;
    use crate::request::NewQuestion;
    use crate::time::Millis;
    use serde_json::Value;
    use serde_json::json;

    fn approval(args: Value, schema: Option<Value>, allowed: &[Decision]) -> Question {
        NewQuestion {
            allowed: Some(allowed.to_vec()),
            args_schema: schema,
            answerers: vec!["telegram:1".into()],
            ..NewQuestion::ask("Deploy?").approve(Action::new("deploy", args))
        }
        .session("s")
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "env": {"type": "string", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
        }, "required": ["env", "replicas"]})
    }

    fn field_of(error: Error) -> String {
        match error {
            Error::Argument { field, .. } => field,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn decisions_default_to_todays_and_others_are_refused() {
        let q = approval(json!({}), None, &DEFAULT_DECISIONS);
        assert_eq!(q.decisions(), DEFAULT_DECISIONS);
        let Err(Error::NotFit { reason }) = q.allows(Decision::Edit) else {
            panic!()
        };
        assert!(reason.contains("once, always or reject"), "{reason}");
        assert!(q.check_edit(json!({})).is_err());
        assert!(q.check_response("done").is_err());
        assert_eq!(
            Decision::parse_list("once, EDIT,respond").unwrap(),
            [Decision::Once, Decision::Edit, Decision::Respond]
        );
        assert!(
            Decision::parse_list("once,maybe")
                .unwrap_err()
                .contains("maybe")
        );
    }

    #[test]
    fn flat_schemas_check_edits_field_by_field_naming_the_field() {
        let args = json!({"env": "staging", "replicas": 2});
        let q = approval(args, Some(schema()), &[Decision::Once, Decision::Edit]);
        assert!(q.edits_in_fields());
        let edited = q.check_edit(json!({"env": "production", "replicas": 3}));
        assert_eq!(edited.unwrap(), json!({"env": "production", "replicas": 3}));
        let bad = q.check_edit(json!({"env": "production", "replicas": 11}));
        assert_eq!(field_of(bad.unwrap_err()), "args.replicas");
        let unknown = q.check_edit(json!({"env": "staging", "replicas": 1, "force": true}));
        assert_eq!(field_of(unknown.unwrap_err()), "args.force");
        let missing = q.check_edit(json!({"env": "staging"}));
        assert_eq!(field_of(missing.unwrap_err()), "args.replicas");
        let form = q.edit_form().unwrap();
        assert!(form.required.is_empty(), "proposed values may be kept");
        assert_eq!(form.field("replicas").unwrap().default, Some(json!(2)));
    }

    #[test]
    fn without_a_flat_schema_an_edit_keeps_the_proposed_types() {
        let args = json!({"command": "make", "env": {"CI": "1"}, "jobs": [1, 2], "cwd": null});
        let rich =
            json!({"type": "object", "properties": {"command": {"anyOf": [{"type": "string"}]}}});
        for schema in [None, Some(rich)] {
            let q = approval(args.clone(), schema, &[Decision::Edit]);
            assert!(!q.edits_in_fields());
            let ok = json!({"command": "make test", "env": {"CI": "0"}, "jobs": [], "cwd": "/x"});
            assert_eq!(q.check_edit(ok.clone()).unwrap(), ok);
            for (bad, field) in [
                (
                    json!({"command": 1, "env": {}, "jobs": [], "cwd": null}),
                    "args.command",
                ),
                (
                    json!({"command": "x", "env": {"CI": 1}, "jobs": [], "cwd": null}),
                    "args.env.CI",
                ),
                (
                    json!({"command": "x", "env": {"CI": "1"}, "jobs": ["a"], "cwd": null}),
                    "args.jobs[0]",
                ),
                (
                    json!({"command": "x", "env": {"CI": "1"}, "jobs": [], "cwd": null, "sudo": true}),
                    "args.sudo",
                ),
                (
                    json!({"env": {"CI": "1"}, "jobs": [], "cwd": null}),
                    "args.command",
                ),
            ] {
                assert_eq!(field_of(q.check_edit(bad).unwrap_err()), field);
            }
        }
        let list = approval(json!(["a", "b"]), Some(schema()), &[Decision::Edit]);
        assert!(!list.edits_in_fields(), "arguments that are not an object");
        assert_eq!(list.check_edit(json!(["c"])).unwrap(), json!(["c"]));
        assert_eq!(field_of(list.check_edit(json!("c")).unwrap_err()), "args");
    }

    #[test]
    fn requests_are_checked_when_asked() {
        let ask = |allowed: &[Decision], schema: Value, quorum: bool| {
            check_request(
                true,
                Some(allowed),
                Some(&schema),
                Some(&Action::new("deploy", json!({"env": "qa", "replicas": 1}))),
                quorum,
            )
        };
        let Err(Error::Invalid { field, reason }) = ask(&[Decision::Edit], schema(), false) else {
            panic!()
        };
        assert_eq!(field, "args_schema");
        assert!(reason.contains("args.env"), "{reason}");
        assert!(ask(&[], json!({}), false).is_err());
        assert!(ask(&[Decision::Respond], json!({}), true).is_err());
        assert!(ask(&[Decision::Once], json!([]), false).is_err());
        assert_eq!(
            ask(&[Decision::Reject, Decision::Once], json!({}), false).unwrap(),
            [Decision::Once, Decision::Reject]
        );
        assert!(check_request(false, Some(&[Decision::Once]), None, None, false).is_err());
    }

    #[test]
    fn typed_and_program_decisions_make_edits_and_responses_and_never_a_rule() {
        use crate::actor::Actor;
        use crate::question::{Claim, Status, Transition};
        let args = json!({"env": "staging", "replicas": 2});
        let allowed = [Decision::Once, Decision::Edit, Decision::Respond];
        let q = approval(args.clone(), Some(schema()), &allowed);
        let digest = q.action.as_ref().unwrap().short_digest();
        let typed = q
            .read_typed(&format!(
                "edit #{digest} {{\"env\": \"production\", \"replicas\": 3}}"
            ))
            .unwrap();
        let edited = json!({"env": "production", "replicas": 3});
        assert_eq!(
            typed,
            Transition::Edit {
                args: edited.clone()
            }
        );
        assert!(q.starts_edit("edit") && q.starts_edit(&format!("#{digest} edit")));
        assert!(!q.starts_edit("edit #0000") && !q.starts_edit("edit {}"));
        assert!(matches!(
            q.read_typed("edit {\"env\": 1}"),
            Err(Error::Argument { .. })
        ));
        assert!(
            matches!(q.read_typed("always"), Err(Error::NotFit { .. })),
            "not offered"
        );
        assert!(
            matches!(q.read_typed("reject"), Err(Error::NotFit { .. })),
            "not offered"
        );
        assert_eq!(
            q.read_typed("respond  use staging instead ").unwrap(),
            Transition::Respond {
                text: "use staging instead".into()
            }
        );
        let program = q.reply_transition(
            crate::Answer::Text("edit".into()),
            None,
            Some(&digest),
            Some(edited.clone()),
        );
        assert_eq!(
            program.unwrap(),
            Transition::Edit {
                args: edited.clone()
            }
        );
        assert!(
            q.reply_transition(
                crate::Answer::Text("once".into()),
                None,
                None,
                Some(edited.clone())
            )
            .is_err()
        );
        let mut resolved = q.clone();
        let claim = Claim::new(
            Transition::Edit {
                args: edited.clone(),
            },
            Actor::new("telegram:1", "telegram"),
            Millis(1),
        );
        resolved.apply(&claim);
        assert_eq!(resolved.status, Status::Answered);
        let resolution = resolved.resolution.clone().unwrap();
        assert_eq!(resolution.rule_to_create(), None, "an edit creates no rule");
        let edit = resolution.edited.unwrap();
        assert_eq!(
            (edit.proposed.args, edit.approved.args),
            (args, edited.clone())
        );
        let audit = crate::audit::AuditEntry::resolved(&resolved);
        assert_eq!(audit.approved_args, Some(edited));
        assert_ne!(audit.proposed_args, audit.approved_args);
    }
}
