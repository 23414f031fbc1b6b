-- The room in force: what a script acts on. A running scheduled event's overrides (mode, rate,
-- capacity, admission life; `evo`, see _events.lua) are laid over the room's own settings, and
-- a room with a safety net (_safety_net.lua) runs passthrough while calm unless the mode so far
-- is reject (a reject room takes nobody new, calm or not). Every script that judges the room in
-- force takes it from here: load_room and at_events (_room.lua, _events.lua), the safety net's
-- switch, the far poll's snapshot (snapshot.lua). queue/rooms/room_events.py's in_force is the same
-- rule in Python, for the web tier (tests/integration/test_room_in_force.py holds the two).

-- The mode in force under a safety net (`safety_net` '' for none, `net_state` 'q' queueing).
local function net_mode(safety_net, net_state, own_mode)
  if safety_net ~= '' and net_state ~= 'q' and own_mode ~= 'reject' then return 'passthrough' end
  return own_mode
end

-- Sets `room`'s settings in force from `base` (the room's own mode, rate, capacity and
-- admission_ttl, as stored) and `state` (parse_event_state of `evo`, or nil): `own_mode` is the
-- room's or its running event's mode, `mode` the mode in force under the safety net
-- (`room.safety_net`, `room.net_state`), `event` the running event's id ('' for none).
local function lay_over(room, base, state)
  room.own_mode, room.rate = base.mode, base.rate
  room.capacity, room.admission_ttl = base.capacity, base.admission_ttl
  room.event, room.overrides = '', nil
  if state and state.id ~= '' then
    room.event, room.overrides = state.id, state
    if state.mode ~= '' then room.own_mode = state.mode end
    if state.rate then room.rate = state.rate end
    if state.capacity then room.capacity = state.capacity end
    if state.ttl then room.admission_ttl = state.ttl end
  end
  room.mode = net_mode(room.safety_net, room.net_state, room.own_mode)
end
