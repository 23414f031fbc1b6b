-- needs: _base, _admissions, _room
-- How many a drain may admit now (0: none, and nothing more to read): none while the room is
-- not open, before opensAt or while its pre-queue's draw is not made (the pool is not in its
-- drawn order yet: queue/draw.py); else the bank (passthrough: whatever the rate, spending no
-- bank), at most MAX_ADMIT, within free capacity. Accrues the bank and frees expired slots.
local function drain_budget(room, now, passthrough)
  if room.status ~= 'open' or now < room.opens_at then return 0 end
  if room.draw_state == 'c' or room.draw_state == 'r' then return 0 end
  accrue(room, now)
  local budget = passthrough and MAX_ADMIT or math.min(MAX_ADMIT, math.floor(room.bank / UNIT))
  if budget < 1 then return 0 end -- the common case: nothing earned yet, nothing to read
  free_expired(now)
  if room.capacity > 0 then
    budget = math.min(budget, room.capacity - redis.call('ZCARD', ACTIVE))
  end
  return math.max(0, budget)
end
