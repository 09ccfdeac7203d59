-- The claim-once state machine of `Question::apply`, on the server, with everything a
-- resolution carries: its event, its audit record, its outbox entry made due, its place in the
-- resolved index, and — when the claimer asks — the run parked on the question, taken for it.
-- (lib/args.lua, lib/announce.lua, lib/insert_question.lua and lib/save_run.lua are prepended.)
-- KEYS: 1 question, 2 shown, 3 effects, 4 open index, 5 pending index, 6 resolved index of the
--       winning status, 7 resolved index of `expired`, 8 events stream, 9 audit stream,
--       10 recent answer times, 11 the run's fields (the question key again when there is
--       none), 12 the run lease index, 13 the run's data; with a run carried ahead (ARGV 24),
--       14-20 save_run's keys for it and 21.. insert_question's for its next question.
-- ARGV: 1 now ms, 2 status if won, 3 resolution JSON if won, 4 expiry resolution JSON,
--       5 '1' if the claim is itself an expiry, 6 retention ms, 7 settle-at ms, 8 id,
--       9 the event's kind if won, 10 session, 11 question kind, 12 action digest ('' none),
--       13 events maxlen, 14 oldest audit id kept (ms),
--       15 answer time ms if won as answered (else ''), 16 '1' to take the parked run,
--       17 owner, 18 lease until ms, 19 run id, 20 answer times kept, 21 '1' when the
--       resolution has no effect of its own (no callback, no rule): finish it here if it was
--       shown nowhere and any run waiting on it is handed over, 22 '1' when the question has a
--       run, 23 this attempt's token (a retry after a lost reply sends the same one),
--       24 the `updated_at` of the run as the claimer carried it ahead ('' for none): when the
--       claim wins and the run still waits on the question as it was then, the run is saved
--       parked on its next question (ARGV 25-39, save_run's) and that question stored (ARGV
--       40.., insert_question's) instead of being taken: the answer and the next question in
--       one step. Otherwise (an expiry, a run changed meanwhile, the next id taken) it is taken.
-- The event is the stored question with its new status and resolution; the audit record keeps
-- the parts an `AuditEntry` is rebuilt from.
-- Returns {outcome, status, resolution JSON, shown (target, reference, ...), effects done,
-- the run's fields and data when taken (field, value, ..., 'data', JSON), 1 when finished here
-- else 0, the token of the attempt that won, 1 when the run was carried ahead else 0}, or
-- {'missing'}.
local fields = redis.call('HMGET', KEYS[1], 'status', 'exp', 'res', 'q', 'ct')
local status, exp = fields[1], fields[2]
if not status then return {'missing'} end
if status ~= 'pending' then
    -- A retry of this very attempt (its reply was lost): say whether it carried the run ahead.
    local ahead = 0
    if ARGV[24] ~= '' and fields[5] == ARGV[23] then
        local r = redis.call('HMGET', KEYS[11], 'waiting_on', 'updated_at')
        if r[1] == ARGV[28] and r[2] == ARGV[32] then ahead = 1 end
    end
    return {'already_resolved', status, fields[3], redis.call('HGETALL', KEYS[2]),
        redis.call('SMEMBERS', KEYS[3]), {}, 0, fields[5] or '', ahead}
end
local outcome, new_status, res, kind, done = 'won', ARGV[2], ARGV[3], ARGV[9], KEYS[6]
if ARGV[5] ~= '1' and tonumber(ARGV[1]) >= tonumber(exp) then
    outcome, new_status, res, kind, done = 'expired', 'expired', ARGV[4], 'question.expired', KEYS[7]
end
local event = '{"kind":"' .. kind .. '","question":' .. string.sub(fields[4], 1, -2) ..
    ',"status":"' .. new_status .. '","resolution":' .. res .. '}}' 
-- Where it was shown and which effects are done: most questions have neither (one EXISTS tells),
-- and a key that does not exist needs no TTL (record_shown.lua and mark_effect.lua copy the
-- question's).
local shown, effects = {}, {}
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
    shown, effects = redis.call('HGETALL', KEYS[2]), redis.call('SMEMBERS', KEYS[3])
end
redis.call('HSET', KEYS[1], 'status', new_status, 'res', res, 'ct', ARGV[23])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
if #shown > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[6]) end
if #effects > 0 then redis.call('PEXPIRE', KEYS[3], ARGV[6]) end
redis.call('ZREM', KEYS[5], ARGV[8])
redis.call('ZADD', done, ARGV[1], ARGV[8])
announce(KEYS[8], ARGV[13], event)
redis.call('XADD', KEYS[9], 'MINID', '~', ARGV[14], '*', 'q', ARGV[8], 'st', new_status,
    'r', res, 's', ARGV[10], 'k', ARGV[11], 'd', ARGV[12])
-- The list holds the newest ARGV[20] times (read with LRANGE to that length) and up to as many
-- older ones: trimmed once it holds twice that, not on every answer.
if outcome == 'won' and ARGV[15] ~= '' then
    local kept = tonumber(ARGV[20])
    if redis.call('LPUSH', KEYS[10], ARGV[15]) >= 2 * kept then
        redis.call('LTRIM', KEYS[10], 0, kept - 1)
    end
end
local run, ahead = {}, 0
if ARGV[16] == '1' then
    local r = redis.call('HMGET', KEYS[11], 'state', 'waiting_on', 'updated_at', 'owner')
    if r[1] == 'waiting' and r[2] == ARGV[8] then
        -- The owner as save_run checks it, so that nothing is inserted that it would not save.
        if outcome == 'won' and ARGV[24] ~= '' and r[3] == ARGV[24] and r[4] == ARGV[25]
            and insert_question(from(KEYS, 21), from(ARGV, 40)) == 1 then
            save_run(from(KEYS, 14), from(ARGV, 25), true, 'parked')
            ahead = 1
        else
            redis.call('HSET', KEYS[11], 'state', 'running', 'owner', ARGV[17],
                'lease_until', ARGV[18], 'updated_at', ARGV[1])
            redis.call('ZADD', KEYS[12], ARGV[18], ARGV[19])
            run = redis.call('HGETALL', KEYS[11])
            table.insert(run, 'data')
            table.insert(run, redis.call('GET', KEYS[13]) or '')
        end
    end
end
-- Out of the open index when nothing is left to do; otherwise due when the effects settle.
local finished = 0
if ARGV[21] == '1' and #shown == 0 and (ARGV[22] ~= '1' or #run > 0 or ahead == 1) then
    redis.call('ZREM', KEYS[4], ARGV[8])
    finished = 1
else
    redis.call('ZADD', KEYS[4], ARGV[7], ARGV[8])
end
return {outcome, new_status, res, shown, effects, run, finished, ARGV[23], ahead}
