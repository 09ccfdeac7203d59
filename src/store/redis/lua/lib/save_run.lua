-- Writes a run if `owner` holds it, keeps the lease index in step, announces a run that parked
-- or ended, and tells a parking run whether its question was resolved meanwhile.
-- K (keys): 1 run fields, 2 run data, 3 lease index, 4 events stream, 5 the question it waits on
--       (the run's own key when none), 6 the live-runs index, 7 the ended-runs index.
-- A (arguments, by name):
--   owner        who must hold the run for it to be written (nil: nobody, a run waiting)
--   data         the run's JSON without the fields below
--   state        its state
--   waiting_on   the question it waits on (nil for none)
--   new_owner    its owner once written (nil for none)
--   lease_until  its lease's end, ms (nil for none)
--   reported     '1' when its end was reported
--   updated_at   its last change, ms
--   created_at   when it started, ms
--   ttl          its TTL, ms ('0' for none)
--   lease_score  its score in the lease index (nil when it needs no executor)
--   id           the run's id
--   event_head   the event announcing it, before `data`'s members (nil for none: see `framed`)
--   event_tail   the event after them
-- `fresh`: the caller has checked that `owner` holds the run and has just stored the question
-- it waits on (parking with the question, or a claim carrying the run ahead), so neither is
-- looked at again. `was` says where the run is in the indexes already, so that they are not
-- written again: 'parked' when it waits on a question now and is saved waiting on another (a
-- claim carrying it ahead: in the live-runs index, out of the lease index); 'new' when it is
-- being created (in neither); nil when the caller does not know.
-- Returns 0 when `owner` no longer holds it, 1 when written, 2 when written waiting on a
-- question that is no longer pending.
local function save_run(K, A, fresh, was)
    if not fresh and redis.call('HGET', K[1], 'owner') ~= (A.owner or '') then return 0 end
    redis.call('SET', K[2], A.data)
    redis.call('HSET', K[1], 'state', A.state, 'waiting_on', A.waiting_on or '',
        'owner', A.new_owner or '', 'lease_until', A.lease_until or '', 'reported', A.reported,
        'updated_at', A.updated_at)
    if A.ttl ~= '0' then
        redis.call('PEXPIRE', K[1], A.ttl)
        redis.call('PEXPIRE', K[2], A.ttl)
    end
    if A.lease_score then
        redis.call('ZADD', K[3], A.lease_score, A.id)
    elseif was == nil then
        redis.call('ZREM', K[3], A.id)
    end
    -- The ops page's indexes: live runs by start, ended ones by their last change.
    if A.state == 'done' or A.state == 'failed' then
        redis.call('ZREM', K[6], A.id)
        redis.call('ZADD', K[7], A.updated_at, A.id)
    elseif was ~= 'parked' then
        redis.call('ZADD', K[6], A.created_at, A.id)
    end
    if A.event_head then
        announce(K[4], EVENTS_MAXLEN, framed(A.event_head, A.data, A.event_tail))
    end
    if not fresh and A.state == 'waiting' and K[5] ~= K[1] then
        local status = redis.call('HGET', K[5], 'status')
        if status and status ~= 'pending' then return 2 end
    end
    return 1
end
