-- Enter the line: one spot per (room, vid); a repeated entry returns the same spot. Like poll,
-- it carries a step of the sweep along, so a full line frees its abandoned places by itself.
-- ARGV: vid, session jti, score (0-100), network tag ('' unless the room binds it), spent
-- ('<generation>:<ticket>:<minute>' of a ticket whose polls this minute are used up, else '').
-- Reply: a queue answer (see `answer` in _room.lua) or {'ERR', code, retry s}.
local vid, sjti, score, qi, spent = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local r = load_room()
if not r then return err('RoomNotFound') end
if r.st == 'idle' then
  return {'idle', -1, -1, -1, 0, 0, 'idle', r.gen, 0, 0, '', '', '', 0, 0, 0}
end
local now = clock(r)
if redis.call('HLEN', RVK) > 0 and is_revoked(vid, sjti, now) then return err('SessionRevoked') end
local s = get_spot(vid)
if s and s.st == 'a' and now > s.exp + 60000 then drop_spot(vid, s); s = nil end
if s then
  local wait = limited(r, s, now, spent)
  if wait then return err('RateLimited', wait) end -- a refused entry changes nothing
  local booked = mark_seen(r, s, now)
  if s.st == 'w' and (s.sj ~= sjti or s.qi ~= qi) then s.sj, s.qi, booked = sjti, qi, true end
  if s.st == 'w' and s.sc ~= score then
    -- a new session with another score may move between line and held, at its own place
    local key = unplace(vid, s.sc)
    if key then place(r, vid, score, key) end
    s.sc, booked = score, true
  end
  if booked then put_spot(vid, s) end
  sweep_step(r, now, SWEEP_STEP) -- after the spot's own `seen`: a visitor never sweeps itself
  regroup_step(r, REGROUP_CARRIED)
  local dealt = drain(r, now)
  save_room(r, true)
  if dealt > 0 then s = get_spot(vid) end -- the drain may have admitted this spot
  return answer(r, vid, s, now)
end
sweep_step(r, now, SWEEP_STEP) -- before the fullness check: a swept place is free at once
regroup_step(r, REGROUP_CARRIED)
drain(r, now)
local eligible, held = waiting_counts()
local pool = now < r.oa
if eligible + held >= r.maxw or (pool and r.tk + 1 >= POOL_TICKETS) then
  save_room(r, true)
  redis.call('HINCRBY', ROOM, 'nfull', 1)
  return err('QueueFull', 60)
end
r.tk = r.tk + 1
s = {t = r.tk, sc = score, st = 'w', seen = now, sj = sjti, qi = qi, iat = now}
redis.call('HINCRBY', ROOM, 'nent', 1)
local free = r.cap == 0 or r.cap - redis.call('ZCARD', ACTIVE) > 0
if not pool and eligible == 0 and score < r.hold and r.st == 'open' and r.bank >= UNIT and free then
  -- nobody eligible is waiting and the budget allows: straight in, no queue jumped
  r.bank = r.bank - UNIT
  admit(r, vid, s, now)
else
  local key
  if pool then
    key = tonumber(redis.sha1hex(r.seed .. vid):sub(1, 7), 16) * POOL_TICKETS + r.tk
  else
    key = POST_OPEN + r.tk
  end
  place(r, vid, score, fmt(key))
  put_spot(vid, s)
end
save_room(r)
return answer(r, vid, s, now)
