-- Stores a rule with its index entry and announces it, in one step: an approval finds it by
-- its action (`rule_index.rs`) from the moment it exists. A rule stored again under its id
-- leaves its old place; when that is under another digest, whose key the caller could not know,
-- nothing is written and that key is returned, for the caller to declare as KEYS[6] and call
-- again (lib/rule_index.lua and lib/announce.lua are prepended).
-- KEYS: 1 the rules hash of its bucket, 2 the bucket's rules by creation time, 3 the index key
-- of its digest, 4 the bucket's hash of each rule's place, 5 the bucket's events stream,
-- 6 (optional) the index key of its old place.
-- ARGV: 1 rule id, 2 rule JSON, 3 created at (ms), 4 its scope in the index, 5 events maxlen.
-- Returns '' when stored, or the key to declare.
local old = redis.call('HGET', KEYS[4], ARGV[1])
if old then
    local key = place_key(old)
    if key ~= KEYS[3] and key ~= KEYS[6] then return key end
    unfile_rule(key == KEYS[3] and KEYS[3] or KEYS[6], KEYS[4], ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
file_rule(KEYS[3], KEYS[4], ARGV[1], ARGV[4])
announce(KEYS[5], ARGV[5], '{"kind":"rule.created","rule":' .. ARGV[2] .. '}')
return ''
