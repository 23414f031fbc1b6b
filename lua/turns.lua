-- The turns of parked spots (park.lua): the first `count` parked spots, in their line order,
-- are looked at; one the drain has admitted leaves PARK and its e-mail is queued (MAILQ, due
-- now), its admission held for the return window from its turn; one gone (revoked, closed)
-- takes its address with it. The drain admits from the head, so a parked spot's turn comes
-- while it is among the first parked: the cost of a call is bounded by `count`, not by how many
-- are parked.
-- needs: _base, _record, _room, _spot
-- KEYS: room spots line bks blk active park mail mailq
-- ARGV: count, return window (s).
-- Reply: {turned, gone}.
local room = load_room()
if not room then return {0, 0} end
local vids = redis.call('ZRANGE', PARK, 0, tonumber(ARGV[1]) - 1)
if #vids == 0 then return {0, 0} end
local now, window = clock(room), tonumber(ARGV[2]) * 1000
local raws = redis.call('HMGET', SPOTS, unpack(vids))
local turned, gone = 0, 0
for i, vid in ipairs(vids) do
  if not raws[i] then
    redis.call('ZREM', PARK, vid)
    redis.call('HDEL', MAIL, 'a:' .. vid)
    gone = gone + 1
  else
    local spot = parse_spot(raws[i])
    if spot.state == 'a' then
      redis.call('ZREM', PARK, vid)
      if redis.call('HEXISTS', MAIL, 'a:' .. vid) == 1 then
        redis.call('HSET', MAIL, 't:' .. vid, fmt(spot.since)) -- its turn: the link's window
        redis.call('ZADD', MAILQ, fmt(now), vid)
        local held = spot.since + window
        if held > spot.expires then
          spot.expires = held
          put_spot(vid, spot)
          redis.call('ZADD', ACTIVE, fmt(held), vid)
        end
        turned = turned + 1
      end
    end
  end
end
return {turned, gone}
