-- needs: _base
-- The room's clock: `pinned` fixes it (tests compare against a model); `offset` shifts it.
-- Neither is reachable from any HTTP route.
local function room_clock(pinned, offset)
  if pinned > 0 then return pinned + offset end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + offset
end
