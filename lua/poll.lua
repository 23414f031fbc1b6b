-- Poll a spot: proves the visitor is still there, carries the sweep along, runs the drain,
-- answers the spot's state.
-- ARGV: vid, ticket, generation, session jti (all from the signed queue token; the jti may be
-- '' in tickets signed before tickets carried it), spent (see `limited` in _room.lua).
-- Writes: last-seen only when it is due (see mark_seen); a refused poll writes nothing.
-- Reply: a queue answer (see `answer` in _room.lua) or {'ERR', code, retry s}.
local vid, ticket, gen, sjti, spent = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] or '',
  ARGV[5]
local r = load_room()
if not r or r.gen ~= gen then return err('TicketGone') end
local now = clock(r)
local s = get_spot(vid)
local mine = s ~= nil and s.t == ticket
-- Before the spot's own checks: a revoked visitor hears so even when its spot is already gone.
if redis.call('HLEN', RVK) > 0 and is_revoked(vid, mine and s.sj or sjti, now) then
  if mine then drop_spot(vid, s) end
  return err('SessionRevoked')
end
if not mine then return err('TicketGone') end
if s.st == 'a' and now > s.exp + 60000 then drop_spot(vid, s); return err('TicketGone') end
local wait = limited(r, s, now, spent)
if wait then return err('RateLimited', wait) end -- a refused poll changes nothing
local booked = mark_seen(r, s, now)
if booked then put_spot(vid, s) end
sweep_step(r, now, SWEEP_STEP) -- after `seen` is set, so this spot is never the one swept
regroup_step(r, REGROUP_CARRIED)
local dealt = 0
if s.st == 'w' then
  dealt = drain(r, now)
  save_room(r, true)
  if dealt > 0 then -- only a drain that dealt can have changed this spot
    s = get_spot(vid)
    if not s then return err('TicketGone') end
  end
end
return answer(r, vid, s, now)
