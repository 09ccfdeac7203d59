//! Named script arguments. The scripts with many arguments (a claim, an insert, saving or
//! parking a run) take one argument, a msgpack map of name to value, and read it into a table by
//! name (`lua/lib/args.lua`): a claim once fed some forty positional slots, and adding one meant
//! renumbering the rest in Rust and in Lua alike. Each such script's arguments are one struct
//! here, written by one `encode`; the test at the bottom holds the names each writes to the ones
//! its script's header documents, and those to the ones the script reads.
//!
//! Why one msgpack map, not `name, value, ...` in ARGV: Redis makes a Lua string of every ARGV
//! element before the script runs, and parses each as a bulk string before that; the names
//! doubled the strings and cost Redis about 1.2 us per ask, 2 us per claim and 5 us per claim
//! carrying a run ahead more than positional slots, while `cmsgpack.unpack` (built into Redis)
//! built the same table in about the time positional slots read into a table one by one took
//! (`scripts/script_args_bench.py`). Counted in instructions, positional slots read into a
//! presized table are cheaper still (some 13,000 instructions an ask and answer of ~350,000,
//! measured on decode-only scripts before the store's settings left the map): the price of
//! reading by name.
//! Values stay strings (what a script did with `tonumber` is unchanged); a group of a step's
//! arguments is a nested map.
//!
//! A value the script does not need is not sent (an `Option` that is `None`, a flag that is
//! false): it reads as nil there.

use super::codec::Frame;
use redis::{ScriptInvocation, ToRedisArgs};

/// Where a script's named arguments go once written: a script invocation, or (in tests) a
/// decoder of their names.
pub(super) trait Sink {
    /// The arguments, one msgpack map.
    fn packed(&mut self, map: Vec<u8>);
}

impl Sink for ScriptInvocation<'_> {
    fn packed(&mut self, map: Vec<u8>) {
        self.arg(map);
    }
}

/// Writes named arguments as a msgpack map: the script's own, then those of each of its steps by
/// group (a nested map). The map goes to the sink when the `Named` made by [`Named::new`] is
/// dropped, so before anything the caller adds to the invocation after it (the store's tag,
/// which `lua/lib/announce.lua` takes off the end of ARGV): the borrow of the invocation that
/// the `Named` holds makes the compiler keep that order.
pub(super) struct Named<'s, S: Sink> {
    sink: Option<&'s mut S>,
    map: Map<'s>,
    /// Where this map's header is in the buffer, and how many pairs it holds so far.
    header: usize,
    len: u32,
}

/// The buffer a map is written to: its own (the script's map), or its parent's (a group's).
enum Map<'s> {
    Own(Vec<u8>),
    Parent(&'s mut Vec<u8>),
}

impl Map<'_> {
    fn buf(&mut self) -> &mut Vec<u8> {
        match self {
            Map::Own(buf) => buf,
            Map::Parent(buf) => buf,
        }
    }
}

/// Starts a map whose length is written when it ends (map 32: the length is not known first).
fn map_header(buf: &mut Vec<u8>) -> usize {
    buf.push(0xdf);
    buf.extend_from_slice(&[0; 4]);
    buf.len() - 4
}

/// A msgpack string (Lua reads every kind of string or binary alike).
fn string(buf: &mut Vec<u8>, bytes: &[u8]) {
    match bytes.len() {
        len @ 0..32 => buf.push(0xa0 | len as u8),
        len @ 32..256 => buf.extend_from_slice(&[0xd9, len as u8]),
        len @ 256..65536 => {
            buf.push(0xda);
            buf.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            buf.push(0xdb);
            buf.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
    buf.extend_from_slice(bytes);
}

impl<'s, S: Sink> Named<'s, S> {
    /// The script's own arguments.
    pub(super) fn new(sink: &'s mut S) -> Self {
        let mut buf = Vec::with_capacity(512);
        let header = map_header(&mut buf);
        Named {
            sink: Some(sink),
            map: Map::Own(buf),
            header,
            len: 0,
        }
    }

    /// The arguments of one of the script's steps, read as `a.<group>.<name>`.
    pub(super) fn group(&mut self, group: &'static str) -> Named<'_, S> {
        self.len += 1;
        let buf = self.map.buf();
        string(buf, group.as_bytes());
        let header = map_header(buf);
        Named {
            sink: None,
            map: Map::Parent(buf),
            header,
            len: 0,
        }
    }

    /// A value the script reads as `a.<name>`.
    pub(super) fn put<T: ToRedisArgs>(&mut self, name: &'static str, value: T) -> &mut Self {
        self.len += 1;
        let buf = self.map.buf();
        string(buf, name.as_bytes());
        let args = value.to_redis_args();
        debug_assert_eq!(args.len(), 1, "{name} is one value");
        string(buf, &args.concat());
        self
    }

    /// A value sent only when there is one.
    pub(super) fn some<T: ToRedisArgs>(
        &mut self,
        name: &'static str,
        value: Option<T>,
    ) -> &mut Self {
        if let Some(value) = value {
            self.put(name, value);
        }
        self
    }

    /// Text sent only when it is not empty: the script reads `''` as nil, so `a.<name> or ''`
    /// (each value left out is a Lua string and a table entry fewer for Redis to make).
    pub(super) fn text(&mut self, name: &'static str, value: &str) -> &mut Self {
        self.some(name, (!value.is_empty()).then_some(value))
    }

    /// A flag: `'1'` when set, nothing (nil) otherwise.
    pub(super) fn flag(&mut self, name: &'static str, set: bool) -> &mut Self {
        self.some(name, set.then_some("1"))
    }
}

impl<S: Sink> Drop for Named<'_, S> {
    /// Writes the map's length, and hands the script's map to the sink.
    fn drop(&mut self) {
        let (at, len) = (self.header, self.len);
        let buf = self.map.buf();
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        if let (Some(sink), Map::Own(buf)) = (self.sink.take(), &mut self.map) {
            sink.packed(std::mem::take(buf));
        }
    }
}

/// What `lib/insert_question.lua` takes.
#[derive(Debug, Default)]
pub(super) struct InsertArgs<'a> {
    pub(super) q: String,
    /// The `question.asked` event, around `q`.
    pub(super) event: Frame,
    pub(super) deadline: u64,
    pub(super) asked: u64,
    pub(super) id: &'a str,
    pub(super) due: u64,
    /// Sent only for a question with a target.
    pub(super) target_ttl: Option<u64>,
}

impl InsertArgs<'_> {
    pub(super) fn encode<S: Sink>(&self, named: &mut Named<'_, S>) {
        named
            .put("q", &self.q)
            .put("event_head", &self.event.head)
            .put("event_tail", &self.event.tail)
            .put("deadline", self.deadline)
            .put("asked", self.asked)
            .put("id", self.id)
            .put("due", self.due)
            .some("target_ttl", self.target_ttl);
    }
}

/// What `lib/save_run.lua` takes.
#[derive(Debug, Default)]
pub(super) struct SaveArgs<'a> {
    pub(super) owner: &'a str,
    pub(super) data: String,
    pub(super) state: &'static str,
    pub(super) waiting_on: String,
    pub(super) new_owner: String,
    pub(super) lease_until: String,
    pub(super) reported: &'static str,
    pub(super) updated_at: String,
    pub(super) created_at: u64,
    pub(super) ttl: u64,
    pub(super) lease_score: Option<String>,
    pub(super) id: &'a str,
    /// The event announcing it, around `data` (none for a run nobody waits on).
    pub(super) event: Option<Frame>,
}

impl SaveArgs<'_> {
    pub(super) fn encode<S: Sink>(&self, named: &mut Named<'_, S>) {
        named
            .text("owner", self.owner)
            .put("data", &self.data)
            .put("state", self.state)
            .text("waiting_on", &self.waiting_on)
            .text("new_owner", &self.new_owner)
            .text("lease_until", &self.lease_until)
            .put("reported", self.reported)
            .put("updated_at", &self.updated_at)
            .put("created_at", self.created_at)
            .put("ttl", self.ttl)
            .some("lease_score", self.lease_score.as_ref())
            .put("id", self.id)
            .some("event_head", self.event.as_ref().map(|e| &e.head))
            .some("event_tail", self.event.as_ref().map(|e| &e.tail));
    }
}

/// What `park.lua` and `insert_parked.lua` take: the run saved, the question it parks on.
pub(super) fn encode_park<S: Sink>(sink: &mut S, run: &SaveArgs<'_>, next: &InsertArgs<'_>) {
    let mut named = Named::new(sink);
    run.encode(&mut named.group("run"));
    next.encode(&mut named.group("next"));
}

/// What `claim.lua` takes.
#[derive(Debug, Default)]
pub(super) struct ClaimArgs<'a> {
    pub(super) now: u64,
    pub(super) id: &'a str,
    pub(super) outcome: &'static str,
    pub(super) status: &'static str,
    pub(super) res: String,
    pub(super) event: String,
    pub(super) token: String,
    pub(super) settle_at: u64,
    pub(super) session: &'a str,
    pub(super) kind: &'static str,
    pub(super) digest: String,
    pub(super) oldest_audit: u64,
    pub(super) answer_ms: Option<u64>,
    /// The claimer, and until when it would hold the run, when it takes the parked run.
    pub(super) take: Option<(&'a str, u64, &'a str)>,
    pub(super) finish_when_idle: bool,
    pub(super) has_run: bool,
    /// The run carried ahead: as it was, as it is saved, and its next question.
    pub(super) ahead: Option<(u64, SaveArgs<'a>, InsertArgs<'a>)>,
}

impl ClaimArgs<'_> {
    pub(super) fn encode<S: Sink>(&self, sink: &mut S) {
        let mut named = Named::new(sink);
        named
            .put("now", self.now)
            .put("id", self.id)
            .put("outcome", self.outcome)
            .put("status", self.status)
            .put("res", &self.res)
            .put("event", &self.event)
            .put("token", &self.token)
            .put("settle_at", self.settle_at)
            .put("session", self.session)
            .put("kind", self.kind)
            .text("digest", &self.digest)
            .put("oldest_audit", self.oldest_audit)
            .some("answer_ms", self.answer_ms)
            .flag("finish_when_idle", self.finish_when_idle)
            .flag("has_run", self.has_run);
        if let Some((owner, lease_until, run_id)) = self.take {
            named
                .flag("take", true)
                .put("owner", owner)
                .put("lease_until", lease_until)
                .put("run_id", run_id);
        }
        if let Some((was, run, next)) = &self.ahead {
            named.put("was", was);
            run.encode(&mut named.group("run"));
            next.encode(&mut named.group("next"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Records the names written, a group's as `group.name`, from the map itself.
    #[derive(Default)]
    struct Names(BTreeSet<String>);

    impl Sink for Names {
        fn packed(&mut self, map: Vec<u8>) {
            let mut rest = map.as_slice();
            for (name, value) in unpack(&mut rest) {
                let group = match value {
                    Value::Map(pairs) => pairs,
                    Value::Str(_) => vec![(String::new(), Value::Str(Vec::new()))],
                };
                for (inner, value) in group {
                    assert!(matches!(value, Value::Str(_)), "groups hold values");
                    let name = match inner.as_str() {
                        "" => name.clone(),
                        inner => format!("{name}.{inner}"),
                    };
                    assert!(self.0.insert(name.clone()), "{name} written twice");
                }
            }
            assert!(rest.is_empty(), "one map, nothing after it");
        }
    }

    enum Value {
        Str(Vec<u8>),
        Map(Vec<(String, Value)>),
    }

    /// Reads a map as `Named` writes it (the forms cmsgpack reads).
    fn unpack(rest: &mut &[u8]) -> Vec<(String, Value)> {
        let Value::Map(pairs) = value(rest) else {
            panic!("not a map");
        };
        pairs
    }

    fn value(rest: &mut &[u8]) -> Value {
        let mut take = |n: usize| {
            let (head, tail) = rest.split_at(n);
            *rest = tail;
            head.to_vec()
        };
        let tag = take(1)[0];
        let be = |bytes: Vec<u8>| bytes.iter().fold(0usize, |n, b| n << 8 | *b as usize);
        let len = match tag {
            0xa0..=0xbf => (tag & 0x1f) as usize,
            0xd9 => be(take(1)),
            0xda => be(take(2)),
            0xdb => be(take(4)),
            0xdf => {
                let len = be(take(4));
                return Value::Map(
                    (0..len)
                        .map(|_| {
                            let Value::Str(name) = value(rest) else {
                                panic!("a name is a string");
                            };
                            (String::from_utf8(name).unwrap(), value(rest))
                        })
                        .collect(),
                );
            }
            tag => panic!("unexpected msgpack tag {tag:#x}"),
        };
        Value::Str(take(len))
    }

    #[test]
    fn strings_of_every_length_read_back_whole() {
        for len in [0, 31, 32, 255, 256, 65535, 65536] {
            let text = "x".repeat(len);
            let mut packed = Vec::new();
            struct Keep<'a>(&'a mut Vec<u8>);
            impl Sink for Keep<'_> {
                fn packed(&mut self, map: Vec<u8>) {
                    *self.0 = map;
                }
            }
            Named::new(&mut Keep(&mut packed))
                .put("text", &text)
                .put("n", 42u64);
            let pairs = unpack(&mut packed.as_slice());
            let Value::Str(read) = &pairs[0].1 else {
                panic!("a string");
            };
            assert_eq!(read.len(), len);
            assert!(matches!(&pairs[1].1, Value::Str(n) if n == b"42"));
        }
    }

    /// The names a script's header documents: the lines `--   name   what it is` after the
    /// line that starts its arguments' list.
    fn documented(script: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        let mut listing = false;
        for line in script.lines() {
            let Some(comment) = line.strip_prefix("--") else {
                break;
            };
            if comment.contains("(arguments, by name)")
                || comment.starts_with(" Arguments, by name:")
            {
                listing = true;
                continue;
            }
            let Some(entry) = comment.strip_prefix("   ").filter(|_| listing) else {
                listing = listing && comment.starts_with("      ");
                continue;
            };
            if let Some(name) = entry
                .split_whitespace()
                .next()
                .filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                && entry.starts_with(|c: char| c.is_ascii_lowercase())
            {
                names.insert(name.to_owned());
            }
        }
        names
    }

    /// The names a script's body reads from `table` (`a` or `A`): `table.name` and, for a group,
    /// `table.group.name`.
    fn read(script: &str, table: &str) -> BTreeSet<String> {
        let body: String = script
            .lines()
            .filter(|line| !line.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut names = BTreeSet::new();
        let prefix = format!("{table}.");
        let mut rest = body.as_str();
        while let Some(at) = rest.find(&prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            names.insert(name);
        }
        names
    }

    fn grouped(group: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
        names.iter().map(|n| format!("{group}.{n}")).collect()
    }

    const INSERT: &str = include_str!("lua/lib/insert_question.lua");
    const SAVE: &str = include_str!("lua/lib/save_run.lua");
    const CLAIM: &str = include_str!("lua/claim.lua");
    const PARK: &str = include_str!("lua/park.lua");
    const INSERT_PARKED: &str = include_str!("lua/insert_parked.lua");

    /// With every optional argument (a question with a target).
    fn full_insert() -> InsertArgs<'static> {
        InsertArgs {
            target_ttl: Some(1),
            ..InsertArgs::default()
        }
    }

    fn full_save() -> SaveArgs<'static> {
        SaveArgs {
            owner: "w",
            waiting_on: "q".into(),
            new_owner: "w".into(),
            lease_until: "1".into(),
            lease_score: Some("1".into()),
            event: Some(Frame::default()),
            ..SaveArgs::default()
        }
    }

    #[test]
    fn insert_question_writes_what_its_header_documents_and_reads() {
        let mut names = Names::default();
        full_insert().encode(&mut Named::new(&mut names));
        assert_eq!(names.0, documented(INSERT));
        assert_eq!(read(INSERT, "A"), documented(INSERT));
    }

    #[test]
    fn decide_writes_what_its_header_documents_and_reads() {
        const DECIDE: &str = include_str!("lua/decide.lua");
        let mut names = Names::default();
        super::super::decisions::DecideArgs {
            complete: true,
            ..Default::default()
        }
        .encode(&mut Named::new(&mut names));
        assert_eq!(names.0, documented(DECIDE));
        assert_eq!(read(DECIDE, "a"), documented(DECIDE));
    }

    #[test]
    fn save_run_writes_what_its_header_documents_and_reads() {
        let mut names = Names::default();
        full_save().encode(&mut Named::new(&mut names));
        assert_eq!(names.0, documented(SAVE));
        assert_eq!(read(SAVE, "A"), documented(SAVE));
    }

    #[test]
    fn park_writes_a_run_and_a_question_by_group() {
        let mut names = Names::default();
        encode_park(&mut names, &full_save(), &full_insert());
        let mut expected = grouped("run", &documented(SAVE));
        expected.extend(grouped("next", &documented(INSERT)));
        assert_eq!(names.0, expected);
        for script in [PARK, INSERT_PARKED] {
            // The scripts read the groups whole (handing them to the steps) and the owner.
            let read = read(script, "a");
            assert!(
                read.iter()
                    .all(|n| expected.contains(n) || n == "run" || n == "next")
            );
        }
    }

    #[test]
    fn claim_writes_what_its_header_documents_and_reads() {
        let mut names = Names::default();
        ClaimArgs {
            answer_ms: Some(1),
            digest: "d".into(),
            take: Some(("owner", 1, "run")),
            finish_when_idle: true,
            has_run: true,
            ahead: Some((1, full_save(), full_insert())),
            ..ClaimArgs::default()
        }
        .encode(&mut names);
        let own = documented(CLAIM);
        let mut expected = own.clone();
        expected.extend(grouped("run", &documented(SAVE)));
        expected.extend(grouped("next", &documented(INSERT)));
        assert_eq!(names.0, expected);
        for name in read(CLAIM, "a") {
            assert!(
                own.contains(&name) || expected.contains(&name) || name == "run" || name == "next",
                "claim.lua reads a.{name}, which its header does not document"
            );
        }
        // Every documented argument is read.
        let read = read(CLAIM, "a");
        assert!(own.iter().all(|n| read.contains(n)), "{own:?} vs {read:?}");
    }
}
