-- needs: _base, _bank, _clock, _in_force
-- Rooms created before the poll budget was a setting: its default (poll_cadence.py's
-- DEFAULT_POLL_BUDGET; tests/unit/test_lua_constants.py holds the two together).
local DEFAULT_POLL_BUDGET = 5000

-- The room's record (hash ROOM), read in one HMGET and built in one table constructor (which
-- sizes the table once: filling an empty one field by field rehashes it on every call). Its
-- mode is the one in force under the safety net (_in_force.lua); a running event's settings
-- are laid over it by at_events (_events.lua).
local function load_room()
  local v = redis.call('HMGET', ROOM, 'st', 'seed', 'rid', 'oa', 'rate', 'cap', 'ttl', 'hold',
    'maxw', 'aban', 'clk', 'fix', 'bank', 'last', 'tk', 'dealt', 'gen', 'peak', 'swt', 'swc',
    'rel', 'cvk', 'pbud', 'dst', 'mode', 'evo', 'snc', 'sns', 'pqs')
  if not v[1] then return nil end
  local n = tonumber
  local room = {status = v[1], seed = v[2], id = v[3], opens_at = n(v[4]) or 0,
    rate = n(v[5]) or 0, capacity = n(v[6]) or 0, admission_ttl = n(v[7]) or 0,
    hold_score = n(v[8]) or 0, max_waiting = n(v[9]) or 0, abandon_after = n(v[10]) or 0,
    clock_offset = n(v[11]) or 0, pinned_clock = n(v[12]) or 0, bank = n(v[13]) or 0,
    accrued_at = n(v[14]) or 0, tickets = n(v[15]) or 0, dealt = n(v[16]) or 0,
    generation = n(v[17]) or 0, peak = n(v[18]) or 0, sweep_started = n(v[19]) or 0,
    sweep_cursor = v[20] or '0', releasing = v[21] or '0', convict_key = v[22] or '',
    poll_budget = n(v[23]) or DEFAULT_POLL_BUDGET, draw_state = v[24] or '',
    mode = net_mode(v[27] or '', v[28] or '', v[25] or 'fifo'), loaded = false,
    event_state = v[26], event = '', -- scheduled events (_events.lua)
    -- the safety net's configuration and state ('' for none, calm): see _safety_net.lua
    own_mode = v[25] or 'fifo', safety_net = v[27] or '', net_state = v[28] or '',
    -- an event's pre-queue: 'o' collecting, 'p' its draw to make (_events.lua); nil: none
    prequeue = v[29]}
  room.loaded = {room.bank, room.accrued_at, room.tickets, room.dealt, room.peak}
  return room
end

local function clock(room) return room_clock(room.pinned_clock, room.clock_offset) end

-- The first order key the drain must not reach while an event's pre-queue is open or its draw
-- not yet made (its entrants' tickets and everyone's after), or nil.
local POST_OPEN_ORDER = 4503599627370496 -- 2^52, as in enter.lua
local function prequeue_stop(room)
  if not room.prequeue then return nil end
  return POST_OPEN_ORDER + (tonumber(redis.call('HGET', ROOM, 'pqf')) or 0)
end

-- Writes back only the counters that changed: most calls change none or two of them.
-- With `lazy`, accrual alone (bank and accrued_at moved, nobody dealt) is not written: accruing
-- later from the stored bank gives the same bank, as min(cap, min(cap, b + x) + y) =
-- min(cap, b + x + y) for earnings x, y >= 0. Rate changes and pauses book accrual themselves.
local COUNTERS = {{'bank', 'bank'}, {'accrued_at', 'last'}, {'tickets', 'tk'},
  {'dealt', 'dealt'}, {'peak', 'peak'}}
local function save_room(room, lazy)
  local args, was = {}, room.loaded
  local skip_accrual = lazy and room.dealt == was[4]
  for i, counter in ipairs(COUNTERS) do
    local name, field = counter[1], counter[2]
    if room[name] ~= was[i] and not (skip_accrual and i <= 2) then
      args[#args + 1] = field; args[#args + 1] = fmt(room[name])
    end
  end
  if #args > 0 then redis.call('HSET', ROOM, unpack(args)) end
end

-- Earn admissions for open time since `accrued_at` (see earned in _bank.lua).
local function accrue(room, now)
  if room.status ~= 'open' then return end
  local bank, accrued_at = earned(room.bank, room.accrued_at, room.opens_at, room.rate, now)
  room.bank, room.accrued_at = bank, accrued_at
end
