-- needs: _base, _room, _spot, _in_force
-- The safety net (docs/operators.md, "The safety net"; room_config.py `safetyNet`). A room with one
-- (`snc`: "activeSessions:arrivalsPerMinute:coolDownSec", '' for none) runs as passthrough while
-- calm and as its own mode while queueing (`sns` 'q'); `room.mode` is the mode in force
-- (net_mode, _in_force.lua). Switched here, inside enter.lua and tick.lua, on the room's clock (ms):
-- calm -> queueing when active sessions (live admissions: ACTIVE's slots not yet expired, as the
-- series counts them) or the arrivals of the last minute
-- reach a threshold; queueing -> calm once the line and the held buckets are empty and both
-- measures have stayed below their thresholds for coolDownSec (`snq`: since when, '' if not).
-- Arrivals are counted per minute of the room's clock (`snm` the minute, `sna` its count,
-- `snp` the minute before's); the last minute's are estimated as this minute's plus the share
-- of the previous one's the sliding minute still covers. Each switch is written to `snt`
-- (since when) and appended to `snl` ("q@ms;c@ms;"), which tick.lua hands to the ticker to audit.
local MINUTE_MS = 60000
local SWITCH_LOG_MAX = 4000 -- characters: a ticker down for long keeps the latest switches

local function waiting_line()
  local line, held = waiting_counts()
  return line + held > 0
end

-- One look at the room's traffic: `arriving` counts a newcomer (before judging it, so the
-- threshold's own arrival is the first to wait). Returns nothing; a switch updates `room`.
local function net_step(room, now, arriving)
  local active_max, arrivals_max, cool = room.safety_net:match('^(%d+):(%d+):(%d+)$')
  if not active_max then return end
  local v = redis.call('HMGET', ROOM, @{safetyNetMinute, safetyNetArrivals,
    safetyNetArrivalsBefore, safetyNetQuietSince})
  local minute = math.floor(now / MINUTE_MS)
  local counted_minute, count, previous = tonumber(v[@safetyNetMinute]),
    tonumber(v[@safetyNetArrivals]) or 0, tonumber(v[@safetyNetArrivalsBefore]) or 0
  if counted_minute ~= minute then -- a new minute: this one starts at 0
    previous = (counted_minute == minute - 1) and count or 0
    count = 0
  end
  local arrivals = count + previous * (MINUTE_MS - now % MINUTE_MS) / MINUTE_MS
  if arriving then
    redis.call('HSET', ROOM, @safetyNetMinute, fmt(minute), @safetyNetArrivals, fmt(count + 1),
      @safetyNetArrivalsBefore, fmt(previous))
  end
  local busy = redis.call('ZCOUNT', ACTIVE, '(' .. fmt(now), '+inf') >= tonumber(active_max)
    or arrivals >= tonumber(arrivals_max)
  local quiet_since, switch = tonumber(v[@safetyNetQuietSince]), nil
  if room.net_state ~= 'q' then
    if busy then switch = 'q' end
  elseif busy or waiting_line() then
    if quiet_since then redis.call('HSET', ROOM, @safetyNetQuietSince, '') end
  elseif not quiet_since then
    if tonumber(cool) == 0 then
      switch = 'c'
    else
      redis.call('HSET', ROOM, @safetyNetQuietSince, fmt(now))
    end
  elseif now - quiet_since >= tonumber(cool) * 1000 then
    switch = 'c'
  end
  if not switch then return end
  local log = redis.call('HGET', ROOM, @safetyNetSwitches) or ''
  log = log .. switch .. '@' .. fmt(now) .. ';'
  if #log > SWITCH_LOG_MAX then log = log:sub(log:find(';', #log - SWITCH_LOG_MAX) + 1) end
  redis.call('HSET', ROOM, @safetyNetState, switch, @safetyNetSince, fmt(now),
    @safetyNetQuietSince, '', @safetyNetSwitches, log)
  if switch == 'q' and room.status == 'open' then
    -- queueing admits at the rate from now on: the calm spell spent no bank, so it holds up
    -- to a second's worth that would let the next newcomers in unqueued
    redis.call('HSET', ROOM, @bank, '0', @accruedAt, fmt(now))
    room.bank, room.accrued_at = 0, now
    room.loaded[1], room.loaded[2] = 0, now
  end
  room.net_state = switch
  room.mode = net_mode(room.safety_net, switch, room.own_mode)
end
