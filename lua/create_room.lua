-- Create a room's record. Its hash is made a real hash table at once by one value longer than
-- hash-max-listpack-value (64 bytes, `hte`): the room has ~80 fields, and as a listpack every
-- field a script reads (load_room reads ~30, most absent in a plain fifo room) is a scan of them
-- all; each policy's field (mode, events, safety net, pre-queue) then cost a fifo room's poll
-- ~3 us (bench/modes.py: 1.15-1.18x before this, 1.03-1.05x after, against the engine before
-- any policy). Redis never turns a hash table back into a listpack.
-- needs: _base
-- KEYS: room
-- ARGV: field, value, ... (the configuration, validated by Python).
-- Reply: {'OK'} or {'ERR', 'RoomExists', 0}.
local HASH_TABLE = string.rep('-', 65) -- longer than any hash-max-listpack-value default (64)
if redis.call('EXISTS', ROOM) == 1 then return err('RoomExists') end
redis.call('HSET', ROOM, @status, 'idle', @generation, 1, @ticketsTaken, 0, @admitted, 0,
  @bank, 0, @accruedAt, 0, @opensAt, 0, @peakActive, 0, @clockOffset, 0, @blocksCounted, 1,
  @hashTable, HASH_TABLE, unpack(ARGV))
return {'OK'}
