-- The elements of `t` from `first` on: the part of KEYS or ARGV that belongs to one step of a
-- script made of several (parking a run is inserting a question and saving the run).
local function from(t, first)
    local rest = {}
    for i = first, #t do rest[#rest + 1] = t[i] end
    return rest
end
