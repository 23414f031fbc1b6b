-- A page of the room's invites on record, newest first, with their uses so far and when each
-- was withdrawn. Writes nothing.
-- needs: _base
-- KEYS: room invs invo inv
-- ARGV: cursor (the position in issue order to stop before; '' from the newest), limit.
-- Reply: {invites on record, next cursor ('' after the oldest), then per invite, newest first:
--   id, terms (JSON), uses so far, withdrawn at ('' if not)}; or {'ERR', 'RoomNotFound', 0}.
if redis.call('EXISTS', ROOM) == 0 then return err('RoomNotFound') end
local total = redis.call('LLEN', INVO)
local stop = math.min(tonumber(ARGV[1]) or total, total)
local start = math.max(0, stop - tonumber(ARGV[2]))
local out = {total, start > 0 and start or ''}
if stop <= start then return out end
local ids = redis.call('LRANGE', INVO, start, stop - 1)
for i = #ids, 1, -1 do
  local id = ids[i]
  local found = redis.call('HMGET', INV, id, id .. '|w')
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', INVS, id) or ''
  out[#out + 1] = found[1] or '0'
  out[#out + 1] = found[2] or ''
end
return out
