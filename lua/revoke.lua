-- Revoke a session by jti or a visitor by vid in this room. ARGV: kind ('j' or 'v'), value,
-- lifetime in ms (the longest token life: after it the entry no longer counts).
-- Reply: 1 when a spot was dropped now, else 0.
-- A vid's spot is dropped now; a jti's spot when it next polls or refreshes, or the drain meets
-- it. `rvn` counts revocations, so an instance re-reads this hash only when it changed.
local kind, value, life = ARGV[1], ARGV[2], tonumber(ARGV[3])
local r = load_room()
if not r then return 0 end
local now = clock(r)
-- A bounded purge of entries past their time, resumed where the last one stopped: old
-- revocations never pile up, whatever their number.
local cursor = redis.call('HGET', ROOM, 'rvc') or '0'
local page = redis.call('HSCAN', RVK, cursor, 'COUNT', 100)
local items = page[2]
for i = 1, #items, 2 do
  if tonumber(items[i + 1]) <= now then redis.call('HDEL', RVK, items[i]) end
end
redis.call('HSET', ROOM, 'rvc', page[1])
local field = kind .. ':' .. value
local untl = math.max(now + life, tonumber(redis.call('HGET', RVK, field)) or 0)
redis.call('HSET', RVK, field, fmt(untl))
redis.call('HINCRBY', ROOM, 'rvn', 1)
if kind == 'v' then
  local s = get_spot(value)
  if s then drop_spot(value, s); return 1 end
end
return 0
