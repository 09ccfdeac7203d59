-- Leases due entries of the open index: they are pushed to the lease's end, so no other sweeper
-- takes them meanwhile. KEYS: open index. ARGV: now ms, lease-until ms, limit.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return ids
