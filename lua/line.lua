-- The first waiting spots as the drain sees them: merged order of the eligible buckets.
-- ARGV: limit (at most 200). Returns vid, ticket, score triples in drain order.
local limit = math.min(200, tonumber(ARGV[1]) or 200)
local r = load_room()
if not r then return err('RoomNotFound') end
local merged = {}
for _, b in ipairs(redis.call('SMEMBERS', BKS)) do
  if tonumber(b) < r.hold then
    local items = redis.call('ZRANGE', bucket(b), 0, limit - 1, 'WITHSCORES')
    for i = 1, #items, 2 do merged[#merged + 1] = {items[i], tonumber(items[i + 1]), tonumber(b)} end
  end
end
table.sort(merged, function(a, b) return a[2] < b[2] end)
local out = {}
for i = 1, math.min(limit, #merged) do
  local s = get_spot(merged[i][1])
  out[#out + 1] = merged[i][1]
  out[#out + 1] = s and s.t or -1
  out[#out + 1] = merged[i][3]
end
return out
