//! The Lua scripts, each in its own file under `lua/` (with its KEYS and ARGV documented there),
//! compiled into the binary. `redis::Script` sends them by SHA and loads them on NOSCRIPT.
//!
//! A step that two scripts share is a function in `lua/lib/`, prepended to each script that
//! calls it: Redis scripts cannot call one another, and parking a run is inserting a question and
//! saving a run in one atomic step.

use redis::Script;
use std::sync::LazyLock;

macro_rules! scripts {
    ($($name:ident => [$($lib:literal),*] $file:literal),* $(,)?) => {$(
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!($(include_str!(concat!("lua/lib/", $lib)),)* include_str!(concat!("lua/", $file))))
        });
    )*};
}

scripts! {
    INSERT => ["args.lua", "announce.lua", "insert_question.lua"] "insert.lua",
    CLAIM => ["args.lua", "announce.lua", "insert_question.lua", "save_run.lua"] "claim.lua",
    LEASE => [] "lease.lua",
    RECORD_SHOWN => [] "record_shown.lua",
    MARK_EFFECT => [] "mark_effect.lua",
    FINISH => [] "finish.lua",
    INSERT_RUN => [] "insert_run.lua",
    ACQUIRE_RUN => [] "acquire_run.lua",
    SAVE_RUN => ["args.lua", "announce.lua", "save_run.lua"] "save_run.lua",
    PARK => ["args.lua", "announce.lua", "insert_question.lua", "save_run.lua"] "park.lua",
    INSERT_PARKED => ["args.lua", "announce.lua", "insert_question.lua", "save_run.lua"] "insert_parked.lua",
    HOLD_LEASE => [] "hold_lease.lua",
    RELEASE_LEASE => [] "release_lease.lua",
    PUT_RULE => ["rule_index.lua", "announce.lua"] "put_rule.lua",
    FILE_RULE => ["rule_index.lua"] "file_rule.lua",
    REVOKE_RULE => ["rule_index.lua", "announce.lua"] "revoke_rule.lua",
    VOTE => ["announce.lua"] "vote.lua",
    DECIDE => ["args.lua", "announce.lua"] "decide.lua",
}
