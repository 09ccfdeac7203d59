-- `Run::acquire` on the server. KEYS: run. ARGV: 'answer' or 'recovery', question id, owner,
-- now, lease_until. Returns the run's data when taken, nil otherwise.
local f = redis.call('HMGET', KEYS[1], 'state', 'waiting_on', 'lease_until', 'reported')
local state, waiting_on, lease, reported = f[1], f[2], tonumber(f[3]) or 0, f[4]
if not state then return false end
local allowed
if ARGV[1] == 'answer' then
    allowed = state == 'waiting' and waiting_on == ARGV[2]
else
    local unfinished = state == 'running' or ((state == 'done' or state == 'failed') and reported ~= '1')
    allowed = unfinished and lease <= tonumber(ARGV[4])
end
if not allowed then return false end
if state == 'waiting' then state = 'running' end
redis.call('HSET', KEYS[1], 'state', state, 'owner', ARGV[3], 'lease_until', ARGV[5], 'updated_at', ARGV[4])
return redis.call('HGET', KEYS[1], 'data')
