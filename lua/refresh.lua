-- Refresh an admission: a live active slot is extended by the room's admission TTL. A revoked
-- session's admission is never extended, and its slot is freed.
-- needs: _base, _room, _events, _spot, _revocations, _answer, _use
-- KEYS: room spots line active adm rvk bks blk waits used
-- ARGV: vid, generation ('' for any: the jti names one), admission jti, session jti (`qj` of
--   the admission).
-- Reply: a queue answer (see `answer` in _answer.lua) or {'ERR', code, retry s}.
local vid, generation, jti, session_jti = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] or ''
local room = load_room()
if not room or (generation and room.generation ~= generation) then return err('TicketGone') end
local now = clock(room)
at_events(room, now)
local spot = get_spot(vid)
local mine = spot ~= nil and spot.state == 'a' and admission_jti(room, spot) == jti
if revoked(vid, mine and spot.session_jti or session_jti, now, true) then
  if mine then forget_use(vid, spot); drop_spot(vid, spot) end
  return err('SessionRevoked')
end
if not mine then return err('TicketGone') end
local slot = tonumber(redis.call('ZSCORE', ACTIVE, vid))
if not slot or slot <= now then -- its visitor is here, a renewal too late: used all the same
  forget_use(vid, spot)
  drop_spot(vid, spot)
  return err('TicketGone')
end
mark_used(vid, spot)
spot.since, spot.expires, spot.seen = now, now + room.admission_ttl * 1000, now
put_spot(vid, spot)
redis.call('ZADD', ACTIVE, fmt(spot.expires), vid)
return answer(room, vid, spot, now)
