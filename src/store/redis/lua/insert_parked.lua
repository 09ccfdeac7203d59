-- Stores a new run already parked on its first question, and the question, in one step: what
-- insert_run.lua and then park.lua would write, for a caller that waits for the first question
-- anyway (lib/args.lua, lib/announce.lua, lib/insert_question.lua and lib/save_run.lua are
-- prepended). Nothing is written when a run with that id exists. The question shares the run's
-- bucket. The run is created with save_run's fields at once: `fresh` needs no owner to fence on.
-- KEYS and arguments: as park.lua's (`run.owner` is the owner the run is created for).
-- Returns 0 when a run with that id exists, -1 when a question with that id does, else
-- save_run's code.
local a = named()
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
-- The question's event and the run's go out as one entry.
hold_events()
if insert_question(from(KEYS, 8), a.next) == 0 then return -1 end
local code = save_run(KEYS, a.run, true, 'new')
release_events()
return code
