-- needs: _base
-- A spot record (hash SPOTS, field = vid):
--   ticket|score|state|seen|session jti|network tag|since|expires|deal number
-- state 'w' (waiting) or 'a' (admitted); `seen` is when the spot counts as last polled (booked
-- ahead, see mark_seen); `since` is the entry time while waiting and the admission time once
-- admitted; `expires` and the deal number are empty while waiting. One match, not a split loop.
-- (Patterns are written out: building them with string.rep would cost every call.)
local SPOT_PATTERN = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$'
-- Records written before the poll limit left Redis had two more fields (window|count) after
-- `seen`: read alike, so spots waiting across an upgrade keep their place.
local OLD_SPOT_PATTERN =
  '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|[^|]*|[^|]*|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$'
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

-- The far poll's view of a record: the six leading fields, without building a table.
-- Returns ticket, score, state, seen, session jti, network tag (ticket, score, seen as numbers).
local HEAD_PATTERN = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|'
local function parse_head(raw)
  local ticket, score, state, seen, session_jti, network_tag = raw:match(HEAD_PATTERN)
  if not ticket then -- an older record (see OLD_SPOT_PATTERN)
    local spot = parse_spot(raw)
    return spot.ticket, spot.score, spot.state, spot.seen, spot.session_jti, spot.network_tag
  end
  return tonumber(ticket), tonumber(score), state, tonumber(seen), session_jti, network_tag
end
