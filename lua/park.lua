-- Park a waiting spot: its visitor left an address to be told at its turn and may stop polling
-- (queue/line/parking.py). The spot is not moved: its last-seen is booked PARKED_FOR ahead, so
-- the drain and the sweep (which drop a waiting spot once `seen` is abandonAfterSec behind,
-- _expiry.lua) keep it without a poll until the drain admits it; turns.lua then finds it.
-- needs: _base, _record, _room, _spot
-- KEYS: room spots line active bks blk park mail
-- ARGV: vid, address, ticket, generation, parked for (ms), the public key it came with (the
--   return page's way back into the line: one field `key` per room), the e-mail's language
--   ('' for English: `l:<vid>` is kept for the others only).
-- Reply: {'ok'} or {'no', why}: 'gone' (no such spot of this opening), 'admitted' (its turn
--   came: poll), 'held' (held by its score, or not in the line: parking keeps no such spot).
local vid, address, ticket, generation = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local room = load_room()
if not room or room.generation ~= generation then return {'no', 'gone'} end
local spot = get_spot(vid)
if not spot or spot.ticket ~= ticket then return {'no', 'gone'} end
if spot.state ~= 'w' then return {'no', 'admitted'} end
local order_key = redis.call('ZSCORE', LINE, vid)
if not order_key then return {'no', 'held'} end
local now = clock(room)
redis.call('ZADD', PARK, order_key, vid)
redis.call('HSET', MAIL, 'a:' .. vid, address, 'key', ARGV[6])
if (ARGV[7] or '') ~= '' then
  redis.call('HSET', MAIL, 'l:' .. vid, ARGV[7])
else
  redis.call('HDEL', MAIL, 'l:' .. vid)
end
local until_ms = now + tonumber(ARGV[5])
if spot.seen < until_ms then
  spot.seen = until_ms
  put_spot(vid, spot)
end
return {'ok'}
