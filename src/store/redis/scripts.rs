//! The Lua scripts, each in its own file under `lua/` (with its KEYS and ARGV documented there),
//! compiled into the binary. `redis::Script` sends them by SHA and loads them on NOSCRIPT.

use redis::Script;
use std::sync::LazyLock;

macro_rules! scripts {
    ($($name:ident => $file:literal),* $(,)?) => {$(
        pub(super) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("lua/", $file))));
    )*};
}

scripts! {
    INSERT => "insert.lua",
    CLAIM => "claim.lua",
    LEASE => "lease.lua",
    RECORD_SHOWN => "record_shown.lua",
    MARK_EFFECT => "mark_effect.lua",
    FINISH => "finish.lua",
    INSERT_RUN => "insert_run.lua",
    ACQUIRE_RUN => "acquire_run.lua",
    SAVE_RUN => "save_run.lua",
}
