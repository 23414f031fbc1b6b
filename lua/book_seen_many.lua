-- Book the last-seen of many waiting spots at once: the far polls a process answered from its
-- snapshot in the last second (queue/line/seen_bookings.py), one call per room per process per
-- second. Each record is rewritten around its `seen` field, its rest kept as it was.
-- needs: _clock
-- KEYS: room spots
-- ARGV: generation, then for each spot: vid, ticket, ahead (ms: seen becomes at least now + it).
-- Reply: the vids whose spot is not there waiting under that ticket (gone, another ticket,
--   admitted), every vid when the generation changed.
local generation = ARGV[1]
local room = redis.call('HMGET', ROOM, @{generation, pinnedClock, clockOffset})
local vids = {}
for i = 2, #ARGV, 3 do vids[#vids + 1] = ARGV[i] end
if room[@generation] ~= generation or #vids == 0 then return vids end
local now = room_clock(tonumber(room[@pinnedClock]) or 0, tonumber(room[@clockOffset]) or 0)
local raws = redis.call('HMGET', SPOTS, unpack(vids))
local writes, gone = {}, {}
for j = 1, #vids do
  local raw, i = raws[j], 2 + (j - 1) * 3
  local spot_ticket, score, seen, rest
  if raw then
    @SPOT~(raw){ticket = spot_ticket, score = score, state = 'w', seen = seen, ... = rest}
  end
  if not spot_ticket or spot_ticket ~= ARGV[i + 1] then
    gone[#gone + 1] = vids[j]
  else
    local until_ms = now + tonumber(ARGV[i + 2])
    if tonumber(seen) < until_ms then
      writes[#writes + 1] = vids[j]
      writes[#writes + 1] = @SPOT{ticket = spot_ticket, score = score, state = 'w',
        seen = string.format('%.0f', until_ms), ... = rest}
    end
  end
end
if #writes > 0 then redis.call('HSET', SPOTS, unpack(writes)) end
return gone
