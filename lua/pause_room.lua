-- Pause an open room: what was earned so far is booked, then the drain stops.
-- needs: _base, _room, _events
-- KEYS: room
-- ARGV: none. Reply: {'OK'} or {'ERR', 'RoomNotFound' | 'NotOpen', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
if room.status ~= 'open' then return err('NotOpen') end
local now = clock(room)
at_events(room, now)
accrue(room, now)
save_room(room)
-- `pat`: when this pause began (room clock), for the opening's longest pause (`lps`)
redis.call('HSET', ROOM, @status, 'paused', @pausedAt, fmt(now))
return {'OK'}
