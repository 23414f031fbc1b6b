-- needs: _base, _admissions, _waits, _revocations, _blocks, _bucket, _expiry, _record, _room, _cadence, _drain_budget
-- The drain of a room in mode random (docs/operators.md, "Queueing modes"): each admission is drawn
-- among the eligible waiting, every spot in the line with the same chance whatever its arrival. The
-- k-th admission of the opening takes rank H(seed, k) mod n of the line (n its length then), H the
-- first 52 bits of SHA-1 over the opening's secret seed (the pre-queue lottery's): reproducible
-- by us from the seed and the line, unpredictable to visitors. An order key drawn at entry
-- would have favoured newcomers over those who survived earlier draws; this never moves a key,
-- so a switch back to fifo finds the line in its order, less those admitted.
-- A spot drawn that is held, abandoned or revoked leaves the line as the fifo drain's would
-- (filed in its bucket, dropped) and the same deal number is drawn again among the rest.
-- Invitees in a lane (skip, priority: docs/operators.md, "Invite links") are ahead of the public
-- line in every mode: they are dealt first, in their order, and the draw is among the rest.
-- Times in ms of the room's clock. Returns the number admitted.
local DRAW_MAX_SCAN = 1000 -- spots read a call at most, as the fifo drain's MAX_SCAN
local function draw_rank(seed, deal_number, n)
  -- 13 hex digits: 52 bits, exact in a double; the bias of mod n is below n / 2^52
  return tonumber(redis.sha1hex(seed .. ':' .. deal_number):sub(1, 13), 16) % n
end

local function drain_random(room, now)
  local budget = drain_budget(room, now, false)
  if budget < 1 then return 0 end
  local check_revoked = redis.call('HLEN', RVK) > 0
  local admitted, scanned, dropped, held, batch = 0, 0, 0, 0, new_batch()
  local pre, later = 0, 0
  local stop = prequeue_stop(room) -- an event's pre-queue and those after it wait for its draw
  local n = stop and redis.call('ZCOUNT', LINE, '-inf', '(' .. fmt(stop)) or redis.call('ZCARD', LINE)
  while admitted < budget and scanned < DRAW_MAX_SCAN and n > 0 do
    -- invitees' lanes (keys below the draw's, _invite.lua) go first, in their order
    local item = redis.call('ZRANGE', LINE, 0, 0, 'WITHSCORES')
    if tonumber(item[2]) >= -DRAWN_SPAN then
      local rank = draw_rank(room.seed, room.dealt + 1, n)
      item = redis.call('ZRANGE', LINE, rank, rank, 'WITHSCORES')
    end
    local vid, order_key = item[1], item[2]
    local raw = redis.call('HGET', SPOTS, vid)
    local spot = raw and parse_spot(raw)
    redis.call('ZREM', LINE, vid)
    count_block(block_of(order_key), -1)
    n, scanned = n - 1, scanned + 1
    if not spot or spot.state ~= 'w' then
      -- an orphaned order entry: nothing to admit
    elseif spot.score >= room.hold_score then
      redis.call('ZADD', bucket(spot.score), order_key, vid)
      redis.call('SADD', BKS, spot.score)
      held = held + 1
    elseif abandoned(spot.seen, room.abandon_after, now)
        or (check_revoked and revoked(vid, spot.session_jti, now, true)) then
      if abandoned(spot.seen, room.abandon_after, now) then book_abandoned(spot, now) end
      redis.call('HDEL', SPOTS, vid)
      dropped = dropped + 1
    else
      local key = tonumber(order_key)
      if key < POST_OPEN_KEY then pre = pre + 1 else later = later + 1 end
      deal(room, vid, spot, now, batch, key)
      admitted = admitted + 1
    end
  end
  -- Admitted out of arrival order by design: the opening's fairness counts take them as from
  -- the pre-queue or later, never as `outOfOrder` (book_order, which this leaves out).
  batch.order = {}
  room.bank = room.bank - admitted * UNIT
  book_dealt(room, now, batch)
  if pre > 0 then redis.call('HINCRBY', ROOM, @admittedFromPreQueue, pre) end
  if later > 0 then redis.call('HINCRBY', ROOM, @admittedLater, later) end
  if dropped > 0 then redis.call('HINCRBY', ROOM, @abandoned, dropped) end
  if held > 0 then redis.call('HINCRBY', ROOM, @heldCount, held) end
  return admitted
end

-- A waiting spot's chance of admission in the next minute: the admissions the room can make
-- in a minute (its rate, bounded by free capacity; at full capacity the pace seen over the last
-- minute, as the ETA takes it) over the eligible waiting, at most 1. 0 while not admitting.
local function draw_odds(room, line, now)
  if room.status ~= 'open' or now + UNIT < room.opens_at or line < 1 then return 0 end
  local per_minute = room.rate
  if room.capacity > 0 then
    local live = active_count(now)
    local free = room.capacity - live
    if free <= 0 then free = admitted_last_minute(now) end
    per_minute = math.min(per_minute, free)
  end
  return math.min(1, per_minute / line)
end

-- A random room's poll cadence (ms): any spot may be drawn at any deal, so every spot polls
-- alike: as often as the budget allows the line (line / pollBudgetPerSecond s), from 2 s, and
-- at least three times within admissionTtlSec so an admission is noticed well before it
-- lapses (the cap wins over the budget: an admission lost costs more than polls). Before
-- opensAt, as the fifo line's cadence waits.
local function draw_cadence(room, line, now)
  local interval = math.max(2000, line * 1000 / room.poll_budget)
  interval = math.min(interval, room.admission_ttl * 1000 / 3)
  local before_opening = math.min(math.max(0, room.opens_at - now) / SPREAD, CADENCE_CAP)
  return math.floor(math.max(interval, before_opening))
end
