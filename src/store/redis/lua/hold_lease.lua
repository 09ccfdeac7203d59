-- Takes a leader lease for ARGV[1] for ARGV[2] ms, or extends it when ARGV[1] holds it.
-- KEYS: 1 the lease. Returns 1 when held, 0 when another holds it.
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
