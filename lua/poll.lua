-- Poll a spot (the full poll, on the primary): proves the visitor is still there, carries the
-- sweep and the drain along, answers the spot's state.
-- needs: _base, _room, _events, _spot, _revocations, _drain, _sweep, _regroup, _answer, _cadence, _expiry, _use
-- KEYS: room spots line active adm rvk bks waits blk used
-- ARGV: vid, ticket, generation, session jti (all from the signed queue token; the jti may be
--   '' in tickets signed before tickets carried it), spent (see `limited` in _cadence.lua).
-- Writes: last-seen only when it is due (see mark_seen, keep_for_cadence); a refused poll
--   writes nothing.
-- Reply: a queue answer (see `answer` in _answer.lua) or {'ERR', code, retry s}.
local vid, ticket, generation, session_jti, spent =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] or '', ARGV[5]
local room = load_room()
if not room or room.generation ~= generation then return err('TicketGone') end
local now = clock(room)
at_events(room, now)
local spot = get_spot(vid)
local mine = spot ~= nil and spot.ticket == ticket
-- Before the spot's own checks: a revoked visitor hears so even when its spot is already gone.
if revoked(vid, mine and spot.session_jti or session_jti, now, true) then
  if mine then forget_use(vid, spot); drop_spot(vid, spot) end
  return err('SessionRevoked')
end
if not mine then return err('TicketGone') end
if spot.state == 'a' and admission_gone(spot.expires, now) then
  book_ran_out(vid, spot)
  drop_spot(vid, spot)
  return err('TicketGone')
end
local wait = limited(generation, ticket, now, spent)
if wait then return err('RateLimited', wait) end -- a refused poll changes nothing
if mark_seen(room.abandon_after, spot, now) then put_spot(vid, spot) end
sweep_step(room, now, SWEEP_STEP) -- after `seen` is booked, so this spot is never the one swept
regroup_step(room, REGROUP_CARRIED)
if spot.state == 'w' then
  local dealt = drain(room, now)
  save_room(room, true)
  if dealt > 0 then -- only a drain that dealt can have changed this spot
    spot = get_spot(vid)
    if not spot then return err('TicketGone') end
  end
end
return keep_for_cadence(room, vid, spot, answer(room, vid, spot, now), now)
