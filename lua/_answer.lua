-- needs: _admissions, _cadence
local function eta_seconds(room, position, now)
  if room.status ~= 'open' then return -1 end
  if room.capacity > 0 and active_count(now) >= room.capacity then
    local recent = admitted_last_minute(now) -- full: the pace admissions were seen at
    if recent > 0 then return math.ceil(position * 60 / recent) end
    return -1
  end
  return eta_at_rate(room.opens_at, room.rate, position, now)
end

local function admission_jti(room, spot)
  return redis.sha1hex(room.id .. ':' .. room.generation .. ':' .. spot.ticket):sub(1, 16)
end

-- A queue answer as a flat array, decoded by name in one place (script_replies.py):
-- status, ticket, position, eta s, opensAt ms, pollAfterMs, room status, generation,
-- admitted at ms, expires ms, admission jti, session jti, network tag, deal number, score,
-- now ms (the room's clock: the facade counts the poll in that minute). -1 / '' stand for null.
local function answer(room, vid, spot, now)
  if spot.state == 'a' then
    return {'admitted', spot.ticket, -1, -1, fmt(room.opens_at), 0, room.status, room.generation,
      fmt(spot.since), fmt(spot.expires), admission_jti(room, spot), spot.session_jti,
      spot.network_tag, spot.deal_number, spot.score, fmt(now)}
  end
  if spot.score >= room.hold_score then
    return {'held', spot.ticket, -1, -1, fmt(room.opens_at), 15000, room.status, room.generation,
      0, 0, '', spot.session_jti, spot.network_tag, 0, spot.score, fmt(now)}
  end
  local rank = redis.call('ZRANK', LINE, vid)
  if not rank then -- released by a holdScore raise, not yet moved: it moves now
    local order_key = redis.call('ZSCORE', bucket(spot.score), vid)
    if order_key then
      redis.call('ZREM', bucket(spot.score), vid)
      redis.call('ZADD', LINE, order_key, vid)
      rank = redis.call('ZRANK', LINE, vid)
    end
  end
  local position = (rank or 0) + 1
  return {'waiting', spot.ticket, position, eta_seconds(room, position, now), fmt(room.opens_at),
    poll_after(position), room.status, room.generation, 0, 0, '', spot.session_jti,
    spot.network_tag, 0, spot.score, fmt(now)}
end
