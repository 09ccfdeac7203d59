-- Creates a question, enters it in every index and announces it, unless its id exists: one
-- atomic step in one bucket, so no crash leaves a question without its index entries or event.
-- KEYS: 1 question, 2 open index, 3 pending index, 4 session set, 5 events stream,
--       6.. one target set per target.
-- ARGV: 1 question JSON as asked (an object without status or resolution), 2 deadline ms,
--       3 asked ms, 4 id, 5 session set TTL ms, 6 (unused), 7 events maxlen, 8 target set TTL ms.
-- The event is built here from the question, not sent twice.
-- Returns 1 when created, 0 when the id exists (nothing written).
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'q', ARGV[1], 'status', 'pending', 'exp', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
for i = 6, #KEYS do
    redis.call('SADD', KEYS[i], ARGV[4])
    -- A target's set lives as long as its longest-lived question may need it.
    if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[8]) then
        redis.call('PEXPIRE', KEYS[i], ARGV[8])
    end
end
local event = '{"kind":"question.asked","question":' .. string.sub(ARGV[1], 1, -2) ..
    ',"status":"pending"}}'
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[7], '*', 'data', event)
return 1
