-- needs: _base
-- A room across regions (queue/regions/): this region admits only what the coordinator's
-- lease allows. The lease (`rgl`, written by apply_lease.lua) is
-- 'epoch:ceiling:watermark:expires:fallback': the room's admission counter (`dealt`) may reach
-- `ceiling`, only those who arrived at or before `watermark` (room clock ms) are admitted, and
-- after `expires` (room clock ms) the fallback holds: 0 pauses, a share s in (0, 1] admits at
-- s of the room's rate from the expiry on (counted from the ceiling) and within s of its
-- capacity, in this region's own order. A room in one region has no `rgl`: this is never read.
local function region_gate(room, now, budget)
  local _, ceiling, watermark, expires, fallback =
    room.region_lease:match('^(%d+):(%-?%d+):(%-?%d+):(%-?%d+):([%d%.]*)$')
  ceiling, expires = tonumber(ceiling), tonumber(expires)
  if not ceiling then return 0 end -- unreadable: admit nothing rather than guess
  if now < expires then
    room.watermark = tonumber(watermark)
    return math.min(budget, ceiling - room.dealt)
  end
  local share = tonumber(fallback) or 0
  if share <= 0 then return 0 end
  local allowed = ceiling + math.floor((now - expires) * room.rate * share / 60000)
  budget = math.min(budget, allowed - room.dealt)
  if room.capacity > 0 then
    budget = math.min(budget, math.floor(room.capacity * share) - redis.call('ZCARD', ACTIVE))
  end
  return budget
end
