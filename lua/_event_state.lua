-- needs: _base
-- A room's `evo` field (see _events.lua): the next boundary of its scheduled events, the
-- settings the running event overrides ('' fields: the room's own) and, while an event's own
-- pre-queue collects entries, that event's startsAt ('' otherwise).
local function parse_event_state(text)
  local f = {}
  for field in (text .. '|'):gmatch('([^|]*)|') do f[#f + 1] = field end
  return {boundary = tonumber(f[1]) or 0, id = f[2] or '', mode = f[3] or '',
    rate = tonumber(f[4]), capacity = tonumber(f[5]), ttl = tonumber(f[6]),
    prequeue = tonumber(f[7])}
end
