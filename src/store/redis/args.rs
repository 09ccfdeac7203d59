//! Named script arguments. The scripts with many arguments (a claim, an insert, saving or
//! parking a run) take ARGV as `name, value, name, value, ...` and read it into a table by name
//! (`lua/lib/args.lua`): a claim once fed some forty positional slots, and adding one meant
//! renumbering the rest in Rust and in Lua alike. Each such script's arguments are one struct
//! here, written by one `encode`; the test at the bottom holds the names each writes to the ones
//! its script's header documents, and those to the ones the script reads.
//!
//! A value the script does not need is not sent (an `Option` that is `None`, a flag that is
//! false): it reads as nil there.

use super::codec::Frame;
use redis::{ScriptInvocation, ToRedisArgs};

/// Where named arguments go: a script invocation, or (in tests) a list of the names.
pub(super) trait Sink {
    fn pair<T: ToRedisArgs>(&mut self, name: &str, value: T);
    /// Starts the arguments of one of the script's steps (`lua/lib/args.lua` reads the pair
    /// `'.', group`).
    fn group(&mut self, group: &'static str);
}

impl Sink for ScriptInvocation<'_> {
    fn pair<T: ToRedisArgs>(&mut self, name: &str, value: T) {
        self.arg(name).arg(value);
    }

    fn group(&mut self, group: &'static str) {
        self.arg(".").arg(group);
    }
}

/// Writes named arguments: the script's own, then those of each of its steps by group.
pub(super) struct Named<'s, S: Sink> {
    sink: &'s mut S,
}

impl<'s, S: Sink> Named<'s, S> {
    /// The script's own arguments.
    pub(super) fn new(sink: &'s mut S) -> Self {
        Named { sink }
    }

    /// The arguments of one of the script's steps, read as `a.<group>.<name>`: they come after
    /// the script's own (a name written after a group belongs to that group).
    pub(super) fn group(&mut self, group: &'static str) -> Named<'_, S> {
        self.sink.group(group);
        Named { sink: self.sink }
    }

    /// A value the script reads as `a.<name>`.
    pub(super) fn put<T: ToRedisArgs>(&mut self, name: &'static str, value: T) -> &mut Self {
        self.sink.pair(name, value);
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

    /// A flag: `'1'` when set, nothing (nil) otherwise.
    pub(super) fn flag(&mut self, name: &'static str, set: bool) -> &mut Self {
        self.some(name, set.then_some("1"))
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
    pub(super) session_ttl: u64,
    pub(super) session_keep: u64,
    pub(super) due: u64,
    pub(super) maxlen: usize,
    pub(super) target_ttl: u64,
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
            .put("session_ttl", self.session_ttl)
            .put("session_keep", self.session_keep)
            .put("due", self.due)
            .put("maxlen", self.maxlen)
            .put("target_ttl", self.target_ttl);
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
    pub(super) maxlen: usize,
}

impl SaveArgs<'_> {
    pub(super) fn encode<S: Sink>(&self, named: &mut Named<'_, S>) {
        named
            .put("owner", self.owner)
            .put("data", &self.data)
            .put("state", self.state)
            .put("waiting_on", &self.waiting_on)
            .put("new_owner", &self.new_owner)
            .put("lease_until", &self.lease_until)
            .put("reported", self.reported)
            .put("updated_at", &self.updated_at)
            .put("created_at", self.created_at)
            .put("ttl", self.ttl)
            .some("lease_score", self.lease_score.as_ref())
            .put("id", self.id)
            .some("event_head", self.event.as_ref().map(|e| &e.head))
            .some("event_tail", self.event.as_ref().map(|e| &e.tail))
            .put("maxlen", self.maxlen);
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
    pub(super) retention: u64,
    pub(super) settle_at: u64,
    pub(super) session: &'a str,
    pub(super) kind: &'static str,
    pub(super) digest: String,
    pub(super) maxlen: usize,
    pub(super) oldest_audit: u64,
    pub(super) answer_ms: Option<u64>,
    pub(super) answers_kept: usize,
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
            .put("retention", self.retention)
            .put("settle_at", self.settle_at)
            .put("session", self.session)
            .put("kind", self.kind)
            .put("digest", &self.digest)
            .put("maxlen", self.maxlen)
            .put("oldest_audit", self.oldest_audit)
            .some("answer_ms", self.answer_ms)
            .put("answers_kept", self.answers_kept)
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

    /// Records the names written, a group's as `group.name`.
    #[derive(Default)]
    struct Names(BTreeSet<String>, &'static str);

    impl Sink for Names {
        fn pair<T: ToRedisArgs>(&mut self, name: &str, _value: T) {
            let name = match self.1 {
                "" => name.to_owned(),
                group => format!("{group}.{name}"),
            };
            assert!(!self.0.contains(&name), "{name} written twice");
            self.0.insert(name);
        }

        fn group(&mut self, group: &'static str) {
            assert!(!group.is_empty() && group != ".", "a group needs a name");
            self.1 = group;
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

    fn full_save() -> SaveArgs<'static> {
        SaveArgs {
            lease_score: Some("1".into()),
            event: Some(Frame::default()),
            ..SaveArgs::default()
        }
    }

    #[test]
    fn insert_question_writes_what_its_header_documents_and_reads() {
        let mut names = Names::default();
        InsertArgs::default().encode(&mut Named::new(&mut names));
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
        encode_park(&mut names, &full_save(), &InsertArgs::default());
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
            take: Some(("owner", 1, "run")),
            finish_when_idle: true,
            has_run: true,
            ahead: Some((1, full_save(), InsertArgs::default())),
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
