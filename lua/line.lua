-- The first waiting spots as the drain sees them: the head of the line, merged with spots a
-- holdScore raise released and no regrouping step has moved yet, without spots a lowering
-- holds and no step has moved out yet.
-- ARGV: limit (at most 200). Returns vid, ticket, score triples in drain order.
local limit = math.min(200, tonumber(ARGV[1]) or 200)
local r = load_room()
if not r then return err('RoomNotFound') end
local merged = {}
local function take(key)
  local items = redis.call('ZRANGE', key, 0, limit - 1, 'WITHSCORES')
  for i = 1, #items, 2 do merged[#merged + 1] = {items[i], tonumber(items[i + 1])} end
end
take(LINE)
if r.rel == '1' then
  for _, b in ipairs(redis.call('SMEMBERS', BKS)) do
    if tonumber(b) < r.hold then take(bucket(b)) end
  end
end
table.sort(merged, function(a, b) return a[2] < b[2] end)
local out = {}
for i = 1, #merged do
  if #out >= 3 * limit then break end
  local s = get_spot(merged[i][1])
  if s and s.sc < r.hold then
    out[#out + 1] = merged[i][1]
    out[#out + 1] = s.t
    out[#out + 1] = s.sc
  end
end
return out
