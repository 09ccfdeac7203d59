-- Named arguments. A script's ARGV is `name, value, name, value, ...`, written by its struct in
-- `args.rs` (the store's tag, taken off by lib/announce.lua, is not one of them): read into a
-- table, so that a script says `a.owner`, not `ARGV[17]`, and an argument added or dropped moves
-- no other. The pair `'.', group` starts the arguments of one step of a script made of several,
-- read as `a.group.field` (a claim that carries a run ahead saves the run, `run`, and inserts its
-- next question, `next`); a group's arguments come after the script's own. A value that is not
-- needed is not sent: it reads as nil.
-- Why a marker, not `group.field` names split here: this runs on every claim, and splitting each
-- name (string.find, string.sub) cost Redis about 10 us a claim of some 40 arguments, three
-- times what the loop costs now (the resume benchmark's Redis CPU).
local function named()
    local a = {}
    local t = a
    for i = 1, #ARGV, 2 do
        local name, value = ARGV[i], ARGV[i + 1]
        if name == '.' then
            t = {}
            a[value] = t
        else
            t[name] = value
        end
    end
    return a
end

-- The elements of `t` from `first` on: the part of KEYS that belongs to one step of a script
-- made of several.
local function from(t, first)
    local rest = {}
    for i = first, #t do rest[#rest + 1] = t[i] end
    return rest
end
