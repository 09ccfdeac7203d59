-- The claim-once state machine of `Question::apply`, on the server, with what a resolution must
-- carry: its event, its audit record, and its outbox entry made due.
-- KEYS: question, shown, effects, open index, events stream, audit stream.
-- ARGV: 1 now ms, 2 status if won, 3 resolution JSON if won, 4 expiry resolution JSON,
--       5 '1' if the claim is itself an expiry, 6 retention ms, 7 settle-at ms, 8 id,
--       9 event JSON if won, 10 event JSON if expired, 11 audit JSON if won,
--       12 audit JSON if expired, 13 events maxlen, 14 oldest audit id kept (ms).
-- Returns {outcome, status, resolution JSON}, or {'missing'}.
local fields = redis.call('HMGET', KEYS[1], 'status', 'exp', 'res')
local status, exp = fields[1], fields[2]
if not status then return {'missing'} end
if status ~= 'pending' then return {'already_resolved', status, fields[3]} end
local outcome, new_status, res, event, audit = 'won', ARGV[2], ARGV[3], ARGV[9], ARGV[11]
if ARGV[5] ~= '1' and tonumber(ARGV[1]) >= tonumber(exp) then
    outcome, new_status, res, event, audit = 'expired', 'expired', ARGV[4], ARGV[10], ARGV[12]
end
redis.call('HSET', KEYS[1], 'status', new_status, 'res', res)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[8])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[13], '*', 'data', event)
redis.call('XADD', KEYS[6], 'MINID', '~', ARGV[14], '*', 'data', audit)
return {outcome, new_status, res}
