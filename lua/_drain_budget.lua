-- needs: _base, _admissions, _room, _region_gate
-- How many a drain may admit now (0: none, and nothing more to read): none while the room is
-- not open, before opensAt or while its pre-queue's draw is not made (the pool is not in its
-- drawn order yet: queue/draw.py); else the bank (passthrough: whatever the rate, spending no
-- bank), at most MAX_ADMIT, within free capacity; none while a fail-open room waits for the
-- processes' outage admissions to be booked. Accrues the bank and frees expired slots.
-- failMode open: nothing is dealt while a process may hold outage admissions of this room not
-- yet booked (`fol`, kept by check_in_fail_open.lua: until then every process has booked its),
-- nor for a while after a booking (`foh`: book_fail_open.lua), for processes no register knows.
local function fail_open_held(now)
  local v = redis.call('HMGET', ROOM, @{failMode, failOpenLease, failOpenHold})
  if v[@failMode] ~= 'open' then return false end
  local lease = v[@failOpenLease]
  return (lease ~= false and now >= tonumber(lease)) or now < (tonumber(v[@failOpenHold]) or 0)
end

local function drain_budget(room, now, passthrough)
  if room.status ~= 'open' or now < room.opens_at then return 0 end
  if room.draw_state == 'c' or room.draw_state == 'r' then return 0 end
  accrue(room, now)
  local budget = passthrough and MAX_ADMIT or math.min(MAX_ADMIT, math.floor(room.bank / UNIT))
  if budget < 1 then return 0 end -- the common case: nothing earned yet, nothing to read
  room.watermark = nil
  if room.region_lease then -- a room across regions: its lease bounds the drain
    budget = region_gate(room, now, budget)
    if budget < 1 then return 0 end
  end
  if fail_open_held(now) then return 0 end
  free_expired(now)
  if room.capacity > 0 then
    budget = math.min(budget, room.capacity - redis.call('ZCARD', ACTIVE))
  end
  return math.max(0, budget)
end
