-- Refresh an admission: a live active slot is extended by the room's admission TTL.
-- ARGV: vid, generation ('' for any: the jti names one), admission jti (from the admission).
local vid, gen, jti = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local r = load_room()
if not r or (gen and r.gen ~= gen) then return err('TicketGone') end
local now = clock(r)
local s = get_spot(vid)
if not s or s.st ~= 'a' or admission_jti(r, s) ~= jti then return err('TicketGone') end
local slot = tonumber(redis.call('ZSCORE', ACTIVE, vid))
if not slot or slot <= now then drop_spot(vid, s); return err('TicketGone') end
s.iat, s.exp, s.seen = now, now + r.ttl * 1000, now
put_spot(vid, s)
redis.call('ZADD', ACTIVE, fmt(s.exp), vid)
return answer(r, vid, s, now)
