-- The rules' index (`rule_index.rs`), in a rule's bucket: a hash per action digest
-- (`rules:for:<digest>`) from a scope to the JSON array of the ids of the rules filed there, and
-- a hash of each rule's place (`<that key>\n<scope>`), so that a rule stored again or revoked
-- leaves it. An approval asks each bucket for its digest's key: a key that is not there (every
-- action no rule was made for) costs the same with 100,000 rules as with none.

-- The key of a place.
local function place_key(place)
    return string.match(place, '^([^\n]*)\n')
end

-- Takes rule `id` out of its place, if it has one; `index` is the place's key.
local function unfile_rule(index, places, id)
    local place = redis.call('HGET', places, id)
    if not place then return end
    redis.call('HDEL', places, id)
    local scope = string.match(place, '^[^\n]*\n(.*)$')
    local filed = redis.call('HGET', index, scope)
    if not filed then return end
    local kept = {}
    for _, other in ipairs(cjson.decode(filed)) do
        if other ~= id then kept[#kept + 1] = other end
    end
    if #kept == 0 then
        redis.call('HDEL', index, scope)
    else
        redis.call('HSET', index, scope, cjson.encode(kept))
    end
end

-- Files rule `id` in `index` under `scope` (after `unfile_rule`: a rule has one place).
local function file_rule(index, places, id, scope)
    local filed = redis.call('HGET', index, scope)
    local ids = filed and cjson.decode(filed) or {}
    ids[#ids + 1] = id
    redis.call('HSET', index, scope, cjson.encode(ids))
    redis.call('HSET', places, id, index .. '\n' .. scope)
end
