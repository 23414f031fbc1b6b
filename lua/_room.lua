-- needs: _base, _bank, _clock, _in_force
-- Rooms created before the poll budget was a setting: its default (poll_cadence.py's
-- DEFAULT_POLL_BUDGET, written in by the assembler, queue/connection/lua_scripts.py).
local DEFAULT_POLL_BUDGET = $DEFAULT_POLL_BUDGET

-- The room's record (hash ROOM), read in one HMGET and built in one table constructor (which
-- sizes the table once: filling an empty one field by field rehashes it on every call). Its
-- mode is the one in force under the safety net (_in_force.lua); a running event's settings
-- are laid over it by at_events (_events.lua).
local function load_room()
  local v = redis.call('HMGET', ROOM, @{status, seed, id, opensAt, ratePerMinute, capacity,
    admissionTtlSec, holdScore, maxWaiting, abandonAfterSec, clockOffset, pinnedClock, bank,
    accruedAt, ticketsTaken, admitted, generation, peakActive, sweepStartedAt, sweepCursor,
    releasing, convictFrom, pollBudgetPerSecond, drawState, mode, eventState, safetyNet,
    safetyNetState, prequeueState, gracePeriodSec, regionLease})
  if not v[@status] then return nil end
  local n = tonumber
  local room = {status = v[@status], seed = v[@seed], id = v[@id],
    opens_at = n(v[@opensAt]) or 0, rate = n(v[@ratePerMinute]) or 0,
    capacity = n(v[@capacity]) or 0, admission_ttl = n(v[@admissionTtlSec]) or 0,
    hold_score = n(v[@holdScore]) or 0, max_waiting = n(v[@maxWaiting]) or 0,
    abandon_after = n(v[@abandonAfterSec]) or 0, grace = n(v[@gracePeriodSec]) or 0,
    clock_offset = n(v[@clockOffset]) or 0,
    pinned_clock = n(v[@pinnedClock]) or 0, bank = n(v[@bank]) or 0,
    accrued_at = n(v[@accruedAt]) or 0, tickets = n(v[@ticketsTaken]) or 0,
    dealt = n(v[@admitted]) or 0, generation = n(v[@generation]) or 0,
    peak = n(v[@peakActive]) or 0, sweep_started = n(v[@sweepStartedAt]) or 0,
    sweep_cursor = v[@sweepCursor] or '0', releasing = v[@releasing] or '0',
    convict_key = v[@convictFrom] or '',
    poll_budget = n(v[@pollBudgetPerSecond]) or DEFAULT_POLL_BUDGET,
    draw_state = v[@drawState] or '', loaded = false,
    mode = net_mode(v[@safetyNet] or '', v[@safetyNetState] or '', v[@mode] or 'fifo'),
    event_state = v[@eventState], event = '', -- scheduled events (_events.lua)
    -- the safety net's configuration and state ('' for none, calm): see _safety_net.lua
    own_mode = v[@mode] or 'fifo', safety_net = v[@safetyNet] or '',
    net_state = v[@safetyNetState] or '',
    -- an event's pre-queue: 'o' collecting, 'p' its draw to make (_events.lua); nil: none
    prequeue = v[@prequeueState],
    -- a room across regions: its lease (_region_gate.lua); false: one region, no gate
    region_lease = v[@regionLease]}
  room.loaded = {room.bank, room.accrued_at, room.tickets, room.dealt, room.peak}
  return room
end

local function clock(room) return room_clock(room.pinned_clock, room.clock_offset) end

-- The first order key the drain must not reach while an event's pre-queue is open or its draw
-- not yet made (its entrants' tickets and everyone's after), or nil.
local POST_OPEN_ORDER = $POST_OPEN_KEY -- 2^52 (line_blocks.POST_OPEN_KEY)
local function prequeue_stop(room)
  if not room.prequeue then return nil end
  return POST_OPEN_ORDER + (tonumber(redis.call('HGET', ROOM, @prequeueFirst)) or 0)
end

-- Writes back only the counters that changed: most calls change none or two of them.
-- With `lazy`, accrual alone (bank and accrued_at moved, nobody dealt) is not written: accruing
-- later from the stored bank gives the same bank, as min(cap, min(cap, b + x) + y) =
-- min(cap, b + x + y) for earnings x, y >= 0. Rate changes and pauses book accrual themselves.
local COUNTERS = {{'bank', @bank}, {'accrued_at', @accruedAt}, {'tickets', @ticketsTaken},
  {'dealt', @admitted}, {'peak', @peakActive}}
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
