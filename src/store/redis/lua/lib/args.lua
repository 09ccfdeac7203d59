-- Named arguments. A script's ARGV is `name, value, name, value, ...`, written by its struct in
-- `args.rs` (the store's tag, taken off by lib/announce.lua, is not one of them): read into a
-- table, so that a script says `a.owner`, not `ARGV[17]`, and an argument added or dropped moves
-- no other. A name `group.field` is `a.group.field`: the arguments of one step of a script made
-- of several (a claim that carries a run ahead saves the run, `run.`, and inserts its next
-- question, `next.`). A value that is not needed is not sent: it reads as nil.
local function named()
    local a = {}
    for i = 1, #ARGV, 2 do
        local name, value = ARGV[i], ARGV[i + 1]
        local dot = string.find(name, '.', 1, true)
        if dot then
            local group = string.sub(name, 1, dot - 1)
            a[group] = a[group] or {}
            a[group][string.sub(name, dot + 1)] = value
        else
            a[name] = value
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
