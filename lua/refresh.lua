-- Refresh an admission: a live active slot is extended by the room's admission TTL.
-- ARGV: vid, generation ('' for any: the jti names one), admission jti, session jti (`qj` of
-- the admission). A revoked session's admission is never extended, and its slot is freed.
-- Reply: a queue answer (see `answer` in _room.lua) or {'ERR', code, retry s}.
local vid, gen, jti, sjti = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] or ''
local r = load_room()
if not r or (gen and r.gen ~= gen) then return err('TicketGone') end
local now = clock(r)
local s = get_spot(vid)
local mine = s ~= nil and s.st == 'a' and admission_jti(r, s) == jti
if redis.call('HLEN', RVK) > 0 and is_revoked(vid, mine and s.sj or sjti, now) then
  if mine then drop_spot(vid, s) end
  return err('SessionRevoked')
end
if not mine then return err('TicketGone') end
local slot = tonumber(redis.call('ZSCORE', ACTIVE, vid))
if not slot or slot <= now then drop_spot(vid, s); return err('TicketGone') end
s.iat, s.exp, s.seen = now, now + r.ttl * 1000, now
put_spot(vid, s)
redis.call('ZADD', ACTIVE, fmt(s.exp), vid)
return answer(r, vid, s, now)
