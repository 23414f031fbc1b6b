-- Record invites just signed (docs/operators.md, "Invite links"): each id's terms in INVS, the
-- ids in issue order at INVO's tail. Nothing is written for a room deleted meanwhile, so no
-- record outlives its room.
-- needs: _base
-- KEYS: room invs invo
-- ARGV: the invites' terms (JSON: lane, uses, expiresAt, issuedAt), then their ids.
-- Reply: the number of invites on record in the room; or {'ERR', 'RoomNotFound', 0}.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
local terms, BATCH = ARGV[1], 500 -- a batch's arguments stay well within Lua's stack
for first = 2, #ARGV, BATCH do
  local fields, ids = {}, {}
  for i = first, math.min(#ARGV, first + BATCH - 1) do
    fields[#fields + 1], fields[#fields + 2] = ARGV[i], terms
    ids[#ids + 1] = ARGV[i]
  end
  redis.call('HSET', INVS, unpack(fields))
  redis.call('RPUSH', INVO, unpack(ids))
end
return redis.call('LLEN', INVO)
