-- Marks an effect done, giving the effects set the question's TTL (the set is created after the
-- claim set that TTL, so it must copy it). KEYS: effects, question. ARGV: effect.
-- Returns 1 if new.
local added = redis.call('SADD', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return added
