-- The turns of parked spots (park.lua): a parked spot the drain has admitted leaves PARK and
-- its e-mail is queued (MAILQ, due now), its admission held for the return window from its
-- turn; one gone (revoked, dropped) takes its address with it.
-- Which are looked at: the drain admits from the head of the line, so only parked spots whose
-- order key is below the line's first can have had their turn (at most `count` of them); the
-- rest, still in line behind it, cost nothing however many they are. A random room admits
-- anywhere in the line: there `count` parked spots are looked at per call, from where the last
-- call stopped (`cur` in MAIL), round the whole set.
-- needs: _base, _record, _room, _spot
-- KEYS: room spots line bks blk active park mail mailq
-- ARGV: count, return window (s).
-- Reply: {turned, gone}.
local room = load_room()
if not room then return {0, 0} end
local count = tonumber(ARGV[1])
local vids, from
if room.mode == 'random' then
  from = tonumber(redis.call('HGET', MAIL, 'cur')) or 0
  vids = redis.call('ZRANGE', PARK, from, from + count - 1)
  if #vids < count then redis.call('HSET', MAIL, 'cur', 0) end
else
  local head = redis.call('ZRANGE', LINE, 0, 0, 'WITHSCORES')[2]
  vids = redis.call('ZRANGE', PARK, '-inf', head and '(' .. head or '+inf', 'BYSCORE', 'LIMIT', 0,
    count)
end
if #vids == 0 then return {0, 0} end
local now, window = clock(room), tonumber(ARGV[2]) * 1000
local raws = redis.call('HMGET', SPOTS, unpack(vids))
local turned, gone, removed = 0, 0, 0
for i, vid in ipairs(vids) do
  local state
  if raws[i] then @SPOT~(raws[i]){state = state, ...} end
  if not raws[i] then
    removed = removed + redis.call('ZREM', PARK, vid)
    redis.call('HDEL', MAIL, 'a:' .. vid, 'l:' .. vid)
    gone = gone + 1
  elseif state == 'a' then
    removed = removed + redis.call('ZREM', PARK, vid)
    if redis.call('HEXISTS', MAIL, 'a:' .. vid) == 1 then
      local spot = parse_spot(raws[i])
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
-- the next call of a random room goes on after those still parked here (those that left PARK
-- moved the rest down)
if from and #vids == count then redis.call('HSET', MAIL, 'cur', from + count - removed) end
return {turned, gone}
