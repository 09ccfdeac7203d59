-- Files a rule stored before the rules' index had its present shape (`rule_index.rs`): only if
-- it is still stored as read, and not filed yet, so that a rule revoked or stored again
-- meanwhile is left as its own script left it, and an entry never outlives its rule
-- (lib/rule_index.lua is prepended).
-- KEYS: 1 the rules hash of its bucket, 2 the index key of its digest, 3 the bucket's hash of
-- each rule's place.
-- ARGV: 1 rule id, 2 the rule's JSON as read, 3 its scope in the index.
-- Returns 1 when it filed the rule, 0 otherwise.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
file_rule(KEYS[2], KEYS[3], ARGV[1], ARGV[3])
return 1
