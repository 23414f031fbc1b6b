-- A region's lease from the coordinator (queue/regions/region_cell.py), kept in the room's hash
-- as `rgl` for the drain (_region_gate.lua). A lease of an older epoch than the one held is
-- refused: a deposed coordinator's lease, arriving late, never replaces its successor's.
-- needs: _base, _room
-- KEYS: room
-- ARGV: epoch, ceiling (the most the room's `dealt` may reach; -1: its count now), watermark
--   (room clock ms), ms the lease lasts from now (0: expired at once, the fallback holds),
--   fallback ('0' pauses, a share in (0, 1] of rate and capacity), then '' or 'leave' to stop
--   being a room across regions (the other arguments unread), or 'join' to become one (an
--   expired lease of epoch 0 from the count now) unless it is one already.
-- Reply: {1 when applied else 0, the epoch held after, now (room clock ms)}.
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
if ARGV[6] == 'leave' then
  redis.call('HDEL', ROOM, @regionLease)
  return {1, 0, fmt(now)}
end
if ARGV[6] == 'join' and room.region_lease then
  return {0, tonumber(room.region_lease:match('^(%d+):')) or 0, fmt(now)}
end
local epoch = tonumber(ARGV[1])
local held = 0
if room.region_lease then held = tonumber(room.region_lease:match('^(%d+):')) or 0 end
if epoch < held then return {0, held, fmt(now)} end
local ceiling = tonumber(ARGV[2])
if ceiling < 0 then ceiling = room.dealt end
local lease = table.concat({fmt(epoch), fmt(ceiling), fmt(tonumber(ARGV[3])),
  fmt(now + tonumber(ARGV[4])), ARGV[5]}, ':')
redis.call('HSET', ROOM, @regionLease, lease)
return {1, epoch, fmt(now)}
