-- A process's snapshot of a room for the far poll (queue/line/room_snapshot.py), read at most once a
-- second per process per room. It writes nothing (EVALSHA_RO: a replica may answer).
-- needs: _base, _clock, _admissions, _blocks, _event_state, _in_force
-- KEYS: room spots line active adm rvk bks blk waits
-- ARGV: the revocation count (`rvn`) the caller already holds the revocations of ('' if none).
-- Reply (its slots by name, script_replies.SNAPSHOT): {now ms, pinned (1/0), generation,
--   status, opensAt, rate, capacity (0: none), holdScore, abandonAfterSec, pollBudgetPerSecond, regrouping (1/0), counted (1/0: the room
--   counts its blocks), rvn, line length, live admissions, admitted last minute,
--   blocks as field, count, ... , revocations as field, until, ... or 0 when rvn is the caller's,
--   the mode in force (_in_force.lua), the next scheduled event's boundary (ms, 0:
--   none; rate, capacity and mode are the running event's, until then), gracePeriodSec}
-- or {} when the room does not exist.
local v = redis.call('HMGET', ROOM, @{generation, status, pinnedClock, clockOffset, opensAt,
  ratePerMinute, capacity, holdScore, abandonAfterSec, pollBudgetPerSecond, releasing,
  convictFrom, blocksCounted, revocationCount, mode, eventState, safetyNet, safetyNetState,
  gracePeriodSec})
if not v[@generation] then return {} end
local n = tonumber
local pinned = n(v[@pinnedClock]) or 0
local now = room_clock(pinned, n(v[@clockOffset]) or 0)
local regrouping = ((v[@releasing] or '0') == '1' or (v[@convictFrom] or '') ~= '') and 1 or 0
local rvn = v[@revocationCount] or '0'
-- a scheduled event runs or is to come (_events.lua)
local state = v[@eventState] and parse_event_state(v[@eventState])
local room = {safety_net = v[@safetyNet] or '', net_state = v[@safetyNetState] or ''}
lay_over(room, {mode = v[@mode] or 'fifo', rate = n(v[@ratePerMinute]) or 0,
  capacity = n(v[@capacity]) or 0, admission_ttl = 0}, state) -- (no use for admission life)
local revocations = 0
if rvn ~= ARGV[1] then revocations = redis.call('HGETALL', RVK) end
return @SNAPSHOT{now = fmt(now), pinned = pinned > 0 and 1 or 0, generation = v[@generation],
  status = v[@status], opensAt = v[@opensAt] or '0', rate = fmt(room.rate),
  capacity = fmt(room.capacity), holdScore = v[@holdScore] or '0',
  abandonAfterSec = v[@abandonAfterSec] or '0', pollBudget = v[@pollBudgetPerSecond] or '',
  regrouping = regrouping, counted = v[@blocksCounted] == '1' and 1 or 0, revocationCount = rvn,
  line = redis.call('ZCARD', LINE), active = active_count(now),
  admittedLastMinute = admitted_last_minute(now), blocks = redis.call('HGETALL', BLOCKS),
  revocations = revocations, mode = room.mode, boundary = fmt(state and state.boundary or 0),
  gracePeriodSec = v[@gracePeriodSec] or '0'}
