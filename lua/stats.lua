-- Live figures of a room: status, waiting, held, active, admittedLastMinute, dealtTotal,
-- opensAt, tickets dealt, peak active, clock.
-- Reply: those ten, in that order (counts as integers, times in ms).
local r = load_room()
if not r then return err('RoomNotFound') end
local now = clock(r)
local eligible, held = waiting_counts()
return {r.st, eligible, held, active_count(now), admitted_last_minute(now), r.dealt, fmt(r.oa),
  r.tk, r.peak, fmt(now)}
