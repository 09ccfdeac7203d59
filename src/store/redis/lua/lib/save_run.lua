-- Writes a run if `owner` holds it, keeps the lease index in step, announces a run that parked
-- or ended, and tells a parking run whether its question was resolved meanwhile.
-- K (keys): 1 run fields, 2 run data, 3 lease index, 4 events stream, 5 the question it waits on
--       (the run's own key when none), 6 the live-runs index, 7 the ended-runs index.
-- A (arguments): 1 owner, 2 data, 3 state, 4 waiting_on, 5 new owner, 6 lease_until, 7 reported,
--       8 updated_at, 9 TTL ms (0 for none), 10 lease score ('' when it needs no executor),
--       11 run id, 12 the event's kind ('' for none), 13 events maxlen, 14 the fields kept
--       apart as JSON members (`,"state":...`), for the event, 15 created_at.
-- `fresh`: the caller has checked that `owner` holds the run and has just stored the question
-- it waits on (parking with the question, or a claim carrying the run ahead), so neither is
-- looked at again. `was` says where the run is in the indexes already, so that they are not
-- written again: 'parked' when it waits on a question now and is saved waiting on another (a
-- claim carrying it ahead: in the live-runs index, out of the lease index); 'new' when it is
-- being created (in neither); nil when the caller does not know.
-- Returns 0 when `owner` no longer holds it, 1 when written, 2 when written waiting on a
-- question that is no longer pending.
local function save_run(K, A, fresh, was)
    if not fresh and redis.call('HGET', K[1], 'owner') ~= A[1] then return 0 end
    redis.call('SET', K[2], A[2])
    redis.call('HSET', K[1], 'state', A[3], 'waiting_on', A[4],
        'owner', A[5], 'lease_until', A[6], 'reported', A[7], 'updated_at', A[8])
    if A[9] ~= '0' then
        redis.call('PEXPIRE', K[1], A[9])
        redis.call('PEXPIRE', K[2], A[9])
    end
    if A[10] ~= '' then
        redis.call('ZADD', K[3], A[10], A[11])
    elseif was == nil then
        redis.call('ZREM', K[3], A[11])
    end
    -- The ops page's indexes: live runs by start, ended ones by their last change.
    if A[3] == 'done' or A[3] == 'failed' then
        redis.call('ZREM', K[6], A[11])
        redis.call('ZADD', K[7], A[8], A[11])
    elseif was ~= 'parked' then
        redis.call('ZADD', K[6], A[15], A[11])
    end
    if A[12] ~= '' then
        local event = '{"kind":"' .. A[12] .. '","run":' .. string.sub(A[2], 1, -2) ..
            A[14] .. '}}'
        announce(K[4], A[13], event)
    end
    if not fresh and A[3] == 'waiting' and K[5] ~= K[1] then
        local status = redis.call('HGET', K[5], 'status')
        if status and status ~= 'pending' then return 2 end
    end
    return 1
end
