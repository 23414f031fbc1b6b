-- Begin an opening's draw (queue/draw.py): once opensAt has come, one process takes the draw
-- for a lease, and gets the seed and salt it needs; the entrant list restarts empty.
-- needs: _base, _room
-- KEYS: room drawn
-- ARGV: the caller's token (any string unique to this attempt), lease (ms).
-- Reply: {1, seed, salt, beacon ('' for none)} when the caller now draws; {0, state} when
--   nothing is to be drawn by it (state: '' no draw, 'c' not due yet, 'r' another draws, 'd',
--   'b' the beacon round named at commitment has not been fetched: lua/set_beacon.lua first).
local token, lease = ARGV[1], tonumber(ARGV[2])
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
local state = room.draw_state
if room.status ~= 'open' or now < room.opens_at then return {0, state} end
if state == 'r' and (tonumber(redis.call('HGET', ROOM, @drawLease)) or 0) > now then
  return {0, state}
end
if state ~= 'c' and state ~= 'r' then return {0, state} end
local beacon = redis.call('HMGET', ROOM, @{beaconUrl, beaconValue})
if (beacon[@beaconUrl] or '') ~= '' and (beacon[@beaconValue] or '') == '' then return {0, 'b'} end
redis.call('HSET', ROOM, @drawState, 'r', @drawHolder, token, @drawLease, fmt(now + lease))
redis.call('UNLINK', DRAWN)
local v = redis.call('HMGET', ROOM, @{drawSeed, drawSalt})
return {1, v[@drawSeed], v[@drawSalt], beacon[@beaconValue] or ''}
