-- needs: _base, _room, _bank, _event_state, _in_force
-- Scheduled events (docs/operators.md): windows [startsAt, endsAt) that override some of the
-- room's settings. The list lives in the room hash as JSON (`evs`, written by set_events.lua,
-- sorted and checked by queue/rooms/room_events.py); what the scripts need of it on every call is in
-- one short field, `evo`: '<next boundary ms>|<running event id>|<mode>|<rate>|<capacity>|<ttl>|
-- <pre-queue until>' ('' where the running event leaves a setting as the room has it; capacity
-- 0: no bound; the last, the startsAt of an event whose own pre-queue collects entries now). A
-- room with no event running or to come has no `evo` at all, so it pays one absent field.
-- A boundary is crossed by the first script to run at or after it, on the room's clock, inside
-- the script: the open room's ticker runs every second, so one passes even when nobody polls.
-- The events' state at `t`: the event running then (startsAt <= t < endsAt), the event whose
-- pre-queue collects entries then (preQueueOpensAt <= t < startsAt) and the next boundary after
-- `t`, encoded as `evo` is; '' when no event runs at `t` or starts after it.
local function event_state_at(t)
  local raw = redis.call('HGET', ROOM, @events)
  if not raw or raw == '' then return '' end
  local running, prequeue, next_boundary = nil, '', 0
  for _, event in ipairs(cjson.decode(raw)) do
    local starts, ends = event.startsAt, event.endsAt
    local opens = event.preQueueOpensAt
    if opens == cjson.null then opens = nil end
    if starts <= t and t < ends then running = event end
    if opens and opens <= t and t < starts then prequeue = fmt(starts) end
    for _, edge in ipairs({opens or starts, starts, ends}) do
      if edge > t and (next_boundary == 0 or edge < next_boundary) then next_boundary = edge end
    end
  end
  if next_boundary == 0 then return '' end
  if not running then
    return encode_event_state({boundary = fmt(next_boundary), prequeue = prequeue})
  end
  local o = running.overrides or {}
  local function setting(value)
    if value == nil then return '' end
    if value == cjson.null then return '0' end -- capacity null: no bound
    return tostring(value)
  end
  return encode_event_state({boundary = fmt(next_boundary), id = running.id,
    mode = setting(o.mode), rate = setting(o.ratePerMinute), capacity = setting(o.capacity),
    ttl = setting(o.admissionTtlSec), prequeue = prequeue})
end

-- An event's own pre-queue (docs/operators.md, "Scheduled events"). It collects the newcomers of
-- [preQueueOpensAt, startsAt): they take tickets as anyone (so their keys sit behind everyone
-- already in line and ahead of everyone after), the drain stops before the first of them
-- (`pqs` 'o' while collecting, 'p' once startsAt has passed until their order is drawn), and
-- at startsAt their places are drawn among themselves (shuffle_prequeue.lua, run by the ticker
-- in batches): the k-th of them in the order of SHA-1(seed ':' first ticket ':' vid) takes the
-- k-th key of their range. `pqf` is the pre-queue's first ticket, `pqt` its last once closed
-- (both kept after the draw: their tickets' far polls go to Redis, since their order keys moved).
local function open_prequeue(room, starts)
  if room.prequeue then return end -- the last one's draw is still being made (within a tick)
  redis.call('HSET', ROOM, @prequeueState, 'o', @prequeueFirst, fmt(room.tickets + 1),
    @prequeueLast, 0, @prequeueUntil, fmt(starts), @prequeueCursor, '')
  room.prequeue, room.prequeue_first = 'o', room.tickets + 1
end

local function close_prequeue(room)
  if room.prequeue ~= 'o' then return end
  local first = tonumber(redis.call('HGET', ROOM, @prequeueFirst)) or (room.tickets + 1)
  if room.tickets < first then -- nobody came: nothing to draw
    redis.call('HDEL', ROOM, @prequeueState, @prequeueUntil, @prequeueCursor)
    room.prequeue = nil
    return
  end
  redis.call('HSET', ROOM, @prequeueState, 'p', @prequeueLast, fmt(room.tickets),
    @prequeueCursor, '')
  room.prequeue = 'p'
end

-- Apply the events to `room` at `now`, crossing (and writing) every boundary passed since the
-- last script ran: admissions earned before a boundary are booked at the rate in force before
-- it, so a rate change at an event's edge is as burst-free as an operator's. Returns true when
-- a boundary was crossed here.
local function at_events(room, now)
  if not room.event_state then return false end
  local base = {mode = room.own_mode, rate = room.rate, capacity = room.capacity,
    admission_ttl = room.admission_ttl}
  local state = parse_event_state(room.event_state)
  local crossed = false
  while state and state.boundary > 0 and now >= state.boundary do
    lay_over(room, base, state)
    local edge = state.boundary
    accrue(room, edge)
    local text = event_state_at(edge)
    local was_collecting = state.prequeue ~= nil
    state = text ~= '' and parse_event_state(text) or nil
    local collecting = state and state.prequeue
    if was_collecting and not collecting then close_prequeue(room) end
    if collecting and not was_collecting then open_prequeue(room, collecting) end
    room.event_state = text
    lay_over(room, base, state)
    -- What was earned before the edge is dealt after it when crossed on time (a ticked room:
    -- within a second); an edge passed long ago (nobody ran) keeps one second of the new rate.
    if now - edge >= 1000 then room.bank = math.min(room.bank, bank_cap(room.rate)) end
    crossed = true
  end
  if crossed then
    if room.event_state ~= '' then
      redis.call('HSET', ROOM, @eventState, room.event_state)
    else
      redis.call('HDEL', ROOM, @eventState)
    end
    -- booked now: save_room's lazy write would skip accrual, and it moved at another rate
    redis.call('HSET', ROOM, @bank, fmt(room.bank), @accruedAt, fmt(room.accrued_at))
    room.loaded[1], room.loaded[2] = room.bank, room.accrued_at
  else
    lay_over(room, base, state)
  end
  return crossed
end
