-- A batch's decisions on a pending question, recorded without resolving it and announced, with
-- the outbox entry made due when they complete the batch, in one step in the question's bucket
-- (lib/args.lua and lib/announce.lua are prepended). The rules (first decision per action wins,
-- all or none; complete when every action is decided) are core's `batch::apply_decisions`,
-- applied by the caller to its snapshot; this script only checks that the snapshot is still the
-- stored question's decisions (`dn`, how many there are, only grows), so the caller's reading
-- holds. The store conformance suite runs the same cases on every store.
-- KEYS: 1 question, 2 open index, 3 events stream.
-- Arguments, by name:
--   count     how many decisions the caller's snapshot holds
--   entries   the new decisions' JSON objects, comma-joined
--   added     how many they are
--   complete  '1' when with them every action is decided (nil otherwise)
--   due       when the outbox entry is due then, ms
--   id        the question's id
--   event     the `question.voted` event announcing the question with them, JSON
-- Returns {'missing'}, {'resolved'}, {'stale'} (decisions were recorded since the snapshot:
-- the caller reads the question again) or {'recorded'}.
local a = named()
local f = redis.call('HMGET', KEYS[1], 'status', 'dn', 'decisions')
if not f[1] then return {'missing'} end
if f[1] ~= 'pending' then return {'resolved'} end
if (f[2] or '0') ~= a.count then return {'stale'} end
local joined = a.entries
if f[3] and f[3] ~= '' then joined = f[3] .. ',' .. a.entries end
redis.call('HSET', KEYS[1], 'decisions', joined, 'dn', tonumber(a.count) + tonumber(a.added))
if a.complete then redis.call('ZADD', KEYS[2], a.due, a.id) end
announce(KEYS[3], EVENTS_MAXLEN, a.event)
return {'recorded'}
