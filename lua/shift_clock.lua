-- Move a room's clock. Test and operator tooling only: no HTTP route reaches this script.
-- ARGV: milliseconds to add to the offset.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
return redis.call('HINCRBY', ROOM, 'clk', ARGV[1])
