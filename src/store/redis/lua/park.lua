-- Parks a run on a new question and stores the question, in one step (lib/args.lua,
-- lib/announce.lua, lib/insert_question.lua and lib/save_run.lua are prepended): a run never
-- waits on a question that is not stored, and nothing is written when `owner` no longer holds the
-- run. The question shares the run's bucket.
-- KEYS: 1-7 as save_run's, then insert_question's from 8 on.
-- Arguments, by name: `run.` save_run's, `next.` insert_question's.
-- Returns save_run's code (0 when `owner` no longer holds the run), or -1 when a question with
-- that id exists: then nothing is written, and the caller checks the stored one.
local a = named()
if redis.call('HGET', KEYS[1], 'owner') ~= (a.run.owner or '') then return 0 end
-- The question's event and the run's go out as one entry.
hold_events()
if insert_question(from(KEYS, 8), a.next) == 0 then return -1 end
local code = save_run(KEYS, a.run, true)
release_events()
return code
