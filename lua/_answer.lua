-- needs: _base, _admissions, _cadence, _blocks, _bucket, _spot, _regroup, _draw_random
-- The pace of admissions (a second) and the ETA of a position: the room's rate, or, when the
-- capacity is full, the pace admissions were seen at over the last minute (none: no honest ETA,
-- and the cadence keeps the rate's).
local function pace_and_eta(room, position, now)
  local pace = room.rate / 60
  if room.status ~= 'open' then return pace, -1 end
  if room.capacity > 0 and active_count(now) >= room.capacity then
    local recent = admitted_last_minute(now)
    if recent > 0 then return recent / 60, math.ceil(position * 60 / recent) end
    return pace, -1
  end
  return pace, eta_at_rate(room.opens_at, room.rate, position, now)
end

-- The cadence of a waiting spot at `position` (see poll_after in _cadence.lua).
local function spot_cadence(room, position, pace, now)
  local delay = math.max(0, room.opens_at - now)
  return poll_after(position, pace, delay, redis.call('ZCARD', LINE), room.poll_budget)
end

local function admission_jti(room, spot)
  return redis.sha1hex(room.id .. ':' .. room.generation .. ':' .. spot.ticket):sub(1, 16)
end

-- A queue answer, built by the names of its slots (script_replies.ANSWER: the assembler
-- writes the array in their order, '' for a slot not named, and Python decodes it by the same
-- names): status, ticket, position, eta s, opensAt ms, pollAfterMs, room status, generation,
-- admitted at ms, expires ms, admission jti, session jti, network tag, deal number, score,
-- now ms (the room's clock: the facade counts the poll in that minute), and for a waiting spot
-- in the line its order key and the time it is kept until unpolled (ms: seen + abandonAfterSec),
-- which its ticket carries for the far poll answered from a snapshot (room_snapshot.py), and
-- for a waiting spot of a random room its odds (see draw_odds; a decimal, position and ETA null).
-- -1 / '' stand for null.
local function answer(room, vid, spot, now)
  if spot.state == 'a' then
    return @ANSWER{status = 'admitted', ticket = spot.ticket, position = -1, eta = -1,
      opensAt = fmt(room.opens_at), pollAfterMs = 0, roomStatus = room.status,
      generation = room.generation, admittedAt = fmt(spot.since), expiresAt = fmt(spot.expires),
      admissionJti = admission_jti(room, spot), sessionJti = spot.session_jti,
      networkTag = spot.network_tag, dealNumber = spot.deal_number, score = spot.score,
      now = fmt(now)}
  end
  if spot.score >= room.hold_score then
    return @ANSWER{status = 'held', ticket = spot.ticket, position = -1, eta = -1,
      opensAt = fmt(room.opens_at), pollAfterMs = HELD_POLL_MS, roomStatus = room.status,
      generation = room.generation, admittedAt = 0, expiresAt = 0, sessionJti = spot.session_jti,
      networkTag = spot.network_tag, dealNumber = 0, score = spot.score, now = fmt(now)}
  end
  local rank = redis.call('ZRANK', LINE, vid)
  if not rank then -- released by a holdScore raise, not yet moved: it moves now
    local order_key = redis.call('ZSCORE', bucket(spot.score), vid)
    if order_key then
      redis.call('ZREM', bucket(spot.score), vid)
      redis.call('ZADD', LINE, order_key, vid)
      count_block(block_of(order_key), 1)
      rank = redis.call('ZRANK', LINE, vid)
      book_released({order_key})
    end
  end
  if room.prequeue then
    local v = redis.call('HMGET', ROOM, @{prequeueFirst, prequeueLast, prequeueUntil})
    local first, last = tonumber(v[@prequeueFirst]) or 0, tonumber(v[@prequeueLast]) or 0
    if spot.ticket >= first and (last == 0 or spot.ticket <= last) then
      -- in an event's pre-queue: its place is drawn at startsAt, so it has none to tell yet
      -- (nor an order key for its ticket: the far poll must not place it by the one it has)
      local starts = math.max(tonumber(v[@prequeueUntil]) or 0, now)
      local cadence = poll_after(1, room.rate / 60, starts - now, redis.call('ZCARD', LINE),
        room.poll_budget)
      return @ANSWER{status = 'waiting', ticket = spot.ticket, position = -1, eta = -1,
        opensAt = fmt(starts), pollAfterMs = cadence, roomStatus = room.status,
        generation = room.generation, admittedAt = 0, expiresAt = 0,
        sessionJti = spot.session_jti, networkTag = spot.network_tag, dealNumber = 0,
        score = spot.score, now = fmt(now), keptUntil = fmt(spot.seen + room.abandon_after * 1000)}
    end
  end
  if room.mode == 'random' then -- in the draw: no place or ETA, its odds instead
    local line = redis.call('ZCARD', LINE)
    local order_key = rank and redis.call('ZSCORE', LINE, vid) or ''
    return @ANSWER{status = 'waiting', ticket = spot.ticket, position = -1, eta = -1,
      opensAt = fmt(room.opens_at), pollAfterMs = draw_cadence(room, line, now),
      roomStatus = room.status, generation = room.generation, admittedAt = 0, expiresAt = 0,
      sessionJti = spot.session_jti, networkTag = spot.network_tag, dealNumber = 0,
      score = spot.score, now = fmt(now), orderKey = order_key,
      keptUntil = fmt(spot.seen + room.abandon_after * 1000),
      odds = string.format('%.4g', draw_odds(room, line, now))}
  end
  local position = (rank or 0) + 1
  local pace, eta = pace_and_eta(room, position, now)
  local order_key = rank and redis.call('ZSCORE', LINE, vid) or ''
  return @ANSWER{status = 'waiting', ticket = spot.ticket, position = position, eta = eta,
    opensAt = fmt(room.opens_at), pollAfterMs = spot_cadence(room, position, pace, now),
    roomStatus = room.status, generation = room.generation, admittedAt = 0, expiresAt = 0,
    sessionJti = spot.session_jti, networkTag = spot.network_tag, dealNumber = 0,
    score = spot.score, now = fmt(now), orderKey = order_key,
    keptUntil = fmt(spot.seen + room.abandon_after * 1000)}
end

-- After answering a waiting (or held) spot: keep it as long as its cadence asks, and the room's
-- gracePeriodSec beyond (see seen_lead). Only spots told to poll less often than
-- abandonAfterSec / 3, or in a room with a grace, write here.
local function keep_for_cadence(room, vid, spot, reply, now)
  local interval = reply[@ANSWER.pollAfterMs]
  if spot.state == 'w' and mark_seen(room.abandon_after, spot, now, interval, room.grace) then
    put_spot(vid, spot)
    if reply[@ANSWER.keptUntil] ~= '' then
      reply[@ANSWER.keptUntil] = fmt(spot.seen + room.abandon_after * 1000)
    end
  end
  return reply
end
