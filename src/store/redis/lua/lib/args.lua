-- Named arguments. A script's arguments are one msgpack map of name to value, ARGV[1], written
-- by its struct in `args.rs` (the store's tag, taken off by lib/announce.lua, comes after it):
-- read into a table, so that a script says `a.owner`, not `ARGV[17]`, and an argument added or
-- dropped moves no other. A step of a script made of several has its arguments in a map of their
-- own, read as `a.group.field` (a claim that carries a run ahead saves the run, `run`, and
-- inserts its next question, `next`). Every value is a string. A value that is not needed is not
-- sent: it reads as nil. What is the same for every call (the store's settings: RETENTION,
-- EVENTS_MAXLEN, ...) is not an argument: it is written in above, when the store connects
-- (scripts.rs).
-- Why one map, not `name, value, ...` in ARGV: Redis turns every ARGV element into a Lua string
-- before the script runs, and the names doubled them: cmsgpack builds the table some 2 us a
-- claim faster and 5 us a claim carrying a run ahead (scripts/script_args_bench.py). Positional
-- slots read into a presized table would cost fewer instructions still (see args.rs).
local function named()
    return cmsgpack.unpack(ARGV[1])
end

-- The elements of `t` from `first` on: the part of KEYS that belongs to one step of a script
-- made of several.
local function from(t, first)
    local rest = {}
    for i = first, #t do rest[#rest + 1] = t[i] end
    return rest
end
