#![allow(clippy::unwrap_used)]

//! A property-based fuzz loop over what people type: the command grammar, answer fitting and the
//! number lists; and over what programs send: form schemas, form answers and approval actions.
//! Inputs are generated from pieces that reach the interesting branches (commands, ids, ranges,
//! option labels, Unicode, control characters, each class the text policy names, keywords with
//! bounds that cross), mutated at random.
//!
//! The test run tries `ASKBRIDGE_FUZZ_CASES` inputs (20,000 by default); `scripts/fuzz` runs ten
//! million in release mode. A failure prints the seed and the input, which reproduce it:
//! `ASKBRIDGE_FUZZ_SEED=<seed> ASKBRIDGE_FUZZ_CASES=1`.
//!
//! (cargo-fuzz needs a nightly toolchain, which this machine does not have; a seeded loop with
//! properties finds the same class of bugs here — panics, unbounded work, answers outside the
//! options — without one.)

use askbridge_core::command::{CommandLine, numbers_text, parse_numbers};
use askbridge_core::question::{Answer, DEFAULT_TIMEOUT, Kind, Transition};
use askbridge_core::text::{Lines, refusal};
use askbridge_core::{Millis, NewQuestion, Question, QuestionId};
use std::time::{Duration, Instant};

/// xorshift64*: small, seedable, good enough to drive a fuzzer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PIECES: &[&str] = &[
    "/answer",
    "/decline",
    "/pick",
    "/show",
    "/pending",
    "/run",
    "/rules",
    "/help",
    "/whoami",
    "/answer@bot",
    "/ANSWER",
    "/",
    " ",
    "  ",
    "\t",
    "\n",
    ",",
    "-",
    "1",
    "2",
    "3",
    "10",
    "1000",
    "1001",
    "0",
    "99999999999999999999",
    "1-3",
    "3-1",
    "1-1000",
    "yes",
    "no",
    "y",
    "n",
    "once",
    "always",
    "reject",
    "none",
    "revoke",
    "k3f9x2m8qa",
    "k3f9",
    "zzzzzzzzzzzz",
    "Ship it",
    "ship it",
    "é",
    "日本",
    "🚀",
    "\u{1b}[2J",
    "\r",
    "\u{0}",
    "\u{202E}",
    "\u{200B}",
    "\u{FEFF}",
    "\"",
    "'",
    "`",
    "*",
    "_",
    "@",
    "#",
    "%",
    "\\",
    "..",
    "a",
];

fn input(rng: &mut Rng) -> String {
    let mut text = String::new();
    for _ in 0..1 + rng.below(8) {
        text.push_str(rng.pick(PIECES));
        if rng.below(3) == 0 {
            text.push(' ');
        }
    }
    if rng.below(20) == 0 {
        // Long inputs: the limits must hold, and the work must stay bounded.
        let piece = rng.pick(PIECES).to_owned();
        text.push_str(&piece.repeat(1 + rng.below(3000)));
    }
    if rng.below(10) == 0 {
        // Random code points, valid ones only (a &str cannot hold others).
        for _ in 0..rng.below(6) {
            if let Some(c) = char::from_u32((rng.next() % 0x11_0000) as u32) {
                text.push(c);
            }
        }
    }
    text
}

fn questions() -> Vec<Question> {
    let id = QuestionId::parse("k3f9x2m8qa").unwrap();
    let make = |request: NewQuestion| {
        request
            .session("fuzz")
            .into_question(id.clone(), Millis(1), DEFAULT_TIMEOUT)
            .unwrap()
    };
    let options = || vec!["Ship it".to_owned(), "Wait".to_owned(), "日本".to_owned()];
    let mut multi = NewQuestion::ask("Which?");
    multi.options = options();
    multi.multi = true;
    let mut custom = NewQuestion::ask("Which or what?");
    custom.options = options();
    custom.allow_custom = true;
    let mut single = NewQuestion::ask("Which one?");
    single.options = options();
    let mut approval = NewQuestion::ask("Run it?");
    approval.kind = Kind::Approval;
    approval.action = Some(askbridge_core::approval::Action {
        tool: "deploy".into(),
        args: serde_json::json!({"to": "prod"}),
    });
    vec![
        make(single),
        make(multi),
        make(custom),
        make(NewQuestion::confirm("Go?")),
        make(NewQuestion::ask("Anything?")),
        make(approval),
    ]
}

/// What a fitted answer must be: one of the options unless custom answers are allowed, never
/// empty, within the limit, printable.
fn check_fit(question: &Question, transition: &Transition, input: &str) {
    let Transition::Answer { value } = transition else {
        return;
    };
    let fits = |text: &str| {
        assert!(!text.trim().is_empty(), "an empty answer from {input:?}");
        assert!(
            text.chars().count() <= 4000,
            "an answer over the limit from {input:?}"
        );
        assert_eq!(
            refusal(text, Lines::Many),
            None,
            "an unprintable answer from {input:?}"
        );
        assert!(
            question.allow_custom
                || question.options.is_empty()
                || question.options.iter().any(|o| o == text),
            "{text:?} is not an option, from {input:?}"
        );
    };
    match value {
        Answer::Text(text) => fits(text),
        Answer::List(items) => {
            assert!(question.multi, "a list for a single choice from {input:?}");
            items.iter().for_each(|t| fits(t));
        }
        Answer::Bool(_) => assert_eq!(question.kind, Kind::Confirm),
        Answer::Object(_) => assert_eq!(question.kind, Kind::Form, "an object from {input:?}"),
    }
}

#[test]
fn typed_input_never_panics_and_never_fits_wrongly() {
    let cases: u64 = std::env::var("ASKBRIDGE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("ASKBRIDGE_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5EED_CAFE);
    let questions = questions();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for case in 0..cases {
        let case_seed = seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rng = Rng(case_seed);
        let text = input(&mut rng);
        let one = Instant::now();
        let run = std::panic::catch_unwind(|| {
            if let Ok(Some(line)) = CommandLine::parse(&text) {
                // What is shown is what parses back.
                let shown = line.command.to_string();
                let again = CommandLine::parse(&shown).unwrap().unwrap();
                assert_eq!(again.command, line.command, "{text:?} -> {shown:?}");
            }
            if let Some(numbers) = parse_numbers(&text) {
                assert!(numbers.iter().all(|n| (1..=1000).contains(n)));
                assert!(numbers.windows(2).all(|w| w[0] < w[1]));
                assert_eq!(parse_numbers(&numbers_text(&numbers)), Some(numbers));
            }
            for question in &questions {
                if let Ok(transition) = question.read_typed(&text) {
                    check_fit(question, &transition, &text);
                }
                if let Ok(value) = question.check_answer(Answer::Text(text.clone())) {
                    check_fit(question, &Transition::Answer { value }, &text);
                }
            }
        });
        slowest = slowest.max(one.elapsed());
        if run.is_err() {
            panic!("fuzz case failed: ASKBRIDGE_FUZZ_SEED={case_seed} input {text:?}");
        }
    }
    eprintln!(
        "fuzz: {cases} inputs in {:.1} s, slowest {:.2} ms, no failure",
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1000.0
    );
}

/// Text for a schema, an answer or an action: the typed-input pieces, sometimes one
/// character of a class the text policy names, sometimes long.
fn text(rng: &mut Rng) -> String {
    const CLASSES: &[&str] = &[
        "\u{3164}",
        "\u{2800}",
        "\u{115F}",
        "\u{FFA0}",
        "\u{AD}",
        "\u{E0041}",
        "\u{2028}",
        "\u{2029}",
        "\u{85}",
        "\u{61C}",
        "\u{2066}",
        "\u{200E}",
        "\u{FE0F}",
        "\u{3000}",
    ];
    let mut text = input(rng);
    if rng.below(4) == 0 {
        let at = rng.below(text.chars().count() + 1);
        let c = rng.pick(CLASSES);
        text = text
            .chars()
            .take(at)
            .chain(c.chars())
            .chain(text.chars().skip(at))
            .collect();
    }
    if rng.below(6) == 0 {
        text = rng.pick(CLASSES).repeat(1 + rng.below(3));
    }
    text
}

/// A number a bound might be: small, negative, fractional or huge.
fn number(rng: &mut Rng) -> serde_json::Value {
    let n = match rng.below(6) {
        0 => -(rng.below(10) as f64),
        1 => rng.below(10) as f64 + 0.5,
        2 => 1e12,
        _ => rng.below(12) as f64,
    };
    serde_json::json!(n)
}

/// One field of a form schema: a type and a random set of keywords with random values.
fn field(rng: &mut Rng) -> serde_json::Value {
    use serde_json::{Value, json};
    let kind = rng.pick(&["string", "number", "integer", "boolean", "array"]);
    let mut field = serde_json::Map::new();
    field.insert("type".into(), json!(kind));
    let choices = |rng: &mut Rng| -> Value {
        let mut list: Vec<String> = (0..rng.below(5)).map(|_| text(rng)).collect();
        if rng.below(3) == 0 {
            list.push(rng.pick(&["a", "b", "a"]).to_owned());
        }
        json!(list)
    };
    for _ in 0..rng.below(6) {
        let (key, value) = match rng.below(11) {
            0 => ("title", json!(text(rng))),
            1 => ("description", json!(text(rng))),
            2 => ("enum", choices(rng)),
            3 => ("enumNames", choices(rng)),
            4 => ("items", json!({"type": "string", "enum": choices(rng)})),
            5 => (
                "format",
                json!(rng.pick(&["email", "uri", "date", "date-time", "ipv4", ""])),
            ),
            6 => ("minimum", number(rng)),
            7 => ("maximum", number(rng)),
            8 => (
                rng.pick(&["minLength", "maxLength"]),
                json!(rng.below(10_000)),
            ),
            9 => (rng.pick(&["minItems", "maxItems"]), json!(rng.below(6))),
            _ => ("default", answer_value(rng)),
        };
        field.insert(key.into(), value);
    }
    Value::Object(field)
}

/// A value a form answer might give a field.
fn answer_value(rng: &mut Rng) -> serde_json::Value {
    use serde_json::json;
    match rng.below(6) {
        0 => json!(rng.below(2) == 0),
        1 => number(rng),
        2 => json!([text(rng), "a", "b"]),
        3 => json!(["a"]),
        4 => json!("a"),
        _ => json!(text(rng)),
    }
}

/// An approval's action: a tool name and arguments nested with tricky strings.
fn action(rng: &mut Rng) -> askbridge_core::Action {
    use serde_json::json;
    let mut args = serde_json::Map::new();
    for _ in 0..rng.below(4) {
        let value = match rng.below(3) {
            0 => json!(text(rng)),
            1 => json!({ text(rng): [text(rng), 1] }),
            _ => number(rng),
        };
        args.insert(text(rng), value);
    }
    let tool = if rng.below(2) == 0 {
        "shell".to_owned()
    } else {
        text(rng)
    };
    askbridge_core::Action::new(tool, serde_json::Value::Object(args))
}

/// What an accepted schema promises: every string people read passes the policy, and every
/// answer it accepts does too, within the field's bound and choices.
fn check_form(rng: &mut Rng) -> bool {
    use askbridge_core::form::{DEFAULT_MAX_LENGTH, FORMATS, FieldType, FormSchema};
    let properties: serde_json::Map<String, serde_json::Value> = (0..1 + rng.below(3))
        .map(|i| (format!("f{i}"), field(rng)))
        .collect();
    let schema = serde_json::json!({"type": "object", "properties": properties});
    let Ok(form) = serde_json::from_value::<FormSchema>(schema) else {
        return false;
    };
    if form.check().is_err() {
        return false;
    }
    for (_, field) in &form.properties {
        let mut one_line: Vec<&String> = field.title.iter().chain(field.choices()).collect();
        one_line.extend(field.choice_names.iter().flatten());
        for t in one_line {
            assert_eq!(refusal(t, Lines::One), None, "{t:?}");
        }
        if let Some(d) = &field.description {
            assert_eq!(refusal(d, Lines::Many), None, "{d:?}");
        }
        assert!(field.format.as_deref().is_none_or(|f| FORMATS.contains(&f)));
        if let (Some(min), Some(max)) = (field.minimum, field.maximum) {
            assert!(min <= max);
        }
        let choices = field.choices();
        assert!(
            choices
                .iter()
                .enumerate()
                .all(|(i, c)| !choices[..i].contains(c))
        );
        let answer = answer_value(rng);
        if let Ok(fitted) = field.fit(&answer)
            && let Some(text) = fitted.as_str()
        {
            assert_eq!(refusal(text, Lines::Many), None, "{text:?}");
            let bound = field.max_length.unwrap_or(DEFAULT_MAX_LENGTH);
            assert!(text.chars().count() <= bound);
            assert!(field.kind == FieldType::String);
            assert!(choices.is_empty() || choices.iter().any(|c| c == text));
        }
    }
    true
}

/// What an accepted action promises: a tool name that passes the policy, and arguments shown
/// with nothing that acts, reorders or hides.
fn check_action(rng: &mut Rng) -> bool {
    let action = action(rng);
    if action.check().is_err() {
        return false;
    }
    assert_eq!(refusal(&action.tool, Lines::One), None, "{:?}", action.tool);
    for (name, value) in action.arguments() {
        for shown in [name, value] {
            assert_eq!(askbridge_core::text::visible(&shown), shown, "{shown:?}");
        }
    }
    let block = action.block(true);
    assert_eq!(askbridge_core::text::printable(&block), block);
    true
}

#[test]
fn forms_and_actions_never_panic_and_never_pass_wrongly() {
    let cases: u64 = std::env::var("ASKBRIDGE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("ASKBRIDGE_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5EED_F0A5);
    let started = Instant::now();
    let mut accepted = [0u64; 2];
    for case in 0..cases {
        let case_seed = seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let run = std::panic::catch_unwind(|| {
            let form = check_form(&mut Rng(case_seed));
            let action = check_action(&mut Rng(case_seed));
            [form, action]
        });
        match run {
            Ok(passed) => (0..2).for_each(|i| accepted[i] += u64::from(passed[i])),
            Err(_) => {
                panic!("fuzz case failed: ASKBRIDGE_FUZZ_SEED={case_seed} ASKBRIDGE_FUZZ_CASES=1")
            }
        }
    }
    // The share accepted says the generators reach both sides of the checks.
    eprintln!(
        "fuzz: {cases} form schemas with answers and {cases} actions in {:.1} s, no failure; \
         {} schemas and {} actions accepted",
        started.elapsed().as_secs_f64(),
        accepted[0],
        accepted[1]
    );
}
