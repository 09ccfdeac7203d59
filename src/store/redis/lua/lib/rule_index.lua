-- The rules' index (`rule_index.rs`), in a rule's bucket: a hash of places (`<digest>/<scope>/`)
-- to the JSON array of the ids of the rules filed there, and a hash of each rule's place, so
-- that a rule stored again or revoked leaves its place. An approval reads its two places in a
-- bucket with one HMGET, however many rules there are.

-- Takes rule `id` out of its place, if it has one.
local function unfile_rule(index, places, id)
    local place = redis.call('HGET', places, id)
    if not place then return end
    redis.call('HDEL', places, id)
    local filed = redis.call('HGET', index, place)
    if not filed then return end
    local kept = {}
    for _, other in ipairs(cjson.decode(filed)) do
        if other ~= id then kept[#kept + 1] = other end
    end
    if #kept == 0 then
        redis.call('HDEL', index, place)
    else
        redis.call('HSET', index, place, cjson.encode(kept))
    end
end

-- Files rule `id` at `place` (after `unfile_rule`: a rule has one place).
local function file_rule(index, places, id, place)
    local filed = redis.call('HGET', index, place)
    local ids = filed and cjson.decode(filed) or {}
    ids[#ids + 1] = id
    redis.call('HSET', index, place, cjson.encode(ids))
    redis.call('HSET', places, id, place)
end
