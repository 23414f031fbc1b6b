-- needs: _base
-- The expiry rules, written once. A waiting spot is abandoned once `seen` is abandonAfterSec
-- behind; an admission is gone a minute after it expired (the minute lets a late refresh or
-- poll still hear "admitted").
local ADMISSION_GRACE = 60000
local function abandoned(seen, abandon_after, now) return seen + abandon_after * 1000 <= now end
local function admission_gone(expires, now) return now > expires + ADMISSION_GRACE end

-- Last-seen, booked ahead: a poll finding `seen` still in the future books nothing; one finding
-- it past books `seen` = now + min(abandonAfterSec / 2, 150 s). A spot is abandoned at seen +
-- abandonAfterSec, so it is never dropped sooner than abandonAfterSec after its last poll, nor
-- more than that booking later (capped, so a day-long abandonAfterSec is not half a day late),
-- and a visitor polling every 15 s (abandonAfterSec 300) books one poll in eleven.
local SEEN_BOOKING_MAX = 150000 -- ms; keep in step with the reference model
local function seen_booking(abandon_after, now)
  return now + math.min(abandon_after * 500, SEEN_BOOKING_MAX)
end
