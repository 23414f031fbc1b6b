-- Pin a room's clock to an absolute time (0 unpins it). Tests only: no HTTP route reaches this.
-- needs: _base
-- KEYS: room
-- ARGV: epoch ms. Reply: 1 or {'ERR', 'RoomNotFound', 0}.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
redis.call('HSET', ROOM, @pinnedClock, ARGV[1], @clockOffset, 0)
return 1
