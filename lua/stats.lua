-- Live figures of a room.
-- needs: _base, _room, _spot, _admissions
-- KEYS: room spots line active adm bks blk waits
-- ARGV: none.
-- Reply: status, waiting, held, active, admittedLastMinute, dealtTotal, opensAt ms, tickets
--   dealt, peak active, now ms; or {'ERR', 'RoomNotFound', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
local eligible, held = waiting_counts()
return {room.status, eligible, held, active_count(now), admitted_last_minute(now), room.dealt,
  fmt(room.opens_at), room.tickets, room.peak, fmt(now)}
