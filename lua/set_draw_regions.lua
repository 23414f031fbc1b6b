-- Keep the parts of a draw across regions (queue/regions/shared_draw.py) once every region has
-- drawn: their roots, counts and lists' URLs and the root over them, shown in this region's
-- fairness document beside its own list.
-- needs: _base, _room
-- KEYS: room
-- ARGV: JSON {globalRoot, regions}.
-- Reply: 1 when kept, 0 when the room has no made draw across regions.
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'd' or (redis.call('HGET', ROOM, @drawRegion) or '') == '' then return 0 end
redis.call('HSET', ROOM, @drawRegions, ARGV[1])
return 1
