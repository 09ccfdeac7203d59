//! Does an answer fit its question?
//!
//! Two readers share one set of rules. [`Question::read_typed`] reads what a person typed or what a
//! button carried (`2`, `dayjs`, `1-3,5`, `yes`, free text); [`Question::check_answer`] checks a
//! value a program sent (a label, a list of labels, a boolean). Both return the answer in its
//! canonical form (labels spelled as the question spells them, multi choices in option order), so
//! that whichever surface answered, the function receives the same value. An answer that does not
//! fit is refused with a reason a person can act on; the question is not touched.

use crate::Error;
use crate::question::{Answer, Kind, MAX_ANSWER_CHARS, Question, Transition};

mod approval;
mod edit;

impl Question {
    /// Reads the `<choice>` of `/answer <id> <choice>`.
    pub fn read_typed(&self, raw: &str) -> Result<Transition, Error> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(self.not_fit("An answer is needed."));
        }
        let value = match self.kind {
            Kind::Confirm => Answer::Bool(self.read_yes_no(raw)?),
            Kind::Approval if self.is_batch() => return self.read_batch(raw),
            Kind::Approval => return self.read_approval(raw),
            Kind::Ask if self.multi => Answer::List(self.read_multi(raw)?),
            Kind::Ask => Answer::Text(self.read_single(raw)?),
            // A whole form typed at once is its JSON; chat fills one field at a time instead.
            Kind::Form => match serde_json::from_str::<Answer>(raw) {
                Ok(answer @ Answer::Object(_)) => self.check_answer(answer)?,
                _ => {
                    return Err(
                        self.not_fit("Answer this form field by field, or as one JSON object.")
                    );
                }
            },
        };
        Ok(Transition::Answer { value })
    }

    /// Checks an answer given as a value by a program.
    pub fn check_answer(&self, answer: Answer) -> Result<Answer, Error> {
        match (self.kind, answer) {
            (Kind::Confirm, Answer::Bool(yes)) => Ok(Answer::Bool(yes)),
            (Kind::Confirm, Answer::Text(text)) => Ok(Answer::Bool(self.read_yes_no(&text)?)),
            (Kind::Approval, Answer::Text(text)) => {
                let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                self.approval_value(&words).map(Answer::from)
            }
            (Kind::Ask, Answer::Text(text)) if self.multi => {
                self.check_multi(std::slice::from_ref(&text))
            }
            (Kind::Ask, Answer::List(items)) if self.multi => self.check_multi(&items),
            (Kind::Ask, Answer::Text(text)) => {
                let text = text.trim();
                match self.label_for(text) {
                    Some(label) => Ok(Answer::Text(label)),
                    None => self.custom(text).map(Answer::Text),
                }
            }
            (Kind::Ask, Answer::List(_)) => {
                Err(self.not_fit("This question takes one choice, not a list."))
            }
            (Kind::Form, Answer::Object(fields)) => match &self.form {
                Some(form) => form
                    .fit(&fields)
                    .map(Answer::Object)
                    .map_err(|why| self.not_fit(&format!("That does not fit the form: {why}."))),
                None => Err(self.not_fit("This form has no fields.")),
            },
            (_, _) => Err(self.not_fit("That kind of answer does not fit this question.")),
        }
    }

    /// One line telling a person what would fit.
    pub fn choices_hint(&self) -> String {
        match self.kind {
            Kind::Confirm => "Reply yes or no.".into(),
            Kind::Approval => self.decisions_hint(),
            Kind::Form => "Reply with each field's value in turn.".into(),
            Kind::Ask if self.options.is_empty() => "Reply with your answer in words.".into(),
            Kind::Ask => {
                let n = self.options.len();
                let range = if n == 1 {
                    "1".to_owned()
                } else {
                    format!("1-{n}")
                };
                let mut hint = if self.multi {
                    format!("Choose one or more of {range}, separated by commas (e.g. 1,3)")
                } else {
                    format!("Choose {range}")
                };
                hint.push_str(" or an option's name");
                if self.allow_custom {
                    hint.push_str(", or reply in your own words");
                }
                hint.push('.');
                hint
            }
        }
    }

    fn not_fit(&self, why: &str) -> Error {
        let reason = if why.is_empty() {
            self.choices_hint()
        } else {
            format!("{why} {}", self.choices_hint())
        };
        Error::NotFit { reason }
    }

    fn read_yes_no(&self, raw: &str) -> Result<bool, Error> {
        match raw.trim().to_lowercase().as_str() {
            "yes" | "y" | "true" | "ok" => Ok(true),
            "no" | "n" | "false" => Ok(false),
            _ => Err(self.not_fit("")),
        }
    }

    fn read_single(&self, raw: &str) -> Result<String, Error> {
        if let Some(number) = parse_number(raw) {
            if let Some(label) = self.option_number(number) {
                return Ok(label);
            }
            if !self.allow_custom {
                return Err(self.not_fit(&format!("There is no option {number}.")));
            }
        }
        if let Some(label) = self.label_for(raw) {
            return Ok(label);
        }
        if !self.allow_custom
            && raw.contains(',')
            && raw.split(',').all(|p| parse_number(p).is_some())
        {
            return Err(self.not_fit("This question takes one choice."));
        }
        self.custom(raw)
    }

    fn read_multi(&self, raw: &str) -> Result<Vec<String>, Error> {
        let mut chosen = vec![false; self.options.len()];
        let mut custom = Vec::new();
        for item in raw
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            if let Some((first, last)) = parse_range(item) {
                for number in first..=last {
                    let index = self.index_of_number(number)?;
                    chosen[index] = true;
                }
            } else if let Some(index) = self.index_of_label(item) {
                chosen[index] = true;
            } else if self.allow_custom {
                custom.push(self.custom(item)?);
            } else {
                return Err(self.not_fit(&format!("`{item}` is not one of the options.")));
            }
        }
        self.collect_choices(&chosen, custom)
    }

    fn check_multi(&self, items: &[String]) -> Result<Answer, Error> {
        let mut chosen = vec![false; self.options.len()];
        let mut custom = Vec::new();
        for item in items.iter().map(|item| item.trim()) {
            match self.index_of_label(item) {
                Some(index) => chosen[index] = true,
                None if self.allow_custom && !item.is_empty() => custom.push(self.custom(item)?),
                None => return Err(self.not_fit(&format!("`{item}` is not one of the options."))),
            }
        }
        self.collect_choices(&chosen, custom).map(Answer::List)
    }

    fn collect_choices(&self, chosen: &[bool], custom: Vec<String>) -> Result<Vec<String>, Error> {
        let mut answer: Vec<String> = self
            .options
            .iter()
            .zip(chosen)
            .filter(|(_, chosen)| **chosen)
            .map(|(label, _)| label.clone())
            .collect();
        for text in custom {
            if !answer.contains(&text) {
                answer.push(text);
            }
        }
        if answer.is_empty() {
            return Err(self.not_fit("Choose at least one."));
        }
        Ok(answer)
    }

    fn index_of_number(&self, number: usize) -> Result<usize, Error> {
        if (1..=self.options.len()).contains(&number) {
            Ok(number - 1)
        } else {
            Err(self.not_fit(&format!("There is no option {number}.")))
        }
    }

    fn option_number(&self, number: usize) -> Option<String> {
        number
            .checked_sub(1)
            .and_then(|index| self.options.get(index))
            .cloned()
    }

    fn index_of_label(&self, text: &str) -> Option<usize> {
        let text = comparable(text);
        self.options
            .iter()
            .position(|label| comparable(label) == text)
    }

    fn label_for(&self, text: &str) -> Option<String> {
        self.index_of_label(text)
            .map(|index| self.options[index].clone())
    }

    fn custom(&self, text: &str) -> Result<String, Error> {
        if !self.allow_custom {
            return Err(self.not_fit(&format!("`{}` is not one of the options.", short(text))));
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(self.not_fit("An answer is needed."));
        }
        if let Some(why) = crate::text::refusal(text, crate::text::Lines::Many) {
            return Err(Error::NotFit {
                reason: format!("That answer {why}."),
            });
        }
        if text.chars().count() > MAX_ANSWER_CHARS {
            return Err(Error::NotFit {
                reason: format!(
                    "That answer is too long; the limit is {MAX_ANSWER_CHARS} characters."
                ),
            });
        }
        Ok(text.to_owned())
    }
}

/// How labels are compared: trimmed, composed (NFC: a letter and its combining accent as the
/// one character a keyboard sends), case-insensitive.
fn comparable(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.trim().nfc().collect::<String>().to_lowercase()
}

fn parse_number(text: &str) -> Option<usize> {
    let text = text.trim();
    if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_range(item: &str) -> Option<(usize, usize)> {
    if let Some(number) = parse_number(item) {
        return Some((number, number));
    }
    let (first, last) = item.split_once('-')?;
    let (first, last) = (parse_number(first)?, parse_number(last)?);
    (first <= last).then_some((first, last))
}

/// What was typed, repeated in a refusal: shortened, anything that could act on a terminal or
/// reorder the message shown as an escape.
fn short(text: &str) -> String {
    crate::text::shorten(&crate::text::printable(text.trim()), 40)
}

/// A decline's message as given by a program: trimmed, empty as none, and refused when longer
/// than an answer may be (a chat's feedback is cut instead, since the person cannot be asked to
/// shorten a message already sent).
pub fn decline_message(message: Option<&str>) -> Result<Option<String>, Error> {
    let Some(message) = message.map(str::trim).filter(|m| !m.is_empty()) else {
        return Ok(None);
    };
    if message.chars().count() > MAX_ANSWER_CHARS {
        return Err(Error::NotFit {
            reason: format!(
                "That message is too long; the limit is {MAX_ANSWER_CHARS} characters."
            ),
        });
    }
    if let Some(why) = crate::text::refusal(message, crate::text::Lines::Many) {
        return Err(Error::NotFit {
            reason: format!("That message {why}."),
        });
    }
    Ok(Some(message.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::QuestionId;
    use crate::question::DEFAULT_TIMEOUT;
    use crate::request::NewQuestion;
    use crate::time::Millis;

    fn question(kind: Kind, options: &[&str], multi: bool, allow_custom: bool) -> Question {
        NewQuestion {
            kind,
            options: options.iter().map(|o| o.to_string()).collect(),
            multi,
            allow_custom,
            ..NewQuestion::new("s", "q?")
        }
        .into_question(QuestionId::random(), Millis(0), DEFAULT_TIMEOUT)
        .unwrap()
    }

    #[test]
    fn labels_compare_composed() {
        let q = question(Kind::Ask, &["Café", "Tea"], false, false);
        // "Cafe" + U+0301 COMBINING ACUTE ACCENT, as some keyboards send it.
        assert_eq!(
            q.check_answer(Answer::Text("cafe\u{301}".into())).unwrap(),
            Answer::Text("Café".into())
        );
    }

    fn typed(q: &Question, raw: &str) -> Result<Answer, Error> {
        match q.read_typed(raw)? {
            Transition::Answer { value } => Ok(value),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn text(s: &str) -> Answer {
        Answer::Text(s.into())
    }

    fn list(items: &[&str]) -> Answer {
        Answer::List(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn single_choice_by_number_or_label_in_any_case() {
        let q = question(Kind::Ask, &["dayjs", "date-fns", "Luxon"], false, false);
        assert_eq!(typed(&q, "2").unwrap(), text("date-fns"));
        assert_eq!(typed(&q, " luxon ").unwrap(), text("Luxon"));
        assert!(matches!(typed(&q, "4"), Err(Error::NotFit { .. })));
        assert!(matches!(typed(&q, "moment"), Err(Error::NotFit { .. })));
        assert!(matches!(typed(&q, "1,2"), Err(Error::NotFit { .. })));
        assert!(matches!(typed(&q, ""), Err(Error::NotFit { .. })));
    }

    #[test]
    fn free_text_only_where_allowed() {
        let q = question(Kind::Ask, &["dayjs"], false, true);
        assert_eq!(
            typed(&q, "moment.js please").unwrap(),
            text("moment.js please")
        );
        assert_eq!(typed(&q, "1").unwrap(), text("dayjs"));
        let open = question(Kind::Ask, &[], false, false);
        assert!(open.allow_custom, "a question without options takes words");
        assert_eq!(typed(&open, "anything").unwrap(), text("anything"));
    }

    #[test]
    fn multi_takes_numbers_ranges_and_labels_in_option_order() {
        let q = question(Kind::Ask, &["a", "b", "c", "d", "e"], true, false);
        assert_eq!(typed(&q, "3,1").unwrap(), list(&["a", "c"]));
        assert_eq!(typed(&q, "2-4, a").unwrap(), list(&["a", "b", "c", "d"]));
        assert_eq!(typed(&q, "E,e,5").unwrap(), list(&["e"]));
        assert!(matches!(typed(&q, "6"), Err(Error::NotFit { .. })));
        assert!(matches!(typed(&q, "x"), Err(Error::NotFit { .. })));
        assert!(matches!(typed(&q, ","), Err(Error::NotFit { .. })));
        let custom = question(Kind::Ask, &["a", "b"], true, true);
        assert_eq!(typed(&custom, "x, 2").unwrap(), list(&["b", "x"]));
    }

    #[test]
    fn confirm_takes_yes_or_no() {
        let q = question(Kind::Confirm, &[], false, false);
        assert_eq!(typed(&q, "Y").unwrap(), Answer::Bool(true));
        assert_eq!(typed(&q, "no").unwrap(), Answer::Bool(false));
        assert!(matches!(typed(&q, "maybe"), Err(Error::NotFit { .. })));
        assert_eq!(
            q.check_answer(Answer::Bool(true)).unwrap(),
            Answer::Bool(true)
        );
        assert_eq!(q.check_answer(text("yes")).unwrap(), Answer::Bool(true));
        assert!(q.check_answer(list(&["yes"])).is_err());
    }

    #[test]
    fn approval_replies() {
        let mut q = question(Kind::Ask, &[], false, false);
        q.kind = Kind::Approval;
        q.allow_custom = false;
        assert_eq!(typed(&q, "once").unwrap(), text("once"));
        assert_eq!(typed(&q, "ALWAYS").unwrap(), text("always"));
        assert_eq!(
            q.read_typed("reject not on Fridays").unwrap(),
            Transition::Decline {
                message: Some("not on Fridays".into())
            }
        );
        assert_eq!(
            q.read_typed("reject").unwrap(),
            Transition::Decline { message: None }
        );
        assert!(q.read_typed("sure").is_err());
        assert_eq!(
            typed(&q, "always everywhere").unwrap(),
            text("always everywhere")
        );
        assert_eq!(
            q.check_answer(text("Always Everywhere")).unwrap(),
            text("always everywhere")
        );
    }

    #[test]
    fn approval_replies_are_bound_to_the_action_digest() {
        use crate::approval::Action;
        let mut q = question(Kind::Ask, &[], false, false);
        q.kind = Kind::Approval;
        q.allow_custom = false;
        q.action = Some(Action::new(
            "shell",
            serde_json::json!({"command": "rm -rf build/"}),
        ));
        let digest = q.action.as_ref().unwrap().short_digest();
        assert_eq!(typed(&q, &format!("once #{digest}")).unwrap(), text("once"));
        assert_eq!(
            q.read_typed(&format!("reject #{digest} not on Fridays"))
                .unwrap(),
            Transition::Decline {
                message: Some("not on Fridays".into())
            }
        );
        let Err(Error::NotFit { reason }) = q.read_typed("once #00000000") else {
            panic!()
        };
        assert!(
            reason.starts_with("This reply is for another action"),
            "{reason}"
        );
        assert!(q.check_digest(&digest).is_ok() && q.check_digest("ffff").is_err());
    }

    #[test]
    fn program_answers_use_labels_not_numbers() {
        let q = question(Kind::Ask, &["dayjs", "luxon"], false, false);
        assert_eq!(q.check_answer(text("LUXON")).unwrap(), text("luxon"));
        assert!(
            q.check_answer(text("1")).is_err(),
            "numbers are for people typing"
        );
        assert!(q.check_answer(list(&["dayjs"])).is_err());
        assert!(q.check_answer(Answer::Bool(true)).is_err());
        let multi = question(Kind::Ask, &["a", "b", "c"], true, false);
        assert_eq!(
            multi.check_answer(list(&["c", "a"])).unwrap(),
            list(&["a", "c"])
        );
        assert_eq!(multi.check_answer(text("b")).unwrap(), list(&["b"]));
        assert!(multi.check_answer(list(&[])).is_err());
        assert!(multi.check_answer(list(&["z"])).is_err());
    }

    #[test]
    fn refusals_say_what_would_fit() {
        let q = question(Kind::Ask, &["a", "b", "c"], false, false);
        let Err(Error::NotFit { reason }) = typed(&q, "9") else {
            panic!("expected a refusal")
        };
        assert!(reason.contains("no option 9"), "{reason}");
        assert!(reason.contains("1-3"), "{reason}");
    }
}
