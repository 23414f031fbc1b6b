-- Add refusals the web tier decided (queue/series/room_series.py's tallies) to a room's counters,
-- only to a room that exists: a bare HINCRBY would recreate a deleted room's hash with one field.
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the room hash (KeySpace.room).
-- ARGV: field, count, ... (fields: room_series.WEB_TALLIES).
-- Reply: 1 when counted, 0 when the room does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
