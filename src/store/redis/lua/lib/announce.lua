-- Every script that announces takes one more argument after its own: the tag of the store that
-- runs it, taken off ARGV here, before the script reads its arguments. A store hands the events
-- it tags to its own process at once, and its reader skips them in the stream instead of
-- decoding them again (`events.rs`).
local ORIGIN = table.remove(ARGV)

-- Appends up to three events to a bucket's stream as one entry, for every process's reader: a
-- `data` field per event, in order, then the tag. The entry goes to replicas but not into the
-- AOF: it announces what the script wrote into the records, which are persisted, and a process
-- whose reader may have missed it (Redis restarted before it read) re-reads its waiters' records
-- when the reader is back (`Events::missed`). Kept out, the AOF grows by about 40 % less per run,
-- and Redis rewrites it that much less often. (One call per count, not an argument table built
-- and unpacked: that cost the interpreter more than the calls it saved.)
-- A stream is capped in entries (XADD's MAXLEN), so an entry of n events trims it to `maxlen` / n:
-- the stream keeps about `maxlen` events' worth of bytes however they are packed. Capped at
-- `maxlen` entries whatever they held, the full streams grew by one event (~300 B) per run
-- started. Where entries of one and of several events mix, a stream may keep as few as
-- `maxlen` / 3 entries for a moment; a reader that falls behind further re-reads, as above.
local function append_events(key, maxlen, e1, e2, e3)
    redis.set_repl(redis.REPL_REPLICA)
    if e3 then
        redis.call('XADD', key, 'MAXLEN', '~', math.ceil(maxlen / 3), '*', 'data', e1, 'data', e2,
            'data', e3, 'o', ORIGIN)
    elseif e2 then
        redis.call('XADD', key, 'MAXLEN', '~', math.ceil(maxlen / 2), '*', 'data', e1, 'data', e2,
            'o', ORIGIN)
    else
        redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'data', e1, 'o', ORIGIN)
    end
    redis.set_repl(redis.REPL_ALL)
end

-- Whether events are held (`hold_events`), and those held so far: their stream, and up to
-- three events in order.
local holding = false
local held_key, held_maxlen, h1, h2, h3

-- Appends what is held, as one entry.
local function flush_held()
    if h1 then append_events(held_key, held_maxlen, h1, h2, h3) end
    h1, h2, h3 = nil, nil, nil
end

-- Announces an event: at once, or with the others of this step when they are held.
local function announce(key, maxlen, event)
    if not holding then
        append_events(key, maxlen, event)
        return
    end
    -- A step's events share its bucket's stream; another stream, or a fourth event, starts an
    -- entry of its own.
    if h3 or (h1 and held_key ~= key) then flush_held() end
    held_key, held_maxlen = key, maxlen
    if not h1 then h1 = event elseif not h2 then h2 = event else h3 = event end
end

-- Holds what the script announces from here on, to append it as one entry (`release_events`).
-- Why: a claim that carries a run ahead announces three events (the answer, the next question,
-- the run parked on it), and each XADD was a call from Lua, a stream entry with its own id and
-- tag, and three more values in every reader's reply. One entry costs one of each.
local function hold_events()
    holding = true
end

-- Appends what `hold_events` held, as one entry, and announces at once again.
local function release_events()
    flush_held()
    holding = false
end

-- The event announcing a record the script stores: the caller's `head`, the record's JSON
-- object without its closing brace, the caller's `tail` (codec.rs, `Frame`, writes both ends:
-- nothing here decides what the event says). The record is sent once, for the record and the
-- event alike.
local function framed(head, object, tail)
    return head .. string.sub(object, 1, -2) .. tail
end
