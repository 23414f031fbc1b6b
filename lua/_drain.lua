-- needs: _admissions, _revocations
-- The drain's view of a waiting record, in one match and without a table per spot (it deals
-- up to 200 a call): head "ticket|score|", score, middle "|seen|session jti|network tag|",
-- seen, session jti, entry time ('' in records older than the wait histogram). The admitted
-- record is then the same with its state and tail rewritten (see spot_record in _spot.lua).
local WAITING_PATTERN = '^([^|]*|([^|]*)|)w(|([^|]*)|([^|]*)|[^|]*|)([^|]*)||$'
local function admitted_record(head, middle, admitted_at, expires, deal_number)
  return head .. 'a' .. middle .. admitted_at .. '|' .. expires .. '|' .. deal_number
end

-- The drain: admit in drain order from the head of LINE, as many as the bank (and capacity)
-- allows, at most MAX_ADMIT per call. Every spot read leaves the line: admitted, dropped
-- (abandoned or revoked, at no cost to the budget, counted in `nswept`), or filed as held (its
-- score is at or above holdScore and no regrouping step has reached it yet).
-- Returns the number admitted.
local MAX_SCAN = 1000
local function drain(room, now)
  if room.status ~= 'open' or now < room.opens_at then return 0 end
  accrue(room, now)
  local budget = math.min(MAX_ADMIT, math.floor(room.bank / UNIT))
  if budget < 1 then return 0 end -- the common case: nothing earned yet, nothing to read
  free_expired(now)
  if room.capacity > 0 then
    budget = math.min(budget, room.capacity - redis.call('ZCARD', ACTIVE))
  end
  if budget < 1 then return 0 end
  local check_revoked = redis.call('HLEN', RVK) > 0
  local admitted_at, expires = fmt(now), fmt(now + room.admission_ttl * 1000)
  local admitted, scanned, dropped, batch = 0, 0, 0, new_batch()
  while admitted < budget and scanned < MAX_SCAN do
    local want = math.min(budget - admitted, MAX_SCAN - scanned)
    local vids = redis.call('ZRANGE', LINE, 0, want - 1)
    if #vids == 0 then break end
    local records = redis.call('HMGET', SPOTS, unpack(vids))
    for i, vid in ipairs(vids) do
      local raw = records[i]
      local head, score, middle, seen, session_jti, since
      if raw then head, score, middle, seen, session_jti, since = raw:match(WAITING_PATTERN) end
      if not raw then
        -- an orphaned order entry: nothing to admit
      elseif not head then -- an older record: the long way
        local spot = parse_spot(raw)
        if spot.score >= room.hold_score then
          redis.call('ZADD', bucket(spot.score), redis.call('ZSCORE', LINE, vid), vid)
          redis.call('SADD', BKS, spot.score)
        elseif abandoned(spot.seen, room.abandon_after, now) then
          redis.call('HDEL', SPOTS, vid)
          dropped = dropped + 1
        else
          deal(room, vid, spot, now, batch)
          room.bank = room.bank - UNIT
          admitted = admitted + 1
        end
      elseif tonumber(score) >= room.hold_score then
        redis.call('ZADD', bucket(score), redis.call('ZSCORE', LINE, vid), vid)
        redis.call('SADD', BKS, score)
      elseif abandoned(tonumber(seen), room.abandon_after, now)
          or (check_revoked and revoked(vid, session_jti, now, true)) then
        redis.call('HDEL', SPOTS, vid)
        dropped = dropped + 1
      else
        room.dealt = room.dealt + 1
        local record = admitted_record(head, middle, admitted_at, expires, room.dealt)
        book_deal(batch, vid, record, expires, tonumber(since), now)
        room.bank = room.bank - UNIT
        admitted = admitted + 1
      end
    end
    scanned = scanned + #vids
    redis.call('ZREM', LINE, unpack(vids))
  end
  book_dealt(room, now, batch)
  if dropped > 0 then redis.call('HINCRBY', ROOM, 'nswept', dropped) end
  return admitted
end
