-- needs: _base, _record, _expiry, _due, _bucket, _blocks
local function get_spot(vid)
  local raw = redis.call('HGET', SPOTS, vid)
  if not raw then return nil end
  return parse_spot(raw)
end

-- The stored record of `spot` (see _record.lua): `expires` and the deal number only once admitted.
local function spot_record(spot)
  local admitted = spot.state == 'a'
  return @SPOT{ticket = fmt(spot.ticket), score = spot.score, state = spot.state,
    seen = fmt(spot.seen), sessionJti = spot.session_jti, networkTag = spot.network_tag,
    since = fmt(spot.since), expires = admitted and fmt(spot.expires) or '',
    dealNumber = admitted and fmt(spot.deal_number) or ''}
end

local function put_spot(vid, spot) redis.call('HSET', SPOTS, vid, spot_record(spot)) end

-- Books `seen` ahead when it falls short of the lead of the spot's cadence `interval` (ms; nil
-- before the answer is known: no lead) and the room's `grace` (s; nil: none), see seen_booking;
-- returns whether the spot must be written.
local function mark_seen(abandon_after, spot, now, interval, grace)
  local lead = seen_lead(interval, abandon_after, grace)
  if not seen_due(spot.seen, now, lead) then return false end
  spot.seen = seen_booking(abandon_after, now, lead)
  return true
end

-- A waiting spot is in LINE, or in its score's held bucket (a holdScore change may not have
-- moved it yet): both are tried, a ZREM of an absent member costs a lookup.
local function drop_spot(vid, spot)
  redis.call('HDEL', SPOTS, vid)
  if spot.state == 'a' then redis.call('ZREM', ACTIVE, vid); return end
  local order_key = redis.call('ZSCORE', LINE, vid)
  if order_key then
    redis.call('ZREM', LINE, vid)
    count_block(block_of(order_key), -1)
  end
  redis.call('ZREM', bucket(spot.score), vid)
end

-- Files a waiting spot's order key where its score puts it now.
local function place(hold_score, vid, score, order_key)
  if score < hold_score then
    redis.call('ZADD', LINE, order_key, vid)
    count_block(block_of(order_key), 1)
  else
    -- counted once per spot and bucket (a repeated entry at the same score adds nothing)
    if redis.call('ZADD', bucket(score), order_key, vid) == 1 then
      redis.call('HINCRBY', ROOM, @heldCount, 1)
    end
    redis.call('SADD', BKS, score)
  end
end

-- Takes a waiting spot's order key out of wherever it is filed; returns it (nil if nowhere).
local function unplace(vid, score)
  local order_key = redis.call('ZSCORE', LINE, vid)
  if order_key then
    redis.call('ZREM', LINE, vid)
    count_block(block_of(order_key), -1)
    return order_key
  end
  order_key = redis.call('ZSCORE', bucket(score), vid)
  if order_key then redis.call('ZREM', bucket(score), vid) end
  return order_key
end

-- Waiting spots: eligible (the line) and held.
local function waiting_counts()
  local held = 0
  for _, score in ipairs(redis.call('SMEMBERS', BKS)) do
    held = held + redis.call('ZCARD', bucket(score))
  end
  return redis.call('ZCARD', LINE), held
end
