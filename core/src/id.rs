//! Question ids.
//!
//! An id is typed by people on phones and carried inside button payloads that Telegram limits to
//! 64 bytes, so it is short (10 characters), lower-case, and drawn from Crockford's base32
//! alphabet, which leaves out `i`, `l`, `o` and `u` so that nothing reads as another character.
//! Ten characters carry 50 random bits: guessing a live id is hopeless, and a collision among the
//! questions of one deployment is rare enough that the stores' refusal to overwrite (creation is
//! "insert if absent") is the whole of the handling it needs.

use crate::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::fmt;

/// The characters ids are written with.
pub const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// Length of every id.
pub const ID_LEN: usize = 10;
/// The shortest prefix a typed command may use instead of the whole id.
pub const MIN_PREFIX_LEN: usize = 4;

/// A question's id: [`ID_LEN`] characters of [`ALPHABET`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuestionId(String);

impl QuestionId {
    /// A fresh random id from the operating system's generator.
    pub fn random() -> Self {
        Self::from_bytes(&random_bytes::<ID_LEN>())
    }

    /// An id derived from `seed`. Used where a retry must produce the same id (a follow-up run
    /// re-executed after a crash asks "the same" question again and must not create a second
    /// one); the seed must itself contain enough randomness.
    pub fn derived(seed: &[u8]) -> Self {
        let digest = Sha256::digest(seed);
        Self::from_bytes(&digest[..ID_LEN])
    }

    /// [`QuestionId::derived`], with `first` (a character of [`ALPHABET`]) as its first
    /// character, so that a store that groups ids by their first character can keep this question
    /// beside whatever `first` was taken from (a run's questions beside their run).
    pub fn derived_beside(seed: &[u8], first: u8) -> Self {
        let mut id = Self::derived(seed).0.into_bytes();
        if ALPHABET.contains(&first) {
            id[0] = first;
        }
        QuestionId(String::from_utf8(id).expect("the alphabet is ASCII"))
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let text = bytes
            .iter()
            .map(|byte| ALPHABET[usize::from(byte & 31)] as char)
            .collect();
        QuestionId(text)
    }

    /// Parses a complete id as a person may have typed it (any case, `i`/`l` read as `1`,
    /// `o` as `0`).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let normalized = normalize(text);
        if normalized.len() == ID_LEN && is_id_text(&normalized) {
            Ok(QuestionId(normalized))
        } else {
            Err(Error::BadId(text.to_owned()))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QuestionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for QuestionId {
    type Error = Error;
    fn try_from(text: String) -> Result<Self, Error> {
        QuestionId::parse(&text)
    }
}

impl From<QuestionId> for String {
    fn from(id: QuestionId) -> String {
        id.0
    }
}

/// Lower-cases typed text and maps the characters Crockford's alphabet leaves out to the ones
/// they are mistaken for.
pub fn normalize(text: &str) -> String {
    text.trim()
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            'i' | 'l' => '1',
            'o' => '0',
            other => other,
        })
        .collect()
}

fn is_id_text(text: &str) -> bool {
    text.bytes().all(|b| ALPHABET.contains(&b))
}

/// What a typed command named: a whole id, or a prefix to look up among the questions the sender
/// may answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdRef {
    /// A complete id.
    Full(QuestionId),
    /// At least [`MIN_PREFIX_LEN`] characters of an id.
    Prefix(String),
}

impl IdRef {
    /// Reads a typed id or prefix.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let normalized = normalize(text);
        if !is_id_text(&normalized) || normalized.len() > ID_LEN || normalized.is_empty() {
            return Err(Error::BadId(text.to_owned()));
        }
        if normalized.len() == ID_LEN {
            return Ok(IdRef::Full(QuestionId(normalized)));
        }
        if normalized.len() < MIN_PREFIX_LEN {
            return Err(Error::PrefixTooShort {
                prefix: text.to_owned(),
                min: MIN_PREFIX_LEN,
            });
        }
        Ok(IdRef::Prefix(normalized))
    }

    /// Picks the one id among `candidates` that this reference names.
    pub fn resolve<'a, I>(&self, candidates: I) -> Result<QuestionId, Error>
    where
        I: IntoIterator<Item = &'a QuestionId>,
    {
        match self {
            IdRef::Full(id) => Ok(id.clone()),
            IdRef::Prefix(prefix) => {
                let mut matching: Vec<&QuestionId> = candidates
                    .into_iter()
                    .filter(|id| id.as_str().starts_with(prefix.as_str()))
                    .collect();
                matching.sort();
                matching.dedup();
                match matching.as_slice() {
                    [] => Err(Error::UnknownId(prefix.clone())),
                    [only] => Ok((*only).clone()),
                    many => Err(Error::AmbiguousPrefix {
                        prefix: prefix.clone(),
                        matches: many.iter().map(|id| id.to_string()).collect(),
                    }),
                }
            }
        }
    }
}

impl fmt::Display for IdRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdRef::Full(id) => f.write_str(id.as_str()),
            IdRef::Prefix(prefix) => f.write_str(prefix),
        }
    }
}

/// How many random bytes one call to the operating system's generator draws.
const POOL_LEN: usize = 256;

/// `N` bytes from the operating system's generator, each used once. They are drawn
/// [`POOL_LEN`] at a time into a pool of the calling thread: a system call served one id, and an
/// ask and its answer took two (a fifth of all askbridge's system calls per ask and answer on
/// Redis); now one serves about twenty-five.
fn random_bytes<const N: usize>() -> [u8; N] {
    const { assert!(N <= POOL_LEN) };
    thread_local! {
        /// The pool, and how many of its bytes were used.
        static POOL: RefCell<([u8; POOL_LEN], usize)> = const { RefCell::new(([0; POOL_LEN], POOL_LEN)) };
    }
    POOL.with_borrow_mut(|(pool, used)| {
        if *used + N > POOL_LEN {
            // The OS generator failing means the machine is broken beyond what a retry fixes.
            getrandom::fill(pool).expect("the operating system's random generator failed");
            *used = 0;
        }
        let mut bytes = [0; N];
        bytes.copy_from_slice(&pool[*used..*used + N]);
        *used += N;
        bytes
    })
}

/// A follow-up run's id: `r` and 12 characters of [`ALPHABET`] (60 random bits).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// A fresh random id.
    pub fn random() -> Self {
        let text: String = random_bytes::<12>()
            .iter()
            .map(|byte| ALPHABET[usize::from(byte & 31)] as char)
            .collect();
        RunId(format!("r{text}"))
    }

    /// Reads a run id; `None` for text of another shape, which names no run and never reaches a
    /// store key.
    pub fn parse(text: &str) -> Option<Self> {
        let shaped = text.len() == 13 && text.starts_with('r') && is_id_text(&text[1..]);
        shaped.then(|| RunId(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An "always allow" rule's id (`rule-<question id>`: derived from the approval that made it).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RuleId(String);

impl RuleId {
    /// The id of the rule an "always" answer to question `id` creates.
    pub fn for_question(id: &QuestionId) -> Self {
        RuleId(format!("rule-{id}"))
    }

    /// Wraps an id as typed or stored (unchecked: an unknown id simply names no rule).
    pub fn new(text: impl Into<String>) -> Self {
        RuleId(text.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Display and Debug as the bare text, for the string-backed ids above.
macro_rules! plain_text_formatting {
    ($($name:ident),*) => {$(
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    )*};
}

plain_text_formatting!(RunId, RuleId);

impl From<&str> for RuleId {
    fn from(text: &str) -> Self {
        RuleId::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn random_ids_are_well_formed_and_distinct() {
        let ids: HashSet<QuestionId> = (0..10_000).map(|_| QuestionId::random()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in &ids {
            assert_eq!(id.as_str().len(), ID_LEN);
            assert_eq!(QuestionId::parse(id.as_str()).unwrap(), *id);
        }
    }

    #[test]
    fn typed_ids_forgive_case_and_lookalikes() {
        let id = QuestionId::parse("1o0abcdefg").unwrap();
        assert_eq!(id.as_str(), "100abcdefg");
        assert_eq!(QuestionId::parse(" IO0ABCDEFG ").unwrap(), id);
        assert!(QuestionId::parse("short").is_err());
        assert!(QuestionId::parse("0123456789u").is_err());
    }

    #[test]
    fn derived_ids_are_stable() {
        assert_eq!(
            QuestionId::derived(b"run-1/0"),
            QuestionId::derived(b"run-1/0")
        );
        assert_ne!(
            QuestionId::derived(b"run-1/0"),
            QuestionId::derived(b"run-1/1")
        );
    }

    #[test]
    fn prefixes_resolve_uniquely_or_say_why_not() {
        let a = QuestionId::parse("abcd000000").unwrap();
        let b = QuestionId::parse("abcd111111").unwrap();
        let c = QuestionId::parse("zzzz000000").unwrap();
        let all = [a.clone(), b.clone(), c.clone()];
        assert_eq!(IdRef::parse("zzzz").unwrap().resolve(&all).unwrap(), c);
        assert_eq!(IdRef::parse("abcd1").unwrap().resolve(&all).unwrap(), b);
        assert!(matches!(
            IdRef::parse("abcd").unwrap().resolve(&all),
            Err(Error::AmbiguousPrefix { .. })
        ));
        assert!(matches!(
            IdRef::parse("qqqq").unwrap().resolve(&all),
            Err(Error::UnknownId(_))
        ));
        assert!(matches!(
            IdRef::parse("abc"),
            Err(Error::PrefixTooShort { .. })
        ));
        assert_eq!(IdRef::parse("abcd000000").unwrap(), IdRef::Full(a));
    }
}
