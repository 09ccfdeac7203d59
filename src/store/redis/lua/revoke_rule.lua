-- Deletes a rule with its index entry and announces it, in one step: every process's rules
-- view drops it, and no approval finds it again (lib/rule_index.lua and lib/announce.lua are
-- prepended). The caller reads the rule's place first and declares its key; when the rule has
-- moved since, nothing is written and the caller reads it again.
-- KEYS: 1 the rules hash of its bucket, 2 the bucket's events stream, 3 the bucket's rules by
-- creation time, 4 the bucket's hash of each rule's place, 5 (optional) its place's key.
-- ARGV: 1 rule id, 2 events maxlen.
-- Returns {} when there was no such rule, {'moved'}, or {'revoked', the rule's JSON}.
local rule = redis.call('HGET', KEYS[1], ARGV[1])
if not rule then return {} end
local place = redis.call('HGET', KEYS[4], ARGV[1])
if place then
    if place_key(place) ~= KEYS[5] then return {'moved'} end
    unfile_rule(KEYS[5], KEYS[4], ARGV[1])
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
announce(KEYS[2], ARGV[2], '{"kind":"rule.revoked","rule":' .. rule .. '}')
return {'revoked', rule}
