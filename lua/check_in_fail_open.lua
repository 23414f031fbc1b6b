-- A process checks in with a failMode-open room (queue/line/fail_open_checkin.py): it holds no
-- outage admission of this room that is not booked. The room's register (FO) keeps each
-- process's last check-in, and ROOM's `fol` the time until which every registered process is
-- known to have booked its own: the drain deals nothing from then until all of them check in
-- again (_drain_budget.lua), so a spot one process let in offline is never dealt again by
-- another that found Redis first. A process missing from then (it died during the outage) is
-- waited for `grace` ms at most, counted from the first check-in that found it missing.
-- needs: _base, _clock
-- KEYS: room fo
-- ARGV: process id, valid until (room clock ms: a check-in delivered later, say after a
--   partition held it in a socket, is ignored; 0: no check-in, a probe that reads the clock or
--   a notice of an outage), '1' when the process saw Redis unreachable since its last check-in
--   (then every process must check in again before the next drain), '1' to leave the register
--   (a process that stops), stale (ms a check-in vouches for), grace (ms).
-- Reply: {1 when checked in, now (room clock ms), 1 while drains are held}.
local proc, valid_until = ARGV[1], tonumber(ARGV[2]) or 0
local outage, leaving = ARGV[3] == '1', ARGV[4] == '1'
local stale, grace = tonumber(ARGV[5]), tonumber(ARGV[6])
local v = redis.call('HMGET', ROOM, @{status, pinnedClock, clockOffset, failOpenLease})
if not v[@status] then return {0, 0, 0} end -- no such room (deleted)
local now = room_clock(tonumber(v[@pinnedClock]) or 0, tonumber(v[@clockOffset]) or 0)
local lease_before = tonumber(v[@failOpenLease])
local checked = 0
if leaving then
  redis.call('HDEL', FO, proc, proc .. '|n')
else
  -- told of an outage (even by a process not ready to check in): every stamp before now
  -- vouches for nothing, so every process must check in again before the next drain
  if outage then redis.call('HSET', FO, '|since', fmt(now)) end
  if valid_until > 0 and now <= valid_until then
    redis.call('HSET', FO, proc, fmt(now))
    redis.call('HDEL', FO, proc .. '|n')
    checked = 1
  elseif not outage and (valid_until == 0 or redis.call('EXISTS', FO) == 0) then
    return {0, fmt(now), 0} -- a probe, or too late to an empty register: nothing to reckon
  end
  -- The lease is reckoned again only as it nears its end: a later stamp never shortens it,
  -- and until then no process can have gone missing (its stamp + stale is beyond the lease).
  if checked == 1 and not outage and lease_before and lease_before - stale / 2 > now then
    return {1, fmt(now), 0}
  end
end
-- Fields: '<process>' its last check-in, '<process>|n' when it was found missing, '|since'
-- the last check-in of a process that saw an outage (stamps before it vouch for nothing).
local fields = redis.call('HGETALL', FO)
local since, stamps, noticed = 0, {}, {}
for i = 1, #fields, 2 do
  local name, at = fields[i], tonumber(fields[i + 1])
  if name == '|since' then since = at
  elseif name:sub(-2) == '|n' then noticed[name:sub(1, -3)] = at
  else stamps[name] = at end
end
local lease, held = nil, false
for name, at in pairs(stamps) do
  if at < since or at + stale <= now then -- missing: may hold outage admissions
    local found = noticed[name]
    if not found then
      found = now
      redis.call('HSET', FO, name .. '|n', fmt(now))
    end
    if found + grace <= now then
      redis.call('HDEL', FO, name, name .. '|n') -- gone (died): waited for long enough
    else
      held = true
    end
  elseif not lease or at + stale < lease then
    lease = at + stale
  end
end
if held then
  redis.call('HSET', ROOM, @failOpenLease, '0')
elseif lease then
  redis.call('HSET', ROOM, @failOpenLease, fmt(lease))
else
  redis.call('HDEL', ROOM, @failOpenLease) -- nobody registered: nobody to wait for
end
redis.call('PEXPIRE', FO, 86400000) -- a room nobody serves for a day forgets its register
return {checked, fmt(now), held and 1 or 0}
