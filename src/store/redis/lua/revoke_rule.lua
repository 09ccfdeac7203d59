-- Deletes a rule with its index entry and announces it, in one step: every process's rules
-- view drops it, and no approval finds it again (lib/rule_index.lua and lib/announce.lua are
-- prepended).
-- KEYS: 1 the rules hash of its bucket, 2 the bucket's events stream, 3 the bucket's rules by
-- creation time, 4 the bucket's rules' index, 5 the bucket's hash of each rule's place in 4.
-- ARGV: 1 rule id, 2 events maxlen.
-- Returns the rule's JSON, or false when there was none.
local rule = redis.call('HGET', KEYS[1], ARGV[1])
if not rule then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
unfile_rule(KEYS[4], KEYS[5], ARGV[1])
announce(KEYS[2], ARGV[2], '{"kind":"rule.revoked","rule":' .. rule .. '}')
return rule
