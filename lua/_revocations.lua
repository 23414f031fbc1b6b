-- needs: _base
-- The revocation rule, written once. RVK: field 'j:<session jti>' or 'v:<vid>' -> until (ms on
-- the room's clock); an entry counts while its until is ahead. With `forget`, a lapsed entry met
-- here is deleted (the far poll, which runs on a replica, never forgets); the sweep and
-- revoke.lua purge the others.
local function lapsed(until_ms, now) return tonumber(until_ms) <= now end

local function revoked(vid, session_jti, now, forget)
  if redis.call('HLEN', RVK) == 0 then return false end -- the common case: none at all
  local fields = {'j:' .. session_jti, 'v:' .. vid}
  local untils = redis.call('HMGET', RVK, fields[1], fields[2])
  local found = false
  for i = 1, 2 do
    if untils[i] and (i == 2 or session_jti ~= '') then
      if not lapsed(untils[i], now) then
        found = true
      elseif forget then
        redis.call('HDEL', RVK, fields[i])
      end
    end
  end
  return found
end

-- A bounded purge of lapsed entries, resumed at the cursor kept in the room's field
-- `cursor_field`: old revocations never pile up, whatever their number.
local function purge_revocations(cursor_field, now, count)
  if redis.call('EXISTS', RVK) == 0 then return end
  local page = redis.call('HSCAN', RVK, redis.call('HGET', ROOM, cursor_field) or '0',
    'COUNT', count)
  local items = page[2]
  for i = 1, #items, 2 do
    if lapsed(items[i + 1], now) then redis.call('HDEL', RVK, items[i]) end
  end
  redis.call('HSET', ROOM, cursor_field, page[1])
end
