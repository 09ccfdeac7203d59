-- Stores a rule with its index entry and announces it, in one step: an approval finds it by
-- its action (`rule_index.rs`) from the moment it exists. A rule stored again under its id
-- leaves its old place (lib/rule_index.lua and lib/announce.lua are prepended).
-- KEYS: 1 the rules hash of its bucket, 2 the bucket's rules by creation time, 3 the bucket's
-- rules' index, 4 the bucket's hash of each rule's place in 3, 5 the bucket's events stream.
-- ARGV: 1 rule id, 2 rule JSON, 3 created at (ms), 4 its place in the index, 5 events maxlen.
unfile_rule(KEYS[3], KEYS[4], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
file_rule(KEYS[3], KEYS[4], ARGV[1], ARGV[4])
announce(KEYS[5], ARGV[5], '{"kind":"rule.created","rule":' .. ARGV[2] .. '}')
return 1
