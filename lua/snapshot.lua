-- A process's snapshot of a room for the far poll (queue/room_snapshot.py), read at most once a
-- second per process per room. It writes nothing (EVALSHA_RO: a replica may answer).
-- needs: _base, _clock, _admissions, _blocks, _event_state, _in_force
-- KEYS: room spots line active adm rvk bks blk waits
-- ARGV: the revocation count (`rvn`) the caller already holds the revocations of ('' if none).
-- Reply: {now ms, pinned (1/0), generation, status, opensAt, rate, capacity (0: none),
--   holdScore, abandonAfterSec, pollBudgetPerSecond, regrouping (1/0), counted (1/0: the room
--   counts its blocks), rvn, line length, live admissions, admitted last minute,
--   blocks as field, count, ... , revocations as field, until, ... or 0 when rvn is the caller's,
--   the mode in force (_in_force.lua), the next scheduled event's boundary (ms, 0:
--   none; rate, capacity and mode are the running event's, until then)}
-- or {} when the room does not exist.
local v = redis.call('HMGET', ROOM, 'gen', 'st', 'fix', 'clk', 'oa', 'rate', 'cap', 'hold',
  'aban', 'pbud', 'rel', 'cvk', 'blkz', 'rvn', 'mode', 'evo', 'snc', 'sns')
if not v[1] then return {} end
local n = tonumber
local pinned = n(v[3]) or 0
local now = room_clock(pinned, n(v[4]) or 0)
local regrouping = ((v[11] or '0') == '1' or (v[12] or '') ~= '') and 1 or 0
local rvn = v[14] or '0'
local state = v[16] and parse_event_state(v[16]) -- an event runs or is to come (_events.lua)
local room = {safety_net = v[17] or '', net_state = v[18] or ''}
lay_over(room, {mode = v[15] or 'fifo', rate = n(v[6]) or 0, capacity = n(v[7]) or 0,
  admission_ttl = 0}, state) -- (the snapshot has no use for the admission life)
local revocations = 0
if rvn ~= ARGV[1] then revocations = redis.call('HGETALL', RVK) end
return {fmt(now), pinned > 0 and 1 or 0, v[1], v[2], v[5] or '0', fmt(room.rate),
  fmt(room.capacity), v[8] or '0', v[9] or '0', v[10] or '', regrouping, v[13] == '1' and 1 or 0,
  rvn, redis.call('ZCARD', LINE), active_count(now), admitted_last_minute(now),
  redis.call('HGETALL', BLOCKS), revocations, room.mode, fmt(state and state.boundary or 0)}
