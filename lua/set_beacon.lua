-- Record the fetch of a draw's beacon round (queue/draw/room_draw.py): its value once the beacon
-- answered, else the time the draw began waiting for it (shown as "waiting for beacon round N").
-- needs: _base, _room
-- KEYS: room
-- ARGV: the round fetched, its randomness (lowercase hex; '' when the beacon did not answer).
-- Reply: 1 when recorded, 0 when the draw no longer waits for that round (made, or another one).
local round_number, value = ARGV[1], ARGV[2]
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'c' and room.draw_state ~= 'r' then return 0 end
local v = redis.call('HMGET', ROOM, @{beaconUrl, beaconRound, beaconValue, beaconWaitingSince})
if (v[@beaconUrl] or '') == '' or v[@beaconRound] ~= round_number
    or (v[@beaconValue] or '') ~= '' then
  return 0
end
if value ~= '' then
  redis.call('HSET', ROOM, @beaconValue, value, @beaconWaitingSince, 0)
elseif (tonumber(v[@beaconWaitingSince]) or 0) == 0 then
  redis.call('HSET', ROOM, @beaconWaitingSince, fmt(clock(room)))
end
return 1
