-- One vote per person on a pending question with a quorum (`tally::apply_vote`), announced, and
-- the outbox entry made due when the quorum is met, in one step in the question's bucket
-- (lib/announce.lua is prepended). The differential test (tests/it/rules.rs) holds it to core's.
-- The voter's mark (`v:<identity>`, HSETNX) is what refuses a second vote by the same person, on
-- any process; `t:<tally>` counts the votes that agree; `votes` holds the votes' JSON objects,
-- comma-joined, so that reading the question and building the event need no decoding here.
-- KEYS: 1 question, 2 open index, 3 events stream.
-- ARGV: 1 voter identity, 2 vote JSON, 3 tally, 4 votes needed, 5 due-if-met ms, 6 id,
--       7 events maxlen, 8-10 the `question.voted` event's pieces (codec.rs, `voted_frame`):
--       8 before the question's members, 9 between them and the votes, 10 after the votes. The
--       script decides the votes (those stored and this one); the pieces say the rest.
-- Returns {'missing'}, or {outcome, votes} with outcome 'resolved', 'duplicate', 'counted' or
-- 'met' and the votes as stored.
local f = redis.call('HMGET', KEYS[1], 'status', 'q', 'votes')
if not f[1] then return {'missing'} end
local stored = f[3] or ''
if f[1] ~= 'pending' then return {'resolved', stored} end
if redis.call('HSETNX', KEYS[1], 'v:' .. ARGV[1], '1') == 0 then return {'duplicate', stored} end
local votes = ARGV[2]
if stored ~= '' then votes = stored .. ',' .. ARGV[2] end
redis.call('HSET', KEYS[1], 'votes', votes)
local outcome = 'counted'
if redis.call('HINCRBY', KEYS[1], 't:' .. ARGV[3], 1) >= tonumber(ARGV[4]) then
    outcome = 'met'
    redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6])
end
announce(KEYS[3], ARGV[7], framed(ARGV[8], f[2], ARGV[9] .. votes .. ARGV[10]))
return {outcome, votes}
