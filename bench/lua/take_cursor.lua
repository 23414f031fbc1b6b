-- PROTOTYPE (bench/drain_cursor.py only): what the poll of a waiting spot would add to take the
-- admission a cursor move gave it (see _drain_cursor.lua). Not the whole poll: the room and the
-- spot are read as lua/poll.lua reads them, then the take.
-- needs: _base, _room, _spot, _drain_cursor
-- KEYS: room spots line active adm rvk bks waits blk
-- ARGV: vid, "peek" (stop after the reads the poll makes anyway: the baseline), "take", or
--   "take_waits" (a lean move's take: counts the wait histogram too).
-- Reply: 1 taken, 0 still waiting, -1 gone (the move lapsed, or it was passed over).
local vid, mode = ARGV[1], ARGV[2]
local room = load_room()
local now = clock(room)
local spot = get_spot(vid)
if not spot or spot.state ~= 'w' then return 0 end
-- the poll's own check, before the spot's (lua/poll.lua): a revoked visitor takes nothing
if revoked(vid, spot.session_jti, now, false) then
  if mode ~= 'peek' then drop_spot(vid, spot) end
  return -1
end
if mode == 'peek' then return 0 end
local cursor = redis.call('HGET', ROOM, CURSOR)
local key = redis.call('ZSCORE', LINE, vid)
if not cursor or not key or tonumber(key) > tonumber(cursor) then return 0 end
local lapsed_to = redis.call('HGET', ROOM, LAPSED)
-- covered by a move that lapsed before this poll: not the next move's
local move = (not lapsed_to or tonumber(key) > tonumber(lapsed_to))
  and redis.call('ZRANGE', MOVES, key, '+inf', 'BYSCORE', 'LIMIT', 0, 1)[1]
local at, expires, count
if move then
  at, expires, count = (redis.call('HGET', MOVE_LEFT, move) or ''):match('^(%d+):(%d+):(%d+)$')
end
at, expires = tonumber(at), tonumber(expires)
if not at or expires <= now or spot.score >= room.hold_score
    or spot.seen + room.abandon_after * 1000 <= at then
  drop_spot(vid, spot)
  return -1
end
if mode == 'take_waits' and spot.since > 0 then
  redis.call('HINCRBY', WAITS, wait_bucket(at - spot.since), 1)
end
spot.state, spot.since, spot.expires = 'a', at, expires
spot.deal_number = 0 -- prototype: a per-spot deal number is not derivable from the move
put_spot(vid, spot)
redis.call('ZREM', LINE, vid)
count_block(block_of(key), -1)
redis.call('ZADD', ACTIVE, fmt(expires), vid)
redis.call('HSET', MOVE_LEFT, move, fmt(at) .. ':' .. fmt(expires) .. ':' .. (tonumber(count) - 1))
redis.call('HINCRBY', ROOM, PENDING, -1)
return 1
