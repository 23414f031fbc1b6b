-- needs: _base, _admissions, _revocations, _blocks, _bucket, _expiry, _record, _room, _spot, _draw_random
-- PROTOTYPE, loaded by bench/drain_cursor.py only (not a product script): the drain as a cursor
-- over the line. A drain moves the cursor (`x:cur` in the room hash: admitted up to order key
-- K) over the next `budget` admissible spots and books the move (MOVES: K -> K, MOVE_LEFT: K ->
-- "at:expires:count"); it writes no spot record, no active slot and leaves the line as it is.
-- The admission is taken at the visitor's next poll (take_cursor.lua): its record, its active
-- slot, its line entry. Capacity counts the active set plus the moves' admissions not yet taken
-- (`x:pend`), each lapsing with its move, so a visitor who never polls frees its slot at the
-- move's expiry. `bare`: the cursor moves over `budget` line entries without reading a spot
-- (the floor of the design: the skip rules then cannot hold).
-- The keys MOVES and MOVE_LEFT are derived from ROOM (same hash slot, but undeclared).
local CURSOR, PENDING, LAPSED = 'x:cur', 'x:pend', 'x:gone'
local MOVES, MOVE_LEFT = ROOM .. ':xmv', ROOM .. ':xml'
-- ticket|score|w|seen|session jti|network tag|since|| -> score, seen, jti, since
local CURSOR_PATTERN = '^[^|]*|([^|]*)|w|([^|]*)|([^|]*)|[^|]*|([^|]*)||$'
-- `lean`: score, seen and the session's id, no `since` (the wait histogram is counted at the
-- take, which rewrites the record anyway), and the revocations read once a drain while they are
-- few (REVOCATIONS_READ_WHOLE) instead of an HMGET per spot passed
local LEAN_PATTERN = '^[^|]*|([^|]*)|w|([^|]*)|([^|]*)|'
local REVOCATIONS_READ_WHOLE = 512

-- nil: none; false: too many to read whole; else field -> until
local function revocations_table()
  local n = redis.call('HLEN', RVK)
  if n == 0 then return nil end
  if n > REVOCATIONS_READ_WHOLE then return false end
  local flat, t = redis.call('HGETALL', RVK), {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- revoked() of _revocations.lua over the table (a lapsed entry is left for revoked() to forget)
local function revoked_in(rvk, vid, jti, now)
  local u = rvk['v:' .. vid]
  if u and not lapsed(u, now) then return true end
  if jti == '' then return false end
  u = rvk['j:' .. jti]
  return u ~= nil and not lapsed(u, now)
end
local CURSOR_MAX_SCAN = 1000

-- Moves whose admissions lapsed free their untaken ones; moves rise in K and time together,
-- so the oldest are the first.
local function expire_moves(now)
  local old = redis.call('ZRANGE', MOVES, 0, 15)
  if #old == 0 then return end
  local left = redis.call('HMGET', MOVE_LEFT, unpack(old))
  local gone, freed = {}, 0
  for i, k in ipairs(old) do
    local _, expires, count = (left[i] or '0:0:0'):match('^(%d+):(%d+):(%d+)$')
    if tonumber(expires) > now then break end
    gone[#gone + 1] = k
    freed = freed + tonumber(count)
  end
  if #gone == 0 then return end
  -- a spot at or below the last lapsed move's K took nothing: its take finds it gone
  redis.call('HSET', ROOM, LAPSED, gone[#gone])
  redis.call('ZREM', MOVES, unpack(gone))
  redis.call('HDEL', MOVE_LEFT, unpack(gone))
  if freed > 0 then redis.call('HINCRBY', ROOM, PENDING, -freed) end
end

-- drain_budget (lua/_drain_budget.lua) with the untaken admissions counted in capacity
-- (fail-open lease check left out: the bench's rooms are not fail-open).
local function cursor_budget(room, now, passthrough)
  if room.status ~= 'open' or now < room.opens_at then return 0 end
  if room.draw_state == 'c' or room.draw_state == 'r' then return 0 end
  accrue(room, now)
  local budget = passthrough and MAX_ADMIT or math.min(MAX_ADMIT, math.floor(room.bank / UNIT))
  if budget < 1 then return 0 end
  free_expired(now)
  expire_moves(now)
  if room.capacity > 0 then
    local pending = tonumber(redis.call('HGET', ROOM, PENDING)) or 0
    budget = math.min(budget, room.capacity - redis.call('ZCARD', ACTIVE) - pending)
  end
  return math.max(0, budget)
end

-- mode: 'read' (the skip rules read every spot passed), 'lean' (the same, lighter: see
-- LEAN_PATTERN), 'bare' (no spot read).
local function drain_cursor(room, now, mode)
  local bare, lean = mode == 'bare', mode == 'lean'

  if room.mode == 'random' then return drain_random(room, now) end -- not prototyped
  local passthrough = room.mode == 'passthrough'
  local budget = cursor_budget(room, now, passthrough)
  if budget < 1 then return 0 end
  local check_revoked = redis.call('HLEN', RVK) > 0
  local rvk = lean and revocations_table()
  local cursor = redis.call('HGET', ROOM, CURSOR)
  local from = cursor and ('(' .. cursor) or '-inf'
  local stop = prequeue_stop(room)
  local to = stop and ('(' .. fmt(stop)) or '+inf'
  local hold_score, abandon_ms = room.hold_score, room.abandon_after * 1000
  local admitted, scanned, held, last_key = 0, 0, 0, nil
  local waits, order = {}, {}
  while admitted < budget and scanned < CURSOR_MAX_SCAN do
    local want = math.min(budget - admitted, CURSOR_MAX_SCAN - scanned)
    local items = redis.call('ZRANGE', LINE, from, to, 'BYSCORE', 'LIMIT', 0, want, 'WITHSCORES')
    if #items == 0 then break end
    local n = #items / 2
    if bare then
      for i = 1, n do order[#order + 1] = tonumber(items[2 * i]) end
      admitted = admitted + n
    else
      local vids = {}
      for i = 1, n do vids[i] = items[2 * i - 1] end
      local raws = redis.call('HMGET', SPOTS, unpack(vids))
      for i = 1, n do
        local raw, vid = raws[i], vids[i]
        local score, seen, jti, since
        if not raw then
        elseif lean then
          score, seen, jti = raw:match(LEAN_PATTERN)
        else
          score, seen, jti, since = raw:match(CURSOR_PATTERN)
        end
        if not score then
          -- gone, or not a waiting record of today's layout: passed over (prototype)
        elseif tonumber(score) >= hold_score then
          -- held: leaves the line for its bucket, the one per-spot write left (rare)
          redis.call('ZREM', LINE, vid)
          count_block(block_of(items[2 * i]), -1)
          redis.call('ZADD', bucket(score), items[2 * i], vid)
          redis.call('SADD', BKS, score)
          held = held + 1
        elseif tonumber(seen) + abandon_ms <= now
            or (rvk and revoked_in(rvk, vid, jti, now))
            or (check_revoked and not rvk and revoked(vid, jti, now, false)) then
          -- passed over without spending the budget; its take finds it abandoned (or
          -- revoked) at the move's time, the sweep drops it
        else
          admitted = admitted + 1
          order[#order + 1] = tonumber(items[2 * i])
          local entered = not lean and tonumber(since)
          if entered and entered > 0 then
            local wait = wait_bucket(now - entered)
            waits[wait] = (waits[wait] or 0) + 1
          end
        end
      end
    end
    scanned = scanned + n
    last_key = items[#items]
    from = '(' .. last_key
  end
  if last_key then redis.call('HSET', ROOM, CURSOR, last_key) end
  if held > 0 then redis.call('HINCRBY', ROOM, @heldCount, held) end
  if admitted == 0 then return 0 end
  local expires = now + room.admission_ttl * 1000
  redis.call('ZADD', MOVES, last_key, last_key)
  redis.call('HSET', MOVE_LEFT, last_key, fmt(now) .. ':' .. fmt(expires) .. ':' .. admitted)
  redis.call('HINCRBY', ROOM, PENDING, admitted)
  room.dealt = room.dealt + admitted -- deal numbers per spot: not assigned (see the bench notes)
  if not passthrough then room.bank = room.bank - admitted * UNIT end
  count_admissions(now, admitted)
  for wait, count in pairs(waits) do redis.call('HINCRBY', WAITS, wait, count) end
  book_order(order)
  return admitted
end
