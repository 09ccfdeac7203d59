-- Creates a run unless its id exists. KEYS: run. ARGV: data, state, waiting_on, owner,
-- lease_until, reported, updated_at. Returns 1 when created.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'state', ARGV[2], 'waiting_on', ARGV[3],
    'owner', ARGV[4], 'lease_until', ARGV[5], 'reported', ARGV[6], 'updated_at', ARGV[7])
return 1
