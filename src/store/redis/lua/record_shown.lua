-- Records where a question was shown, keeping the hash's TTL once it has one. When the question
-- is no longer pending (a delivery late to its resolution, which the settle that ran may have
-- missed), it is made due in the open index at `due_at`, or kept due sooner, in the same step:
-- any process's sweeper then withdraws the message, whatever becomes of the one that showed it.
-- KEYS: shown, question, open index. ARGV: target, reference, id, due_at ms.
-- Returns 1 when the question is no longer pending (resolved, not gone), else 0.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
local status = redis.call('HGET', KEYS[2], 'status')
if status and status ~= 'pending' then
    local due = redis.call('ZSCORE', KEYS[3], ARGV[3])
    if not due or tonumber(due) > tonumber(ARGV[4]) then
        redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
    end
    return 1
end
return 0
