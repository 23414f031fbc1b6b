-- needs: _base
-- The expiry rules, written once. A waiting spot is abandoned once `seen` is abandonAfterSec
-- behind; an admission is gone a minute after it expired (the minute lets a late refresh or
-- poll still hear "admitted").
local ADMISSION_GRACE = 60000
local function abandoned(seen, abandon_after, now) return seen + abandon_after * 1000 <= now end
local function admission_gone(expires, now) return now > expires + ADMISSION_GRACE end

-- Last-seen, booked ahead: a poll finding `seen` far enough ahead books nothing; one finding it
-- short books `seen` = now + lead + min(abandonAfterSec / 2, 150 s). A spot is abandoned at
-- seen + abandonAfterSec. The lead follows the spot's own cadence (docs/queue.md, invariant 7):
-- told to poll every I ms, it is kept max(abandonAfterSec, 3 I) after its last poll, so lead =
-- max(0, 3 I - abandonAfterSec) and a poll finding `seen` less than the lead ahead books again.
-- So a spot is never dropped sooner than that after its last poll, nor more than the booking
-- later (capped, so a day-long abandonAfterSec is not half a day late); a visitor polling every
-- 15 s (abandonAfterSec 300) books one poll in eleven, a far one every few minutes each poll.
-- A far poll answered from a snapshot (queue/line/far_poll.py) books max(min(abandonAfterSec / 2,
-- 150 s), 2 I) beyond the lead instead, through book_seen_many: every other poll, and a spot
-- is then dropped at most about 5 I after its last poll (plus a sweep pass).
-- A room's gracePeriodSec (a phone asleep cannot poll) is added to the lead: such a spot is kept
-- max(abandonAfterSec, 3 I) + gracePeriodSec after its last poll, and since the grace is booked
-- into `seen`, the drain, the sweep and keptUntil (seen + abandonAfterSec) honour it unchanged.
-- These constants are written in from Python (far_poll.SEEN_BOOKING_MAX_MS,
-- poll_cadence.MISSED_POLLS) by the assembler (queue/connection/lua_scripts.py).
local SEEN_BOOKING_MAX = $SEEN_BOOKING_MAX -- ms
local MISSED_POLLS = $MISSED_POLLS -- a spot is dropped after missing about this many of its own polls
local function seen_lead(interval, abandon_after, grace)
  return math.max(0, MISSED_POLLS * (interval or 0) - abandon_after * 1000) + (grace or 0) * 1000
end
local function seen_booking(abandon_after, now, lead)
  return now + (lead or 0) + math.min(abandon_after * 500, SEEN_BOOKING_MAX)
end
