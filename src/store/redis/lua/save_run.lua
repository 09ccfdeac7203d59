-- Writes a run if `owner` holds it. KEYS: run. ARGV: owner, then the fields as for insert_run,
-- then a TTL in ms (0 for none). Returns 1 when written.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'state', ARGV[3], 'waiting_on', ARGV[4],
    'owner', ARGV[5], 'lease_until', ARGV[6], 'reported', ARGV[7], 'updated_at', ARGV[8])
if ARGV[9] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[9]) end
return 1
