-- Re-roll a committed draw before it is made: a new seed and a new, published commitment; the old
-- commitment stays listed as withdrawn (field `dwd`, a JSON list), so a re-roll is visible.
-- needs: _base, _room
-- KEYS: room
-- ARGV: the new seed (64 hex), its commitment (SHA-256 hex).
-- Reply: {'OK', committedAt ms} or {'ERR', 'NoDraw', 0} when no draw waits to be made (or it
--   names a beacon and opensAt has come).
local seed, commitment = ARGV[1], ARGV[2]
local room = load_room()
if not room then return err('RoomNotFound') end
if room.draw_state ~= 'c' then return err('NoDraw') end
local now = clock(room)
-- once opensAt has come the named beacon round may be public: a new seed then could be chosen
-- against it, so a draw waiting for its beacon keeps its seed
if now >= room.opens_at and (redis.call('HGET', ROOM, @beaconUrl) or '') ~= '' then
  return err('NoDraw')
end
local v = redis.call('HMGET', ROOM, @{commitment, committedAt, withdrawn})
local withdrawn = (v[@withdrawn] and v[@withdrawn] ~= '') and cjson.decode(v[@withdrawn]) or {}
withdrawn[#withdrawn + 1] = {commitment = v[@commitment], committedAt = tonumber(v[@committedAt]),
  withdrawnAt = now}
redis.call('HSET', ROOM, @drawSeed, seed, @commitment, commitment, @committedAt, fmt(now),
  @withdrawn, cjson.encode(withdrawn))
return {'OK', fmt(now)}
