-- Move a room's clock. Test and operator tooling only: no HTTP route reaches this script.
-- needs: _base
-- KEYS: room
-- ARGV: ms to add to the offset. Reply: the new offset (ms) or {'ERR', 'RoomNotFound', 0}.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
return redis.call('HINCRBY', ROOM, @clockOffset, ARGV[1])
