-- needs: _base
-- A spot record (hash SPOTS, field = vid):
--   ticket|score|state|seen|session jti|network tag|since|expires|deal number
-- state 'w' (waiting) or 'a' (admitted); `seen` is when the spot counts as last polled (booked
-- ahead, see mark_seen); `since` is the entry time while waiting and the admission time once
-- admitted; `expires` and the deal number are empty while waiting. One match, not a split loop.
local SPOT_PATTERN = '^' .. string.rep('([^|]*)|', 8) .. '([^|]*)$'
-- Records written before the poll limit left Redis had two more fields (window|count) after
-- `seen`: read alike, so spots waiting across an upgrade keep their place.
local OLD_SPOT_PATTERN = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|[^|]*|[^|]*|' ..
  string.rep('([^|]*)|', 4) .. '([^|]*)$'
local function parse_spot(raw)
  local ticket, score, state, seen, session_jti, network_tag, since, expires, deal_number =
    raw:match(SPOT_PATTERN)
  if not ticket then
    ticket, score, state, seen, session_jti, network_tag, since, expires, deal_number =
      raw:match(OLD_SPOT_PATTERN)
  end
  return {ticket = tonumber(ticket), score = tonumber(score), state = state,
    seen = tonumber(seen), session_jti = session_jti, network_tag = network_tag,
    since = tonumber(since) or 0, expires = tonumber(expires) or 0,
    deal_number = tonumber(deal_number) or 0}
end

-- The drain's view of a waiting record, in one match and without a table per spot (it deals
-- up to 200 a call): head "ticket|score|", score, middle "|seen|session jti|network tag|",
-- seen, session jti, entry time ('' in records older than the wait histogram). The admitted
-- record is then the same with its state and tail rewritten (see spot_record in _spot.lua).
local WAITING_PATTERN = '^([^|]*|([^|]*)|)w(|([^|]*)|([^|]*)|[^|]*|)([^|]*)||$'
local function admitted_record(head, middle, admitted_at, expires, deal_number)
  return head .. 'a' .. middle .. admitted_at .. '|' .. expires .. '|' .. deal_number
end

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
local function seen_due(seen, now) return seen < now end
local function seen_booking(abandon_after, now)
  return now + math.min(abandon_after * 500, SEEN_BOOKING_MAX)
end

-- Anything the full poll must do for the whole room: a sweep pass due (or under way), or a
-- holdScore change still regrouping. The far poll hands such polls on; see _sweep.lua and
-- _regroup.lua for what is done.
local SWEEP_EVERY = 60000
local function sweep_due(sweep_cursor, sweep_started, now)
  return sweep_cursor ~= '0' or now - sweep_started >= SWEEP_EVERY
end
local function regroup_due(releasing, convict_key) return releasing == '1' or convict_key ~= '' end
