-- Creates a question, enters it in every index and announces it, unless its id exists: one
-- atomic step in one bucket, so no crash leaves a question without its index entries or event.
-- K (keys): 1 question, 2 open index, 3 pending index, 4 session set, 5 events stream,
--       6.. one target set per target.
-- A (arguments): 1 question JSON as asked (an object without status or resolution), 2 deadline ms,
--       3 asked ms, 4 id, 5 session set TTL ms, 6 first due ms (the deadline, or a reminder or
--       escalation step before it), 7 events maxlen, 8 target set TTL ms.
-- The event is built here from the question, not sent twice.
-- Returns 1 when created, 0 when the id exists (nothing written).
local function insert_question(K, A)
    if redis.call('EXISTS', K[1]) == 1 then return 0 end
    redis.call('HSET', K[1], 'q', A[1], 'status', 'pending', 'exp', A[2])
    redis.call('ZADD', K[2], A[6], A[4])
    redis.call('ZADD', K[3], A[3], A[4])
    redis.call('SADD', K[4], A[4])
    redis.call('PEXPIRE', K[4], A[5])
    for i = 6, #K do
        redis.call('SADD', K[i], A[4])
        -- A target's set lives as long as its longest-lived question may need it.
        if redis.call('PTTL', K[i]) < tonumber(A[8]) then
            redis.call('PEXPIRE', K[i], A[8])
        end
    end
    local event = '{"kind":"question.asked","question":' .. string.sub(A[1], 1, -2) ..
        ',"status":"pending"}}'
    announce(K[5], A[7], event)
    return 1
end
