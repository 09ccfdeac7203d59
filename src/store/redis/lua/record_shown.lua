-- Records where a question was shown, keeping the hash's TTL once it has one.
-- KEYS: shown, question. ARGV: target, reference.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
