-- Writes a run if `owner` holds it, keeps the lease index in step, and announces a run that
-- parked or ended. KEYS: 1 run, 2 lease index, 3 events stream.
-- ARGV: 1 owner, 2 data, 3 state, 4 waiting_on, 5 new owner, 6 lease_until, 7 reported,
--       8 updated_at, 9 TTL ms (0 for none), 10 lease score ('' when it needs no executor),
--       11 run id, 12 event JSON ('' for none), 13 events maxlen.
-- Returns 1 when written.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'state', ARGV[3], 'waiting_on', ARGV[4],
    'owner', ARGV[5], 'lease_until', ARGV[6], 'reported', ARGV[7], 'updated_at', ARGV[8])
if ARGV[9] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[9]) end
if ARGV[10] ~= '' then
    redis.call('ZADD', KEYS[2], ARGV[10], ARGV[11])
else
    redis.call('ZREM', KEYS[2], ARGV[11])
end
if ARGV[12] ~= '' then
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[13], '*', 'data', ARGV[12])
end
return 1
