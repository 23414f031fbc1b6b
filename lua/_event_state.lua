-- needs: _base
-- A room's `evo` field (see _events.lua): the next boundary of its scheduled events, the
-- settings the running event overrides ('' fields: the room's own) and, while an event's own
-- pre-queue collects entries, that event's startsAt ('' otherwise). Its parts are written and
-- read by name through this one list, so the writer and the readers cannot disagree on a place.
local EVENT_STATE = {'boundary', 'id', 'mode', 'rate', 'capacity', 'ttl', 'prequeue'}

-- `parts` (by name, '' or absent for none) as `evo` stores them.
local function encode_event_state(parts)
  local out = {}
  for i, name in ipairs(EVENT_STATE) do out[i] = parts[name] or '' end
  return table.concat(out, '|')
end

local function parse_event_state(text)
  local f, i = {}, 0
  for part in (text .. '|'):gmatch('([^|]*)|') do
    i = i + 1
    if EVENT_STATE[i] then f[EVENT_STATE[i]] = part end
  end
  return {boundary = tonumber(f.boundary) or 0, id = f.id or '', mode = f.mode or '',
    rate = tonumber(f.rate), capacity = tonumber(f.capacity), ttl = tonumber(f.ttl),
    prequeue = tonumber(f.prequeue)}
end
