-- `Run::acquire` on the server (the differential test, tests/it/rules.rs, holds it to core's).
-- KEYS: 1 run fields, 2 run data, 3 lease index.
-- ARGV: 1 'answer' or 'recovery', 2 question id, 3 owner, 4 now, 5 lease_until, 6 run id.
-- Returns the run's fields and its data (field, value, ..., 'data', JSON) when taken, an empty
-- list otherwise.
local f = redis.call('HMGET', KEYS[1], 'state', 'waiting_on', 'lease_until', 'reported')
local state, waiting_on, lease, reported = f[1], f[2], tonumber(f[3]) or 0, f[4]
if not state then return {} end
local allowed
if ARGV[1] == 'answer' then
    allowed = state == 'waiting' and waiting_on == ARGV[2]
else
    local unfinished = state == 'running' or ((state == 'done' or state == 'failed') and reported ~= '1')
    allowed = unfinished and lease <= tonumber(ARGV[4])
end
if not allowed then return {} end
if state == 'waiting' then state = 'running' end
redis.call('HSET', KEYS[1], 'state', state, 'owner', ARGV[3], 'lease_until', ARGV[5], 'updated_at', ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6])
local run = redis.call('HGETALL', KEYS[1])
table.insert(run, 'data')
table.insert(run, redis.call('GET', KEYS[2]) or '')
return run
