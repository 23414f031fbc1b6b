-- needs: _base
-- A spot record (hash SPOTS, field = vid): one `|`-joined string whose parts and their order
-- are declared in queue/line/spot_record.py (SPOT); the assembler writes in the pattern that
-- reads the parts a script names and the concatenation that writes them (spot_record in
-- _spot.lua). One match, not a split loop, and no pattern built at run time (that would cost
-- every call).
local function parse_spot(raw)
  local @SPOT~(raw){ticket = ticket, score = score, state = state, seen = seen,
    sessionJti = session_jti, networkTag = network_tag, since = since, expires = expires,
    dealNumber = deal_number}
  if not ticket then
    -- a record written before the poll limit left Redis (OLD_SPOT): read alike, so spots
    -- waiting across an upgrade keep their place
    @OLD_SPOT~(raw){ticket = ticket, score = score, state = state, seen = seen,
      sessionJti = session_jti, networkTag = network_tag, since = since, expires = expires,
      dealNumber = deal_number}
  end
  return {ticket = tonumber(ticket), score = tonumber(score), state = state,
    seen = tonumber(seen), session_jti = session_jti, network_tag = network_tag,
    since = tonumber(since) or 0, expires = tonumber(expires) or 0,
    deal_number = tonumber(deal_number) or 0}
end
