-- Revoke a session by jti or a visitor by vid in this room. A vid's spot is dropped now; a jti's
-- when it next polls or refreshes, or the drain meets it. `rvn` counts revocations, so an
-- instance re-reads this hash only when it changed.
-- needs: _base, _room, _spot, _purge, _use
-- KEYS: room spots line active rvk bks blk used
-- ARGV: kind ('j' or 'v'), value, lifetime ms (the longest token life: after it the entry no
--   longer counts).
-- Reply: 1 when a spot was dropped now, else 0.
local kind, value, lifetime = ARGV[1], ARGV[2], tonumber(ARGV[3])
local room = load_room()
if not room then return 0 end
local now = clock(room)
purge_revocations(@revokePurgeCursor, now, 100)
local field = kind .. ':' .. value
local until_ms = math.max(now + lifetime, tonumber(redis.call('HGET', RVK, field)) or 0)
redis.call('HSET', RVK, field, fmt(until_ms))
redis.call('HINCRBY', ROOM, @revocationCount, 1)
if kind == 'v' then
  local spot = get_spot(value)
  if spot then forget_use(value, spot); drop_spot(value, spot); return 1 end
end
return 0
