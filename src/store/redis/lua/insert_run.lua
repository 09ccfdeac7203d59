-- Creates a run unless its id exists, and enters it in the lease index when it needs an
-- executor, and in the live-runs index. KEYS: 1 run fields, 2 run data, 3 lease index, 4 live-runs
-- index. ARGV: 1 data, 2 state, 3 waiting_on, 4 owner, 5 lease_until, 6 reported, 7 updated_at,
-- 8 lease score ('' when not indexed), 9 run id, 10 created_at.
-- Returns 1 when created.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'waiting_on', ARGV[3],
    'owner', ARGV[4], 'lease_until', ARGV[5], 'reported', ARGV[6], 'updated_at', ARGV[7])
if ARGV[8] ~= '' then redis.call('ZADD', KEYS[3], ARGV[8], ARGV[9]) end
redis.call('ZADD', KEYS[4], ARGV[10], ARGV[9])
return 1
