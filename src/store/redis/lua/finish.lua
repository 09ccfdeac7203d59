-- Records a resolved question's finished effects, then either takes it out of the open index
-- and its targets' sets (all done) or makes it due again (something to retry): one step.
-- A question shown in more places than the caller's work listed (a delivery late to the settle)
-- stays in the open index as record_shown.lua left it, for a settle that withdraws that one too.
-- KEYS: 1 effects, 2 question, 3 open index, 4 pending index, 5 shown, 6.. one target set per
-- target. ARGV: 1 id, 2 retry-at ms ('' when all is done), 3 the places the caller's work
-- listed ('' for no check: the question is gone), 4.. effects done.
if #ARGV > 3 then
    redis.call('SADD', KEYS[1], unpack(ARGV, 4))
    local ttl = redis.call('PTTL', KEYS[2])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
end
if ARGV[2] ~= '' then
    redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
    return 1
end
if ARGV[3] ~= '' and redis.call('HLEN', KEYS[5]) > tonumber(ARGV[3]) then return 1 end
redis.call('ZREM', KEYS[3], ARGV[1])
-- Only a question that is gone can still be in the pending index here.
redis.call('ZREM', KEYS[4], ARGV[1])
for i = 6, #KEYS do redis.call('SREM', KEYS[i], ARGV[1]) end
return 1
