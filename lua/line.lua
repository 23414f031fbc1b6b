-- The first waiting spots as the drain sees them: the head of the line, merged with spots a
-- holdScore raise released and no regrouping step has moved yet, without spots a lowering
-- holds and no step has moved out yet.
-- needs: _base, _room, _spot, _bucket
-- KEYS: room spots line bks active blk
-- ARGV: limit (at most 200).
-- Reply: vid, ticket, score triples in drain order; or {'ERR', 'RoomNotFound', 0}.
local limit = math.min(200, tonumber(ARGV[1]) or 200)
local room = load_room()
if not room then return err('RoomNotFound') end
local merged = {}
local function take(key)
  local items = redis.call('ZRANGE', key, 0, limit - 1, 'WITHSCORES')
  for i = 1, #items, 2 do merged[#merged + 1] = {items[i], tonumber(items[i + 1])} end
end
take(LINE)
if room.releasing == '1' then
  for _, score in ipairs(redis.call('SMEMBERS', BKS)) do
    if tonumber(score) < room.hold_score then take(bucket(score)) end
  end
end
table.sort(merged, function(a, b) return a[2] < b[2] end)
local out = {}
for i = 1, #merged do
  if #out >= 3 * limit then break end
  local spot = get_spot(merged[i][1])
  if spot and spot.score < room.hold_score then
    out[#out + 1] = merged[i][1]
    out[#out + 1] = spot.ticket
    out[#out + 1] = spot.score
  end
end
return out
