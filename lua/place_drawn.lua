-- One batch of a draw (queue/draw.py): give pool spots their drawn order keys and append their
-- entrant ids to the drawn list, in drawn order. A spot gone since the entrants were read (left,
-- swept) keeps its entrant id in the list, which was frozen at the draw, and has no key to move.
-- needs: _base, _room, _bucket, _blocks
-- KEYS: room spots line bks blk drawn
-- ARGV: the drawer's token, lease (ms), then per spot: vid, drawn order key, entrant id.
-- Reply: spots moved, or {'ERR', 'DrawLost', 0} when another process holds the draw now.
local token, lease = ARGV[1], tonumber(ARGV[2])
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'r' or redis.call('HGET', ROOM, @drawHolder) ~= token then
  return err('DrawLost')
end
redis.call('HSET', ROOM, @drawLease, fmt(clock(room) + lease))
local moved, ids, left, joined = 0, {}, {}, {}
for i = 3, #ARGV, 3 do
  local vid, order_key = ARGV[i], ARGV[i + 1]
  ids[#ids + 1] = ARGV[i + 2]
  local old = redis.call('ZSCORE', LINE, vid)
  if old then
    redis.call('ZADD', LINE, order_key, vid)
    left[#left + 1], joined[#joined + 1] = old, order_key
    moved = moved + 1
  else
    -- held: filed in its score's bucket (the spot's record names the score)
    local raw = redis.call('HGET', SPOTS, vid)
    local score
    if raw then @SPOT~(raw){score = score, ...} end
    if score and redis.call('ZADD', bucket(score), 'XX', 'CH', order_key, vid) == 1 then
      moved = moved + 1
    end
  end
end
-- the line's block counts, booked a block at a time: a batch spans few drawn blocks
count_keys(left, -1)
count_keys(joined, 1)
if #ids > 0 then redis.call('RPUSH', DRAWN, unpack(ids)) end
return moved
