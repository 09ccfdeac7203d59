-- Entry point: see lib/insert_question.lua (prepended to this file, after lib/args.lua and
-- lib/announce.lua). Arguments: insert_question's, by name.
-- A closed session's set (KEYS[4], in this bucket) holds the member `!closed` (see kept.rs): a
-- question's plain insert there is refused (-1), in the same step, so no ask costs a command more.
if redis.call('SISMEMBER', KEYS[4], '!closed') == 1 then return -1 end
return insert_question(KEYS, named())
