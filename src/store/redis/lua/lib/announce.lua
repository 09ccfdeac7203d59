-- Every script that announces takes one more argument after its own: the tag of the store that
-- runs it, taken off ARGV here, before the script reads its arguments. A store hands the events
-- it tags to its own process at once, and its reader skips them in the stream instead of
-- decoding them again (`events.rs`).
local ORIGIN = table.remove(ARGV)
-- Appends an event to its bucket's stream, for every process's reader. The event goes to
-- replicas but not into the AOF: it announces what the same script wrote into the records,
-- which are persisted, and a process whose reader may have missed it (Redis restarted before it
-- read) re-reads its waiters' records when the reader is back (`Events::missed`). Kept out, the
-- AOF grows by about 40 % less per run, and Redis rewrites it that much less often.
local function announce(key, maxlen, event)
    redis.set_repl(redis.REPL_REPLICA)
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'data', event, 'o', ORIGIN)
    redis.set_repl(redis.REPL_ALL)
end

-- The event announcing a record the script stores: the caller's `head`, the record's JSON
-- object without its closing brace, the caller's `tail` (codec.rs, `Frame`, writes both ends:
-- nothing here decides what the event says). The record is sent once, for the record and the
-- event alike.
local function framed(head, object, tail)
    return head .. string.sub(object, 1, -2) .. tail
end
