-- A claim on the server: the claim-once step of `Question::apply` made atomic, with everything a
-- resolution carries: its event, its audit record, its outbox entry made due, its place in the
-- resolved index, and — when the claimer asks — the run parked on the question, taken for it or
-- carried ahead. (lib/args.lua, lib/announce.lua, lib/insert_question.lua and lib/save_run.lua
-- are prepended.)
-- The caller has applied `Question::apply` to the question as pending, so it sends what a claim
-- on a pending question becomes (won, or an expiry when late) with its event; this script only
-- decides whether the question is still pending. The differential test (tests/it/rules.rs) holds
-- what is left here of the rules (taking the run, finishing at once) to core's and the other
-- stores'.
-- KEYS: 1 question, 2 shown, 3 effects, 4 open index, 5 pending index, 6 resolved index of the
--       resulting status, 7 events stream, 8 audit stream, 9 recent answer times, 10 the run's
--       fields (the question key again when there is none), 11 the run lease index, 12 the run's
--       data, 13 the session's pending index (in this bucket), 14 the session's resolved index
--       of the resulting status (in this bucket); with a run carried ahead (`was`), 15-21
--       save_run's keys for it and 22.. insert_question's for its next question.
-- Arguments, by name:
--   now               the claim's time, ms
--   id                the question's id
--   outcome           'won' or 'expired': what the claim does to a pending question
--   status            the status it gives
--   res               the resolution's JSON
--   event             the event announcing it, JSON
--   token             this attempt's token (a retry after a lost reply sends the same one)
--   settle_at         when its outbox entry is due, ms
--   session           the question's session, for the audit record
--   kind              the question's kind, for the audit record
--   digest            the action's digest (nil for none), for the audit record
--   oldest_audit      the oldest audit id kept, ms
--   answer_ms         the time it took to answer (nil unless won as answered)
--   take              '1' to take the parked run (nil otherwise)
--   owner             the claimer, as the run's owner (with take)
--   lease_until       until when the claimer holds the run, ms (with take)
--   run_id            the run's id (with take)
--   finish_when_idle  '1' when the resolution has no effect of its own (no callback, no rule):
--                     finish it here if it was shown nowhere and any run waiting on it is
--                     handed over (`Claimed::idle`)
--   has_run           '1' when the question has a run
--   was               the `updated_at` of the run as the claimer carried it ahead (nil for
--                     none): when the claim wins and the run still waits on the question as it
--                     was then, the run is saved parked on its next question (`run.`, save_run's
--                     arguments) and that question stored (`next.`, insert_question's) instead
--                     of being taken: the answer and the next question in one step. Otherwise
--                     (a run changed meanwhile, the next id taken) it is taken.
-- The audit record keeps the parts an `AuditEntry` is rebuilt from.
-- Returns {outcome, status, resolution JSON, shown (target, reference, ...), effects done,
-- the run's fields and data when taken (field, value, ..., 'data', JSON), 1 when finished here
-- else 0, the token of the attempt that won, 1 when the run was carried ahead else 0}, or
-- {'missing'}.
local a = named()
local fields = redis.call('HMGET', KEYS[1], 'status', 'res', 'ct')
local status = fields[1]
if not status then return {'missing'} end
if status ~= 'pending' then
    -- A retry of this very attempt (its reply was lost): say whether it carried the run ahead.
    local ahead = 0
    if a.was and fields[3] == a.token then
        local r = redis.call('HMGET', KEYS[10], 'waiting_on', 'updated_at')
        if r[1] == (a.run.waiting_on or '') and r[2] == a.run.updated_at then ahead = 1 end
    end
    return {'already_resolved', status, fields[2], redis.call('HGETALL', KEYS[2]),
        redis.call('SMEMBERS', KEYS[3]), {}, 0, fields[3] or '', ahead}
end
-- Where it was shown and which effects are done: most questions have neither (one EXISTS tells),
-- and a key that does not exist needs no TTL (record_shown.lua and mark_effect.lua copy the
-- question's).
local shown, effects = {}, {}
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
    shown, effects = redis.call('HGETALL', KEYS[2]), redis.call('SMEMBERS', KEYS[3])
end
redis.call('HSET', KEYS[1], 'status', a.status, 'res', a.res, 'ct', a.token)
redis.call('PEXPIRE', KEYS[1], RETENTION)
if #shown > 0 then redis.call('PEXPIRE', KEYS[2], RETENTION) end
if #effects > 0 then redis.call('PEXPIRE', KEYS[3], RETENTION) end
redis.call('ZREM', KEYS[5], a.id)
redis.call('ZADD', KEYS[6], a.now, a.id)
-- The answer's event, and those of a run carried ahead, go out as one entry (at the end).
hold_events()
announce(KEYS[7], EVENTS_MAXLEN, a.event)
redis.call('XADD', KEYS[8], 'MINID', '~', a.oldest_audit, '*', 'q', a.id, 'st', a.status,
    'r', a.res, 's', a.session, 'k', a.kind, 'd', a.digest or '')
-- The list holds the newest `ANSWERS_KEPT` times (read with LRANGE to that length) and up to as
-- many older ones: trimmed once it holds twice that, not on every answer.
if a.answer_ms then
    if redis.call('LPUSH', KEYS[9], a.answer_ms) >= 2 * ANSWERS_KEPT then
        redis.call('LTRIM', KEYS[9], 0, ANSWERS_KEPT - 1)
    end
end
local run, ahead = {}, 0
if a.take then
    local r = redis.call('HMGET', KEYS[10], 'state', 'waiting_on', 'updated_at', 'owner')
    if r[1] == 'waiting' and r[2] == a.id then
        -- The owner as save_run checks it, so that nothing is inserted that it would not save.
        if a.was and r[3] == a.was and r[4] == (a.run.owner or '')
            and insert_question(from(KEYS, 22), a.next) == 1 then
            save_run(from(KEYS, 15), a.run, true, 'parked')
            ahead = 1
        else
            redis.call('HSET', KEYS[10], 'state', 'running', 'owner', a.owner,
                'lease_until', a.lease_until, 'updated_at', a.now)
            redis.call('ZADD', KEYS[11], a.lease_until, a.run_id)
            run = redis.call('HGETALL', KEYS[10])
            table.insert(run, 'data')
            table.insert(run, redis.call('GET', KEYS[12]) or '')
        end
    end
end
-- Out of the session's pending index after the next question of a run carried ahead is in it
-- (same session, same bucket): the index is never left empty between the two, so Redis does not
-- delete the set only to make it again.
redis.call('ZREM', KEYS[13], a.id)
-- Into the session's resolved index: its history and resolved listings read a page of it, not
-- every id the session had. Its TTL is extended only when it would expire too soon (most claims
-- of a session find it far enough ahead: a read, no write to the AOF), and then the ids whose
-- question has outlived the retention leave it, so that a session that lives for months does
-- not keep them all. An index without a TTL was made by this very ZADD (each claim gives one):
-- nothing to trim, as in every run's own session.
redis.call('ZADD', KEYS[14], a.now, a.id)
local ttl = redis.call('PTTL', KEYS[14])
if ttl < SESSION_TTL then
    redis.call('PEXPIRE', KEYS[14], SESSION_KEEP)
    if ttl >= 0 then
        redis.call('ZREMRANGEBYSCORE', KEYS[14], '-inf', '(' .. (tonumber(a.now) - RETENTION))
    end
end
-- Out of the open index when nothing is left to do; otherwise due when the effects settle.
local finished = 0
if a.finish_when_idle and #shown == 0 and (not a.has_run or #run > 0 or ahead == 1) then
    redis.call('ZREM', KEYS[4], a.id)
    finished = 1
else
    redis.call('ZADD', KEYS[4], a.settle_at, a.id)
end
release_events()
return {a.outcome, a.status, a.res, shown, effects, run, finished, a.token, ahead}
