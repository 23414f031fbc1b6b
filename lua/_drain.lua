-- needs: _base, _admissions, _waits, _revocations, _blocks, _bucket, _expiry, _record, _room, _draw_random, _drain_budget, _line_arrival
-- The drain reads a waiting record in one match and without a table per spot (it deals up to
-- 200 a call), and writes the admitted record from its parts (see spot_record in _spot.lua),
-- booked in the drain's batch (see book_dealt in _admissions.lua).

-- The drain: admit in drain order from the head of LINE, as many as the bank (and capacity)
-- allows (a passthrough room: as capacity allows), at most MAX_ADMIT per call. Every spot read leaves the line: admitted, dropped
-- (abandoned or revoked, at no cost to the budget, counted in `nswept`), or filed as held (its
-- score is at or above holdScore and no regrouping step has reached it yet, counted in `nheld`).
-- Returns the number admitted.
local MAX_SCAN = 1000
local function drain(room, now)
  if room.mode == 'random' then return drain_random(room, now) end -- _draw_random.lua
  -- passthrough admits whatever the rate (capacity still bounds it), and spends no bank
  local passthrough = room.mode == 'passthrough'
  local budget = drain_budget(room, now, passthrough)
  if budget < 1 then return 0 end
  local check_revoked = redis.call('HLEN', RVK) > 0
  local admitted_at, expires = fmt(now), fmt(now + room.admission_ttl * 1000)
  local admitted, scanned, dropped, held, batch = 0, 0, 0, 0, new_batch()
  local records, slots, waits, order = batch.records, batch.slots, batch.waits, batch.order
  local n = 0 -- entries in `records` and `slots`, counted here (# walks the table)
  local hold_score, abandon_ms, deal_number = room.hold_score, room.abandon_after * 1000, room.dealt
  local stop = prequeue_stop(room) -- an event's pre-queue and those after it wait for its draw
  -- a room across regions: those who arrived after its lease's watermark wait (_region_gate)
  local watermark, cut = room.watermark, nil
  while admitted < budget and scanned < MAX_SCAN do
    local want = math.min(budget - admitted, MAX_SCAN - scanned)
    local items
    if stop then
      items = redis.call('ZRANGE', LINE, '-inf', '(' .. fmt(stop), 'BYSCORE', 'LIMIT', 0, want,
        'WITHSCORES')
    else
      items = redis.call('ZRANGE', LINE, 0, want - 1, 'WITHSCORES')
    end
    if #items == 0 then break end
    local vids, order_keys = {}, {}
    for i = 1, #items / 2 do vids[i] = items[2 * i - 1]; order_keys[i] = items[2 * i] end
    local raws = redis.call('HMGET', SPOTS, unpack(vids))
    for i = 1, #vids do
      local vid, raw = vids[i], raws[i]
      local ticket, score, seen, session_jti, network_tag, since
      if raw then
        @SPOT~(raw){ticket = ticket, score = score, state = 'w', seen = seen,
          sessionJti = session_jti, networkTag = network_tag, since = since, expires = '',
          dealNumber = ''}
      end
      if watermark and ticket and line_arrival(order_keys[i], since) > watermark then
        -- this one and all behind it arrived after the watermark: they stay (a drawn pool
        -- spot's arrival is its drawn key's place, lane invitees' 0: _line_arrival.lua)
        cut = i - 1
        break
      end
      if not raw then
        -- an orphaned order entry: nothing to admit
      elseif not ticket then -- an older record: the long way
        local spot = parse_spot(raw)
        if spot.score >= hold_score then
          redis.call('ZADD', bucket(spot.score), order_keys[i], vid)
          redis.call('SADD', BKS, spot.score)
          held = held + 1
        elseif abandoned(spot.seen, room.abandon_after, now) then
          book_abandoned(spot, now)
          redis.call('HDEL', SPOTS, vid)
          dropped = dropped + 1
        else
          room.dealt = deal_number
          deal(room, vid, spot, now, batch, tonumber(order_keys[i]))
          deal_number = room.dealt
          n = #slots
          admitted = admitted + 1
        end
      elseif tonumber(score) >= hold_score then
        redis.call('ZADD', bucket(score), order_keys[i], vid)
        redis.call('SADD', BKS, score)
        held = held + 1
      elseif tonumber(seen) + abandon_ms <= now -- abandoned (see _expiry.lua), inlined
          or (check_revoked and revoked(vid, session_jti, now, true)) then
        if tonumber(seen) + abandon_ms <= now then book_left_waiting(tonumber(since), now) end
        redis.call('HDEL', SPOTS, vid)
        dropped = dropped + 1
      else
        deal_number = deal_number + 1
        records[n + 1] = vid
        records[n + 2] = @SPOT{ticket = ticket, score = score, state = 'a', seen = seen,
          sessionJti = session_jti, networkTag = network_tag, since = admitted_at,
          expires = expires, dealNumber = deal_number}
        slots[n + 1] = expires
        slots[n + 2] = vid
        n = n + 2
        order[#order + 1] = tonumber(order_keys[i])
        local entered = tonumber(since)
        if entered and entered > 0 then
          local wait = wait_bucket(now - entered)
          waits[wait] = (waits[wait] or 0) + 1
        end
        admitted = admitted + 1
      end
    end
    if cut then
      for j = #vids, cut + 1, -1 do vids[j], order_keys[j] = nil, nil end
    end
    scanned = scanned + #vids
    -- every spot read leaves the line, and they are its first #vids: one range removal
    if #vids > 0 then
      redis.call('ZREMRANGEBYRANK', LINE, 0, #vids - 1)
      local first, last = block_of(order_keys[1]), block_of(order_keys[#vids])
      if first == last then count_block(first, -#vids) else count_keys(order_keys, -1) end
    end
    if cut then break end
  end
  room.dealt = deal_number
  if not passthrough then room.bank = room.bank - admitted * UNIT end
  book_dealt(room, now, batch)
  if dropped > 0 then redis.call('HINCRBY', ROOM, @abandoned, dropped) end
  if held > 0 then redis.call('HINCRBY', ROOM, @heldCount, held) end
  return admitted
end
