-- Shared by every room script. Units: times in epoch milliseconds of the room's clock (Redis
-- TIME plus the room's offset); the admission bank in "rate-milliseconds": one admission is
-- UNIT = 60000 units and one ms at a rate of R a minute earns R units, so it stays in integers.
-- Every key is declared in KEYS (see each script's header); the held buckets `b:<score>` are
-- derived from the room key's base "<prefix>r:{<id>}:", so they share its hash tag and slot.
local UNIT = 60000
local BASE = string.sub(ROOM, 1, -5) -- ROOM is "<base>room"

local function fmt(n) return string.format('%.0f', n) end
local function bucket(score) return BASE .. 'b:' .. score end
local function err(code, retry) return {'ERR', code, retry or 0} end

-- The room's clock: `pinned` fixes it (tests compare against a model); `offset` shifts it.
-- Neither is reachable from any HTTP route.
local function room_clock(pinned, offset)
  if pinned > 0 then return pinned + offset end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + offset
end
