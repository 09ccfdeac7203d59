-- Creates a question, enters it in every index and announces it, unless its id exists: one
-- atomic step, so no crash leaves a question without its index entries or its event.
-- KEYS: question, open index, all index, session set, events stream, then one set per target.
-- ARGV: question JSON, deadline ms, created ms, id, session set TTL ms, event JSON, events maxlen.
-- Returns 1 when created, 0 when the id exists (nothing written).
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'q', ARGV[1], 'status', 'pending', 'exp', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
for i = 6, #KEYS do redis.call('SADD', KEYS[i], ARGV[4]) end
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[7], '*', 'data', ARGV[6])
return 1
