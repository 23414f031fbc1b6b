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
