//! The Lua scripts, each in its own file under `lua/` (with its KEYS and ARGV documented there),
//! compiled into the binary. `redis::Script` sends them by SHA and loads them on NOSCRIPT.
//!
//! A step that two scripts share is a function in `lua/lib/`, prepended to each script that
//! calls it: Redis scripts cannot call one another, and parking a run is inserting a question and
//! saving a run in one atomic step.
//!
//! The scripts that take named arguments (`lib/args.lua`) begin with this store's settings
//! ([`Scripts::new`]), written in when the store connects, not sent with each call: they are the
//! same for every call, and Redis makes a Lua string of every argument and cmsgpack a table entry
//! of it. Left out of the calls, they saved 3 % of the instructions Redis ran per ask and answer
//! (`scripts/redis_replay.py --callgrind`). A store whose settings differ loads scripts of its
//! own (another SHA), so processes sharing a Redis may differ.

use super::claim::ANSWERS_KEPT;
use super::events::EVENTS_MAXLEN;
use redis::Script;
use std::sync::LazyLock;
use std::time::Duration;

macro_rules! scripts {
    ($($name:ident => [$($lib:literal),*] $file:literal),* $(,)?) => {$(
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!($(include_str!(concat!("lua/lib/", $lib)),)* include_str!(concat!("lua/", $file))))
        });
    )*};
}

scripts! {
    LEASE => [] "lease.lua",
    RECORD_SHOWN => [] "record_shown.lua",
    MARK_EFFECT => [] "mark_effect.lua",
    FINISH => [] "finish.lua",
    INSERT_RUN => [] "insert_run.lua",
    ACQUIRE_RUN => [] "acquire_run.lua",
    HOLD_LEASE => [] "hold_lease.lua",
    RELEASE_LEASE => [] "release_lease.lua",
    PUT_RULE => ["rule_index.lua", "announce.lua"] "put_rule.lua",
    FILE_RULE => ["rule_index.lua"] "file_rule.lua",
    REVOKE_RULE => ["rule_index.lua", "announce.lua"] "revoke_rule.lua",
    VOTE => ["announce.lua"] "vote.lua",
}

/// How much longer than it must a session's resolved index is kept when a claim extends it: the
/// claims within that hour find it far enough ahead and write no expiry (nor trim it).
const SESSION_SLACK: Duration = Duration::from_secs(3600);

macro_rules! named {
    ($($name:ident => [$($lib:literal),*] $file:literal),* $(,)?) => {
        /// The scripts that take named arguments, with this store's settings written in.
        pub(super) struct Scripts {
            $(pub(super) $name: Script,)*
        }

        impl Scripts {
            pub(super) fn new(retention: Duration) -> Self {
                let settings = settings(retention);
                Self {$(
                    $name: Script::new(&format!("{settings}{}", concat!(
                        "\n",
                        include_str!("lua/lib/args.lua"),
                        $(include_str!(concat!("lua/lib/", $lib)),)*
                        include_str!(concat!("lua/", $file)),
                    ))),
                )*}
            }
        }
    };
}

named! {
    insert => ["announce.lua", "insert_question.lua"] "insert.lua",
    claim => ["announce.lua", "insert_question.lua", "save_run.lua"] "claim.lua",
    save_run => ["announce.lua", "save_run.lua"] "save_run.lua",
    park => ["announce.lua", "insert_question.lua", "save_run.lua"] "park.lua",
    insert_parked => ["announce.lua", "insert_question.lua", "save_run.lua"] "insert_parked.lua",
    decide => ["announce.lua"] "decide.lua",
}

/// The settings line: Lua locals every function of the script sees (as upvalues, no lookup).
fn settings(retention: Duration) -> String {
    // A session's resolved index lives as long as its newest question is kept, and then some.
    let session_ttl = retention;
    format!(
        "-- This store's settings (scripts.rs): RETENTION, how long a resolved question is kept, \
         ms; SESSION_TTL, the least TTL a session's resolved index must have after a claim, ms, \
         and SESSION_KEEP, the TTL it is given when it has less; EVENTS_MAXLEN, an events stream's length; ANSWERS_KEPT, \
         how many answer times are read.\n\
         local RETENTION, SESSION_TTL, SESSION_KEEP, EVENTS_MAXLEN, ANSWERS_KEPT = \
         '{}', {}, '{}', '{EVENTS_MAXLEN}', {ANSWERS_KEPT}",
        retention.as_millis(),
        session_ttl.as_millis(),
        (session_ttl + SESSION_SLACK).as_millis(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_are_written_as_lua_locals() {
        let line = settings(Duration::from_secs(7 * 24 * 3600));
        assert!(line.starts_with("-- This store's settings"), "{line}");
        assert!(
            line.ends_with(
                "local RETENTION, SESSION_TTL, SESSION_KEEP, EVENTS_MAXLEN, ANSWERS_KEPT = \
                 '604800000', 604800000, '608400000', '1000', 125"
            ),
            "{line}"
        );
    }
}
