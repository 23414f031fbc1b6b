-- Book the admissions an instance dealt while it could not reach Redis (failMode open), once it
-- can: each visitor's waiting spot is marked admitted until its admission expires, and its
-- active slot booked, so the room's active count is what the visitors hold and the drain deals
-- no admission that nobody will use (a ghost). A visitor whose spot is gone (or who entered
-- during the outage) gets its slot alone; an admission already over frees its waiting spot.
-- Not counted in `dealt`, the drain's own count: the drain dealt none of them.
-- A booking also holds the room's drain for `hold` ms (`foh`): a process no register knows yet
-- (one that started a moment before the outage, or during it) may hold admissions of its own,
-- and is given that long to come back and book them (lua/check_in_fail_open.lua waits only for
-- the processes it has registered).
-- needs: _base, _room, _spot
-- KEYS: room spots line active bks blk
-- ARGV: generation (the room's when the admissions were dealt), hold (ms), then for each
--   admission: vid, ticket of its spot ('' when the instance knew none: an entry), ms of its
--   life left.
-- Reply: {booked, freed}: slots booked, spots freed.
local generation = tonumber(ARGV[1])
local room = load_room()
if not room or room.generation ~= generation or room.status == 'idle' then return {0, 0} end
local now = clock(room)
if #ARGV >= 5 then
  local until_ms = now + tonumber(ARGV[2])
  if until_ms > (tonumber(redis.call('HGET', ROOM, @failOpenHold)) or 0) then
    redis.call('HSET', ROOM, @failOpenHold, fmt(until_ms))
  end
end
local booked, freed = 0, 0
for i = 3, #ARGV, 3 do
  local vid, ticket, left = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local spot = get_spot(vid)
  if spot and spot.state == 'w' and (not ticket or spot.ticket == ticket) then
    if left > 0 then
      unplace(vid, spot.score)
      spot.state, spot.since, spot.expires, spot.deal_number = 'a', now, now + left, 0
      put_spot(vid, spot)
      redis.call('ZADD', ACTIVE, fmt(spot.expires), vid)
      booked = booked + 1
    else
      drop_spot(vid, spot)
      freed = freed + 1
    end
  elseif not spot and left > 0 then
    -- the visitor is on the site all the same: its slot counts until its admission is over
    redis.call('ZADD', ACTIVE, 'NX', fmt(now + left), vid)
    booked = booked + 1
  end
  -- An admitted spot (dealt since Redis came back) already holds its slot.
end
return {booked, freed}
