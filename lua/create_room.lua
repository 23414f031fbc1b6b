-- Create a room's record.
-- needs: _base
-- KEYS: room
-- ARGV: field, value, ... (the configuration, validated by Python).
-- Reply: {'OK'} or {'ERR', 'RoomExists', 0}.
if redis.call('EXISTS', ROOM) == 1 then return err('RoomExists') end
redis.call('HSET', ROOM, 'st', 'idle', 'gen', 1, 'tk', 0, 'dealt', 0, 'bank', 0, 'last', 0,
  'oa', 0, 'peak', 0, 'clk', 0, 'blkz', 1, unpack(ARGV))
return {'OK'}
