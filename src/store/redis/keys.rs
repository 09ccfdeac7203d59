//! The key layout: a fixed number of buckets, each a hash tag of its own, so that everything one
//! script touches — a question, its index entries, its event, its audit record, the run waiting on
//! it — lives in one Redis Cluster slot, while the buckets spread over the cluster.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:{bNN}:q:<id>` | hash | `q` (the question as asked, compact JSON), `status`, `res` (resolution JSON), `exp` (deadline, ms) |
//! | `P:{bNN}:shown:<id>` | hash | target → the channel's message reference |
//! | `P:{bNN}:fx:<id>` | set | effects done after resolution |
//! | `P:{bNN}:open` | sorted set | open questions by when they are next due (the outbox) |
//! | `P:{bNN}:pending` | sorted set | pending questions by when they were asked (pages of the newest) |
//! | `P:{bNN}:done:<status>` | sorted set | resolved questions by when they were resolved |
//! | `P:{bNN}:answers` | list | how long recent answers took, in ms (the newest 125 are read; up to 250 kept) |
//! | `P:{bNN}:session:<session>` | set | an older askbridge's: a session's question ids in this bucket, written at every ask; no longer written, read beside the resolved index below until it expires (`listings.rs`), and for an older askbridge's closed mark (`kept.rs`) |
//! | `P:{bNN}:session-done:<status>:<session>` | sorted set | a session's resolved question ids of one outcome in this bucket, by when they were resolved (its history and resolved listings, a page at a time: `listings.rs`); written by the claim, with a TTL it extends |
//! | `P:{bNN}:session-pending:<session>` | sorted set | a session's pending question ids in this bucket, by when they were asked, with no TTL (its pending page, and what a session-scoped rule looks through: `session_index.rs`) |
//! | `P:{bNN}:closed:<session>` | string | a closed session, marked in every bucket (with a TTL: how long a close is kept): a plain insert there is refused (`kept.rs`) |
//! | `P:{bNN}:sessions-indexed` | string | `2` once this bucket's pending questions from before the session's pending index were entered in it (`session_index.rs`) |
//! | `P:{bNN}:target:<target>` | set | pending question ids shown in a target, in this bucket |
//! | `P:{bNN}:events` | stream | events of this bucket's questions, runs and rules (`data`, and `o`: the tag of the store that wrote it, which skips its own), read by every process (replicated, not in the AOF) |
//! | `P:{bNN}:audit` | stream | the audit records of this bucket's questions |
//! | `P:{bNN}:run:<id>` | hash | a run's state, lease and question: the small fields its scripts change |
//! | `P:{bNN}:runj:<id>` | string | the rest of the run (compact JSON: flow, input, origin, journal) |
//! | `P:{bNN}:runs` | sorted set | runs needing an executor, by lease end |
//! | `P:{bNN}:runs:live` | sorted set | runs not ended, by start (the ops page) |
//! | `P:{bNN}:runs:ended` | sorted set | ended runs, by their last change (the ops page) |
//! | `P:{bNN}:rules` | hash | rule id → rule JSON |
//! | `P:{bNN}:rules:by-time` | sorted set | rule ids by creation (pages of the ops page) |
//! | `P:{bNN}:rules:for:<digest>` | hash | scope (`*`, `s<length>:<session>`) → the JSON array of the ids of this bucket's rules for the action with that digest there: where an approval finds its rules (`rule_index.rs`) |
//! | `P:{bNN}:rules:at` | hash | rule id → its place (`<its rules:for key>\n<scope>`), so a revoke, or the rule stored again, leaves it |
//! | `P:{bNN}:replicated` | string | written before each wait for a replica, on a cluster (`replica_wait/`) |
//! | `P:seen:<key>` | string | delivery ids already handled (with a TTL) |
//! | `P:lease:<name>` | string | who holds a leader lease (`telegram-poll`, `discord-gateway`), with a TTL |
//! | `P:{sessions}:leases` | sorted set | sessions `askbridge exec` holds, by when their lease ends |
//! | `P:idem:<key>` | string | what a create with this `Idempotency-Key` made (with a TTL) |
//!
//! A question's bucket is given by the first character of its id (ids are uniformly random there);
//! a run's by the second character of its id (`r…`), and a run's questions take that character as
//! their first ([`askbridge_core::run::Run::question_id`]), so a run and its questions share a
//! bucket and a claim can hand its run over in the same script.

use askbridge_core::id::ALPHABET;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "askbridge";
/// How many buckets. Fixed: changing it moves every key. Sixteen spreads the load over a
/// cluster of up to sixteen masters, while a read that spans buckets (a page of all pending
/// questions, the summary counts) stays one pipeline of sixteen commands.
pub const BUCKETS: usize = 16;

/// The bucket of an id whose characters come from [`ALPHABET`], by its character at `at`; text
/// of another shape falls back to a byte sum (it names nothing stored, but must not panic).
fn bucket_by(text: &str, at: usize) -> usize {
    match text
        .as_bytes()
        .get(at)
        .and_then(|b| ALPHABET.iter().position(|a| a == b))
    {
        Some(index) => index % BUCKETS,
        None => text.bytes().map(usize::from).sum::<usize>() % BUCKETS,
    }
}

/// The bucket of question `id`.
pub(super) fn question_bucket(id: &str) -> usize {
    bucket_by(id, 0)
}

/// The bucket of run `id`.
pub(super) fn run_bucket(id: &str) -> usize {
    bucket_by(id, 1)
}

/// The bucket of rule `id` (`rule-<question id>`: the question's bucket).
pub(super) fn rule_bucket(id: &str) -> usize {
    question_bucket(id.strip_prefix("rule-").unwrap_or(id))
}

/// Key names under one prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    /// `P:{bNN}:` and then `parts`, written into one allocation of the right size: a claim
    /// names fourteen keys, and building each with `format!` (twice: its rest, then the whole)
    /// was a few per cent of what askbridge spends on an ask and an answer.
    pub(super) fn in_bucket(&self, bucket: usize, parts: &[&str]) -> String {
        debug_assert!(bucket < 100, "two digits: {bucket}");
        let length =
            self.prefix.len() + ":{b00}:".len() + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut key = String::with_capacity(length);
        key.push_str(&self.prefix);
        key.push_str(":{b");
        key.push(char::from(b'0' + (bucket / 10 % 10) as u8));
        key.push(char::from(b'0' + (bucket % 10) as u8));
        key.push_str("}:");
        for part in parts {
            key.push_str(part);
        }
        key
    }

    pub(super) fn question(&self, id: &str) -> String {
        self.in_bucket(question_bucket(id), &["q:", id])
    }
    pub(super) fn shown(&self, id: &str) -> String {
        self.in_bucket(question_bucket(id), &["shown:", id])
    }
    pub(super) fn draft(&self, id: &str, who: &str) -> String {
        self.in_bucket(question_bucket(id), &["draft:", id, ":", who])
    }
    pub(super) fn effects(&self, id: &str) -> String {
        self.in_bucket(question_bucket(id), &["fx:", id])
    }
    pub(super) fn open(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["open"])
    }
    pub(super) fn pending(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["pending"])
    }
    pub(super) fn done(&self, bucket: usize, status: &str) -> String {
        self.in_bucket(bucket, &["done:", status])
    }
    pub(super) fn answers(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["answers"])
    }
    /// The set of a session's ids in `bucket` an older askbridge wrote at every ask: read only
    /// (`listings.rs`, `kept.rs`) until it expires.
    pub(super) fn session(&self, bucket: usize, session: &str) -> String {
        self.in_bucket(bucket, &["session:", session])
    }
    /// A session's pending questions in `bucket`, by when they were asked (kept by the insert
    /// and claim scripts, in the question's slot).
    pub(super) fn session_pending(&self, bucket: usize, session: &str) -> String {
        self.in_bucket(bucket, &["session-pending:", session])
    }
    /// A session's resolved questions of one outcome in `bucket`, by when they were resolved
    /// (kept by the claim script, in the question's slot). The session comes last: it may hold
    /// any character.
    pub(super) fn session_done(&self, bucket: usize, status: &str, session: &str) -> String {
        self.in_bucket(bucket, &["session-done:", status, ":", session])
    }
    /// A closed session's mark in `bucket` (`kept.rs`): each bucket has its own, so that the
    /// insert script reads it in the question's slot.
    pub(super) fn closed(&self, bucket: usize, session: &str) -> String {
        self.in_bucket(bucket, &["closed:", session])
    }
    /// Set once the bucket's pending questions are in their sessions' pending indexes.
    pub(super) fn sessions_indexed(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["sessions-indexed"])
    }
    pub(super) fn target(&self, bucket: usize, target: &str) -> String {
        self.in_bucket(bucket, &["target:", target])
    }
    pub(super) fn events(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["events"])
    }
    pub(super) fn audit(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["audit"])
    }
    pub(super) fn run(&self, id: &str) -> String {
        self.in_bucket(run_bucket(id), &["run:", id])
    }
    pub(super) fn run_data(&self, id: &str) -> String {
        self.in_bucket(run_bucket(id), &["runj:", id])
    }
    pub(super) fn runs(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["runs"])
    }
    /// Runs waiting or running, by start time (the ops page's runs view).
    pub(super) fn runs_live(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["runs:live"])
    }
    /// Runs done or failed, by their last change.
    pub(super) fn runs_ended(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["runs:ended"])
    }
    /// Rule ids by creation time (the ops page's rules view).
    pub(super) fn rules_by_time(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["rules:by-time"])
    }
    pub(super) fn rules(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["rules"])
    }
    /// The ids of this bucket's rules for the action with `digest`, by scope
    /// ([`crate::store::rule_index::RuleKey`]).
    pub(super) fn rules_for(&self, bucket: usize, digest: &str) -> String {
        self.in_bucket(bucket, &["rules:for:", digest])
    }
    /// Each rule's place in the index.
    pub(super) fn rules_places(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["rules:at"])
    }
    /// The index's keys before it had its present shape (a sorted set of `<place><id>` and a
    /// hash of each rule's member), deleted once a bucket's rules are filed again.
    pub(super) fn rules_index_before(&self, bucket: usize) -> [String; 2] {
        [
            self.in_bucket(bucket, &["rules:by-action"]),
            self.in_bucket(bucket, &["rules:filed"]),
        ]
    }
    /// The key a replica wait writes in `bucket`'s slot (see `replica_wait/`).
    pub(super) fn replica_mark(&self, bucket: usize) -> String {
        self.in_bucket(bucket, &["replicated"])
    }

    pub(super) fn seen(&self, key: &str) -> String {
        format!("{}:seen:{key}", self.prefix)
    }
    pub(super) fn lease(&self, name: &str) -> String {
        format!("{}:lease:{name}", self.prefix)
    }
    pub(super) fn session_leases(&self) -> String {
        format!("{}:{{sessions}}:leases", self.prefix)
    }
    pub(super) fn idempotency(&self, key: &str) -> String {
        format!("{}:idem:{key}", self.prefix)
    }
}

/// The Redis Cluster slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole key when it
/// has none, modulo 16384.
pub fn slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|b| *b == b'{').and_then(|open| {
        let close = bytes[open + 1..].iter().position(|b| *b == b'}')?;
        (close > 0).then(|| &bytes[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(bytes)) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for byte in bytes {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::run::Run;
    use askbridge_core::{Millis, QuestionId};

    #[test]
    fn a_question_and_everything_about_it_share_a_slot() {
        let keys = Keys::new(DEFAULT_PREFIX);
        let id = QuestionId::random();
        let bucket = question_bucket(id.as_str());
        let slot_of_question = slot(&keys.question(id.as_str()));
        for key in [
            keys.shown(id.as_str()),
            keys.effects(id.as_str()),
            keys.open(bucket),
            keys.pending(bucket),
            keys.done(bucket, "answered"),
            keys.answers(bucket),
            keys.session(bucket, "s"),
            keys.session_pending(bucket, "s"),
            keys.session_done(bucket, "answered", "s"),
            keys.target(bucket, "telegram:-100"),
            keys.events(bucket),
            keys.audit(bucket),
            keys.rules(rule_bucket(&format!("rule-{id}"))),
            keys.rules_for(rule_bucket(&format!("rule-{id}")), "d1g3st"),
            keys.rules_places(rule_bucket(&format!("rule-{id}"))),
        ] {
            assert_eq!(slot(&key), slot_of_question, "{key}");
        }
    }

    #[test]
    fn a_key_is_the_prefix_its_bucket_in_two_digits_and_its_parts() {
        let keys = Keys::new("ab");
        assert_eq!(keys.open(3), "ab:{b03}:open");
        assert_eq!(keys.in_bucket(15, &["x:", "y", ":", "z"]), "ab:{b15}:x:y:z");
        assert_eq!(
            keys.session_done(12, "answered", "s:1"),
            "ab:{b12}:session-done:answered:s:1"
        );
        let id = QuestionId::random();
        assert_eq!(
            keys.question(id.as_str()),
            format!("ab:{{b{:02}}}:q:{id}", question_bucket(id.as_str()))
        );
    }

    #[test]
    fn a_run_and_its_questions_share_a_bucket() {
        let origin = askbridge_core::run::Origin {
            chat: None,
            user: "api".into(),
            user_name: None,
        };
        for _ in 0..50 {
            let run = Run::new("f", "", origin.clone(), "p", Millis(0), Millis(1));
            let bucket = run_bucket(run.id.as_str());
            for index in 0..3 {
                let question = run.question_id(index);
                assert_eq!(question_bucket(question.as_str()), bucket);
            }
        }
    }

    #[test]
    fn buckets_spread_over_slots_and_ids() {
        let keys = Keys::new(DEFAULT_PREFIX);
        let slots: std::collections::BTreeSet<u16> =
            (0..BUCKETS).map(|b| slot(&keys.open(b))).collect();
        assert_eq!(slots.len(), BUCKETS, "every bucket has a slot of its own");
        let mut seen = [0usize; BUCKETS];
        for _ in 0..3200 {
            seen[question_bucket(QuestionId::random().as_str())] += 1;
        }
        assert!(seen.iter().all(|n| *n > 100), "{seen:?}");
        // The reference value from the Redis Cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }
}
