-- Finish a draw (queue/draw.py): every pool spot has its drawn key; the root and the count are
-- stored and the draw marked made, which reveals the seed and lets the drain admit.
-- needs: _base, _room
-- KEYS: room
-- ARGV: the drawer's token, Merkle root (64 hex), entrants drawn.
-- Reply: 1, or {'ERR', 'DrawLost', 0} when another process holds the draw now.
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'r' or redis.call('HGET', ROOM, @drawHolder) ~= ARGV[1] then
  return err('DrawLost')
end
redis.call('HSET', ROOM, @drawState, 'd', @drawRoot, ARGV[2], @drawEntrants, ARGV[3],
  @drawHolder, '', @drawLease, 0)
return 1
