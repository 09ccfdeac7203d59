-- Gives a leader lease up if ARGV[1] holds it. KEYS: 1 the lease.
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
