-- Writes a run if `owner` holds it, keeps the lease index in step, announces a run that parked
-- or ended, and tells a parking run whether its question was resolved meanwhile.
-- KEYS: 1 run fields, 2 run data, 3 lease index, 4 events stream, 5 the question it waits on
--       (the run's own key when none).
-- ARGV: 1 owner, 2 data, 3 state, 4 waiting_on, 5 new owner, 6 lease_until, 7 reported,
--       8 updated_at, 9 TTL ms (0 for none), 10 lease score ('' when it needs no executor),
--       11 run id, 12 the event's kind ('' for none), 13 events maxlen, 14 the fields kept
--       apart as JSON members (`,"state":...`), for the event.
-- Returns 0 when `owner` no longer holds it, 1 when written, 2 when written waiting on a
-- question that is no longer pending.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'waiting_on', ARGV[4],
    'owner', ARGV[5], 'lease_until', ARGV[6], 'reported', ARGV[7], 'updated_at', ARGV[8])
if ARGV[9] ~= '0' then
    redis.call('PEXPIRE', KEYS[1], ARGV[9])
    redis.call('PEXPIRE', KEYS[2], ARGV[9])
end
if ARGV[10] ~= '' then
    redis.call('ZADD', KEYS[3], ARGV[10], ARGV[11])
else
    redis.call('ZREM', KEYS[3], ARGV[11])
end
if ARGV[12] ~= '' then
    local event = '{"kind":"' .. ARGV[12] .. '","run":' .. string.sub(ARGV[2], 1, -2) ..
        ARGV[14] .. '}}'
    redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[13], '*', 'data', event)
end
if ARGV[3] == 'waiting' and KEYS[5] ~= KEYS[1] then
    local status = redis.call('HGET', KEYS[5], 'status')
    if status and status ~= 'pending' then return 2 end
end
return 1
