-- Replace a room's scheduled events (queue/rooms/room_events.py checks them, keeps them apart and
-- sorts them). Compare-and-set on the events' version: two operators changing the schedule at
-- once cannot both pass the overlap check against the list they read.
-- Boundaries already passed are crossed first at the rates then in force, and admissions
-- earned up to now at the settings running now, so the new schedule starts burst-free.
-- needs: _base, _room, _bank, _event_state, _events, _in_force
-- KEYS: room
-- ARGV: the version the caller read (`evv`, '0' for none), the events as JSON ('' for none).
-- Reply: {'OK', new version, now (room clock ms)} or {'ERR', 'RoomNotFound' | 'EventsChanged', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
if (redis.call('HGET', ROOM, @eventsVersion) or '0') ~= ARGV[1] then
  return err('EventsChanged')
end
local now = clock(room)
local base = {mode = room.own_mode, rate = room.rate, capacity = room.capacity,
  admission_ttl = room.admission_ttl}
at_events(room, now)
accrue(room, now)
if ARGV[2] == '' then
  redis.call('HDEL', ROOM, @events)
else
  redis.call('HSET', ROOM, @events, ARGV[2])
end
local text = event_state_at(now)
local state = text ~= '' and parse_event_state(text) or nil
-- a pre-queue opened (its preQueueOpensAt is past) or ended (its event moved or cancelled) by
-- this write: those collected so far are drawn among themselves as at startsAt
if state and state.prequeue and not room.prequeue then open_prequeue(room, state.prequeue) end
if room.prequeue == 'o' and not (state and state.prequeue) then close_prequeue(room) end
lay_over(room, base, state)
room.bank = math.min(room.bank, bank_cap(room.rate))
if text ~= '' then
  redis.call('HSET', ROOM, @eventState, text)
else
  redis.call('HDEL', ROOM, @eventState)
end
redis.call('HSET', ROOM, @bank, fmt(room.bank), @accruedAt, fmt(room.accrued_at))
return {'OK', redis.call('HINCRBY', ROOM, @eventsVersion, 1), fmt(now)}
