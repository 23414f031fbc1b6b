-- Live figures of a room.
-- needs: _base, _room, _spot, _admissions
-- KEYS: room spots line active adm bks blk waits
-- ARGV: none.
-- Reply: script_replies.STATS, built by name: status, waiting, held, active, admittedLastMinute,
--   dealtTotal, opensAt ms, tickets dealt, peak active, now ms; or {'ERR', 'RoomNotFound', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
local eligible, held = waiting_counts()
return @STATS{status = room.status, waiting = eligible, held = held, active = active_count(now),
  admittedLastMinute = admitted_last_minute(now), dealtTotal = room.dealt,
  opensAt = fmt(room.opens_at), tickets = room.tickets, peakActive = room.peak, now = fmt(now)}
