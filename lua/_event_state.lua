-- needs: _base
-- A room's `evo` field (see _events.lua): the next boundary of its scheduled events and the
-- settings the running event overrides ('' fields: the room's own).
local EVENT_STATE = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$'

local function parse_event_state(text)
  local boundary, id, mode, rate, cap, ttl = text:match(EVENT_STATE)
  return {boundary = tonumber(boundary) or 0, id = id or '', mode = mode or '',
    rate = tonumber(rate), capacity = tonumber(cap), ttl = tonumber(ttl)}
end
