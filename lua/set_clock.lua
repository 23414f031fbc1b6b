-- Pin a room's clock to an absolute time (0 unpins it). Tests only: no HTTP route reaches this.
-- ARGV: epoch milliseconds.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
redis.call('HSET', ROOM, 'fix', ARGV[1], 'clk', 0)
return 1
