-- Revoke a session by jti or a visitor by vid. ARGV: kind ('j' or 'v'), value, until (ms).
-- A vid's spot is dropped now; a jti's spot is dropped when it next polls or the drain meets it.
local kind, value, untl = ARGV[1], ARGV[2], ARGV[3]
local r = load_room()
if not r then return 0 end
redis.call('HSET', RVK, kind .. ':' .. value, untl)
if kind == 'v' then
  local s = get_spot(value)
  if s then drop_spot(value, s); return 1 end
end
return 0
