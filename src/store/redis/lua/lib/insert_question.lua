-- Creates a question, enters it in every index and announces it, unless its id exists: one
-- atomic step in one bucket, so no crash leaves a question without its index entries or event.
-- K (keys): 1 question, 2 open index, 3 pending index, 4 events stream, 5 the session's
--       pending index (in this bucket), 6.. one target set per target.
-- A session's resolved index is the claim's to write (claim.lua): the ask writes nothing of
-- the session but its pending index.
-- A (arguments, by name):
--   q            the question's JSON as asked (an object without status or resolution)
--   event_head   the `question.asked` event before `q`'s members (see `framed`)
--   event_tail   the event after them
--   deadline     the deadline, ms
--   asked        when it was asked, ms
--   id           the question's id
--   due          first due, ms (the deadline, or a reminder or escalation step before it)
--   target_ttl   a target set's TTL, ms (nil when the question has no target)
-- `checked`: the caller has found that the id does not exist (insert.lua), so it is not asked
-- again. Returns 1 when created, 0 when the id exists (nothing written).
local function insert_question(K, A, checked)
    if not checked and redis.call('EXISTS', K[1]) == 1 then return 0 end
    redis.call('HSET', K[1], 'q', A.q, 'status', 'pending', 'exp', A.deadline)
    redis.call('ZADD', K[2], A.due, A.id)
    redis.call('ZADD', K[3], A.asked, A.id)
    -- No TTL, as the pending index has none: an id leaves it by its claim, the only way a
    -- question leaves pending, and Redis deletes the set when its last id leaves.
    redis.call('ZADD', K[5], A.asked, A.id)
    for i = 6, #K do
        redis.call('SADD', K[i], A.id)
        -- A target's set lives as long as its longest-lived question may need it.
        if redis.call('PTTL', K[i]) < tonumber(A.target_ttl) then
            redis.call('PEXPIRE', K[i], A.target_ttl)
        end
    end
    announce(K[4], EVENTS_MAXLEN, framed(A.event_head, A.q, A.event_tail))
    return 1
end
