-- Pause an open room: what was earned so far is booked, then the drain stops.
local r = load_room()
if not r then return err('RoomNotFound') end
if r.st ~= 'open' then return err('NotOpen') end
local now = clock(r)
accrue(r, now)
save_room(r)
redis.call('HSET', ROOM, 'st', 'paused')
return {'OK'}
