-- Entry point: see lib/insert_question.lua (prepended to this file, after lib/args.lua and
-- lib/announce.lua). KEYS: insert_question's, then the session's closed mark in this bucket
-- (kept.rs). Arguments: insert_question's, by name.
-- A question's plain insert into a closed session is refused (-1), in the same step. One EXISTS
-- asks whether the id is taken and whether the session is closed (most asks find neither), in
-- place of insert_question's own: the check costs Redis no call more.
local closed = table.remove(KEYS)
if redis.call('EXISTS', KEYS[1], closed) > 0 then
    if redis.call('EXISTS', closed) == 1 then return -1 end
    return 0
end
return insert_question(KEYS, named(), true)
