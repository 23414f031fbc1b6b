-- Honour a return link once (the e-mail of turn_mail.py): within the return window from the
-- spot's turn, its record is deleted (so a second opening, in any process, finds none) and its
-- admission starts anew: admissionTtlSec from now, as an admission dealt now would.
-- needs: _base, _record, _room, _spot
-- KEYS: room spots line bks blk active mail mailq
-- ARGV: vid, turn (ms, the link's), return window (s).
-- Reply: {'ok', ticket, generation, session jti} or {'no', 'late' | 'used'}.
local vid, turn = ARGV[1], tonumber(ARGV[2])
local room = load_room()
if not room then return {'no', 'late'} end
local now = clock(room)
if now > turn + tonumber(ARGV[3]) * 1000 then return {'no', 'late'} end
-- its turn deleted: whoever deletes it honours the link, once
if redis.call('HDEL', MAIL, 't:' .. vid) == 0 then return {'no', 'used'} end
redis.call('HDEL', MAIL, 'a:' .. vid, 'n:' .. vid, 'l:' .. vid)
redis.call('ZREM', MAILQ, vid)
local spot = get_spot(vid)
if not spot or spot.state ~= 'a' then return {'no', 'late'} end
spot.expires = now + room.admission_ttl * 1000
put_spot(vid, spot)
redis.call('ZADD', ACTIVE, fmt(spot.expires), vid)
return {'ok', spot.ticket, room.generation, spot.session_jti}
