-- The service's tick of an open room: a sweep step, a regrouping step and the drain, so the line
-- moves and abandoned spots go even when nobody near the head polls. Every instance's ticker
-- calls it about once a second per open room; the `tick` field (room clock, ms) makes only the
-- first call of each interval work, so N instances run it once per room per interval.
-- needs: _base, _room, _events, _drain, _sweep, _regroup, _clock, _safety_net
-- KEYS: room spots line active adm rvk bks waits blk used
-- ARGV: interval (ms).
-- Reply: script_replies.TICK, built by name: {ran (1 when this call worked, else 0), now (ms, room
--   clock), dealt, swept, draw due
--   (1 when opensAt has come and the pool waits for its draw: queue/draw.py makes it),
--   the safety net's switches since the last tick that worked ("q@ms;c@ms;", '' for none:
--   the ticker audits them, so each once), 1 when an event's pre-queue waits for its draw
--   (shuffle_prequeue.lua; the engine makes it), else 0}.
local every = tonumber(ARGV[1]) or 1000
-- Most calls find another instance ticked this second: they read four fields and return.
local v = redis.call('HMGET', ROOM, @{status, lastTick, pinnedClock, clockOffset})
local function idle(now)
  return @TICK{ran = 0, now = now, dealt = 0, swept = 0, drawDue = 0, switches = '',
    prequeueDue = 0}
end
if v[@status] ~= 'open' then return idle(0) end
local now = room_clock(tonumber(v[@pinnedClock]) or 0, tonumber(v[@clockOffset]) or 0)
local last_tick = tonumber(v[@lastTick]) or 0
-- a clock moved back (tests pin it) must not stop the ticks until it catches up
if now >= last_tick and now - last_tick < every then return idle(fmt(now)) end
redis.call('HSET', ROOM, @lastTick, fmt(now))
local room = load_room()
at_events(room, now)
local swept = sweep_step(room, now, SWEEP_STEP)
regroup_step(room, REGROUP_CARRIED)
local dealt = drain(room, now)
local switches = ''
if room.safety_net ~= '' then
  net_step(room, now, false)
  switches = redis.call('HGET', ROOM, @safetyNetSwitches) or ''
  if switches ~= '' then redis.call('HDEL', ROOM, @safetyNetSwitches) end
end
save_room(room, true)
local due = 0
if now >= room.opens_at and (room.draw_state == 'c' or (room.draw_state == 'r'
    and (tonumber(redis.call('HGET', ROOM, @drawLease)) or 0) <= now)) then
  due = 1 -- never started, or its drawer's lease ran out (a process died mid-draw)
end
local prequeue_due = (room.prequeue == 'p' or room.prequeue == 'q') and 1 or 0
return @TICK{ran = 1, now = fmt(now), dealt = dealt, swept = swept, drawDue = due,
  switches = switches, prequeueDue = prequeue_due}
