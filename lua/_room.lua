-- Shared helpers, prepended to every room script by anteroom.engine (except the standalone
-- poll_far.lua). Every script: KEYS[1] = the room's key base; ARGV and reply in its header.
-- Units: times in epoch milliseconds (Redis TIME + the room's clock offset `clk`);
-- the admission bank in "rate-milliseconds": one admission = 60000 units, one ms at rate R
-- earns R units, so the arithmetic stays in integers.
-- KEYS[1] is the room's key base "<prefix>r:{<id>}:"; every key below shares its hash tag.
-- The order: eligible waiting spots in one sorted set, LINE, by drain-order key, so a position
-- is one ZRANK and the drain reads one head. Held spots (score >= holdScore) are kept apart in
-- one sorted set per score, `b:<score>` (scores listed in BKS), under the same keys, so a
-- holdScore change moves whole scores back at their original place. Bucket keys are derived
-- here rather than declared, which is safe in a Cluster: they hash to the slot of KEYS[1].
local BASE = KEYS[1]
local ROOM, SPOTS, ACTIVE = BASE .. 'room', BASE .. 'spots', BASE .. 'active'
local ADM, RVK, BKS, LINE = BASE .. 'adm', BASE .. 'rvk', BASE .. 'bks', BASE .. 'line'
local WAITS = BASE .. 'waits'
local UNIT = 60000
local MAX_ADMIT, MAX_SCAN = 200, 1000
local POST_OPEN = 4503599627370496 -- 2^52: post-open keys sort behind every pool key
local POOL_TICKETS = 16777216      -- 2^24 tickets fit beside a 28-bit lottery number

local function fmt(n) return string.format('%.0f', n) end
local function bucket(score) return BASE .. 'b:' .. score end

-- The room's fields, read in one HMGET and built in one table constructor (which sizes the
-- table once; filling an empty one field by field rehashes it six times on every call).
local function load_room()
  local v = redis.call('HMGET', ROOM, 'st', 'seed', 'rid', 'oa', 'rate', 'cap', 'ttl', 'hold',
    'maxw', 'aban', 'clk', 'fix', 'bank', 'last', 'tk', 'dealt', 'gen', 'peak', 'swt', 'swc',
    'rel', 'cvk')
  if not v[1] then return nil end
  local n = tonumber
  local r = {st = v[1], seed = v[2], rid = v[3], oa = n(v[4]) or 0, rate = n(v[5]) or 0,
    cap = n(v[6]) or 0, ttl = n(v[7]) or 0, hold = n(v[8]) or 0, maxw = n(v[9]) or 0,
    aban = n(v[10]) or 0, clk = n(v[11]) or 0, fix = n(v[12]) or 0, bank = n(v[13]) or 0,
    last = n(v[14]) or 0, tk = n(v[15]) or 0, dealt = n(v[16]) or 0, gen = n(v[17]) or 0,
    peak = n(v[18]) or 0, swt = n(v[19]) or 0, swc = v[20] or '0', rel = v[21] or '0',
    cvk = v[22] or '', loaded = false}
  r.loaded = {r.bank, r.last, r.tk, r.dealt, r.peak}
  return r
end

-- Writes back only the counters that changed: most polls change none or two of them.
-- With `lazy`, accrual alone (bank and last moved, nobody dealt) is not written: accruing later
-- from the stored bank and last gives the same bank, as min(cap, min(cap, b + x) + y) =
-- min(cap, b + x + y) for earnings x, y >= 0. Rate changes and pauses book accrual themselves.
local COUNTERS = {'bank', 'last', 'tk', 'dealt', 'peak'}
local function save_room(r, lazy)
  local args, was = {}, r.loaded
  local skip_accrual = lazy and r.dealt == was[4]
  for i, f in ipairs(COUNTERS) do
    if r[f] ~= was[i] and not (skip_accrual and i <= 2) then
      args[#args + 1] = f; args[#args + 1] = fmt(r[f])
    end
  end
  if #args > 0 then redis.call('HSET', ROOM, unpack(args)) end
end

local function clock(r)
  -- `fix` pins the clock (tests compare against a model); `clk` shifts it. Neither is
  -- reachable from any HTTP route.
  if r.fix > 0 then return r.fix + r.clk end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + r.clk
end

-- Spot record: ticket|score|state(w,a)|seen|session jti|qi|iat|exp|deal no.
-- While waiting, iat holds the entry time (for the wait histogram) and the last two are empty. One match, not a split loop: this runs on every poll.
-- The per-ticket poll limit is not kept here: the engine facade counts polls in its own memory
-- and names, in each call's `limit` argument, a ticket whose minute is used up (see limited).
local SPOT_PATTERN = '^' .. string.rep('([^|]*)|', 8) .. '([^|]*)$'
local function parse_spot(raw)
  local t, sc, st, seen, sj, qi, iat, exp, dn = raw:match(SPOT_PATTERN)
  return {t = tonumber(t), sc = tonumber(sc), st = st, seen = tonumber(seen), sj = sj, qi = qi,
    iat = tonumber(iat) or 0, exp = tonumber(exp) or 0, dn = tonumber(dn) or 0}
end

local function get_spot(vid)
  local raw = redis.call('HGET', SPOTS, vid)
  if not raw then return nil end
  return parse_spot(raw)
end

local function put_spot(vid, s)
  local tail = fmt(s.iat) .. '||'
  if s.st == 'a' then tail = fmt(s.iat) .. '|' .. fmt(s.exp) .. '|' .. fmt(s.dn) end
  redis.call('HSET', SPOTS, vid, table.concat({fmt(s.t), s.sc, s.st, fmt(s.seen), s.sj, s.qi,
    tail}, '|'))
end

-- Last-seen, booked ahead: a poll finding `seen` still in the future books nothing; one finding
-- it past books `seen` = now + min(abandonAfterSec / 2, 150 s). A spot is abandoned at seen +
-- abandonAfterSec, so it is never dropped sooner than abandonAfterSec after its last poll, nor
-- more than that booking later (capped, so a day-long abandonAfterSec is not half a day late),
-- and a visitor polling every 15 s (abandonAfterSec 300) books one poll in eleven.
-- Returns whether the spot must be written with replication on.
local SEEN_BOOKING_MAX = 150000 -- ms; keep in step with poll_far.lua and the reference model
local function mark_seen(r, s, now)
  if s.seen >= now then return false end
  s.seen = now + math.min(r.aban * 500, SEEN_BOOKING_MAX)
  return true
end

-- A waiting spot is in LINE, or in its score's held bucket (a holdScore change may not have
-- moved it yet): both are tried, a ZREM of an absent member costs a lookup.
local function drop_spot(vid, s)
  redis.call('HDEL', SPOTS, vid)
  if s.st == 'a' then redis.call('ZREM', ACTIVE, vid); return end
  redis.call('ZREM', LINE, vid)
  redis.call('ZREM', bucket(s.sc), vid)
end

-- Files a waiting spot's order key where its score puts it now.
local function place(r, vid, score, key)
  if score < r.hold then
    redis.call('ZADD', LINE, key, vid)
  else
    redis.call('ZADD', bucket(score), key, vid)
    redis.call('SADD', BKS, score)
  end
end

-- Takes a waiting spot's order key out of wherever it is filed; returns it (nil if nowhere).
local function unplace(vid, score)
  local key = redis.call('ZSCORE', LINE, vid)
  if key then redis.call('ZREM', LINE, vid); return key end
  key = redis.call('ZSCORE', bucket(score), vid)
  if key then redis.call('ZREM', bucket(score), vid) end
  return key
end

-- Revocations: field 'j:<session jti>' or 'v:<vid>' -> until (ms on the room's clock). An entry
-- past its time no longer counts and is deleted where it is met (revoke.lua purges a few more).
local function revoked_entry(field, now)
  local untl = redis.call('HGET', RVK, field)
  if not untl then return false end
  if tonumber(untl) > now then return true end
  redis.call('HDEL', RVK, field)
  return false
end

local function is_revoked(vid, sj, now)
  return (sj ~= '' and revoked_entry('j:' .. sj, now)) or revoked_entry('v:' .. vid, now)
end

-- Earn admissions for open time since `last`. The bank never holds more than one second's
-- worth (and at least one admission), which is what keeps resumes and quiet spells burst-free.
local function accrue(r, now)
  if r.st ~= 'open' then return end
  local from = math.max(r.last, r.oa)
  if now > from then
    r.bank = math.min(math.max(UNIT, r.rate * 1000), r.bank + (now - from) * r.rate)
    r.last = now
  end
end

-- Admissions dealt per second in a 60-slot ring, for admittedLastMinute and capacity ETAs.
local function count_admissions(now, count)
  local sec = math.floor(now / 1000)
  local slot = tostring(sec % 60)
  local cur = redis.call('HGET', ADM, slot)
  local n = 0
  if cur then
    local s, c = cur:match('^(%d+):(%d+)$')
    if tonumber(s) == sec then n = tonumber(c) end
  end
  redis.call('HSET', ADM, slot, sec .. ':' .. (n + count))
end

local function admitted_last_minute(now)
  local sec = math.floor(now / 1000)
  local total = 0
  for _, v in ipairs(redis.call('HVALS', ADM)) do
    local s, c = v:match('^(%d+):(%d+)$')
    if tonumber(s) > sec - 60 then total = total + tonumber(c) end
  end
  return total
end

-- Slots expire by themselves: a bounded clean-up keeps the set honest without trusting browsers.
local function free_expired(now)
  local gone = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', fmt(now), 'LIMIT', 0, MAX_ADMIT)
  if #gone > 0 then redis.call('ZREM', ACTIVE, unpack(gone)) end
end

local function active_count(now) return redis.call('ZCOUNT', ACTIVE, '(' .. fmt(now), '+inf') end

-- The wait histogram (WAITS): admissions by their wait from entry, field = the bucket's upper
-- bound in seconds (the operator console reads it).
local WAIT_BOUNDS = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
local function wait_bucket(wait_ms)
  for _, bound in ipairs(WAIT_BOUNDS) do
    if wait_ms <= bound * 1000 then return tostring(bound) end
  end
  return 'inf'
end

-- Admissions are dealt in a batch: each spot is written as it is admitted, then the batch's
-- active slots, admission count, waits and peak are booked with one command each.
local function new_batch() return {slots = {}, waits = {}} end

local function deal(r, vid, s, now, batch)
  if s.iat > 0 then -- its entry time (records written before the histogram have none)
    local b = wait_bucket(now - s.iat)
    batch.waits[b] = (batch.waits[b] or 0) + 1
  end
  s.st, s.iat, s.exp = 'a', now, now + r.ttl * 1000
  r.dealt = r.dealt + 1
  s.dn = r.dealt
  put_spot(vid, s)
  batch.slots[#batch.slots + 1] = fmt(s.exp)
  batch.slots[#batch.slots + 1] = vid
end

local function book_dealt(r, now, batch)
  if #batch.slots == 0 then return end
  redis.call('ZADD', ACTIVE, unpack(batch.slots))
  count_admissions(now, #batch.slots / 2)
  for b, n in pairs(batch.waits) do redis.call('HINCRBY', WAITS, b, n) end
  if r.cap > 0 then
    local n = redis.call('ZCARD', ACTIVE)
    if n > r.peak then r.peak = n end
  end
end

local function admit(r, vid, s, now)
  local batch = new_batch()
  deal(r, vid, s, now, batch)
  book_dealt(r, now, batch)
end

-- Waiting spots: eligible (the line) and held.
local function waiting_counts()
  local held = 0
  for _, b in ipairs(redis.call('SMEMBERS', BKS)) do held = held + redis.call('ZCARD', bucket(b)) end
  return redis.call('ZCARD', LINE), held
end

-- Regrouping after a holdScore change, a bounded step at a time, every spot at its original
-- order key. `rel` = '1' while held buckets under holdScore may still hold spots (a raise);
-- `cvk` is the order key a conviction pass (a lowering) has reached in the line, '' if none.
-- Until a step has reached a spot, the drain still treats it by its score (never admitting a
-- held spot) and a released spot is moved when it polls; positions of others count spots not
-- yet moved, so a change to a line longer than one step is exact only once regrouped.
local REGROUP_STEP, REGROUP_CARRIED = 1000, 200
local SCORE_PATTERN = '^[^|]*|([^|]*)|'

local function release_step(r, count)
  local pending = false
  for _, b in ipairs(redis.call('SMEMBERS', BKS)) do
    if tonumber(b) < r.hold then
      local items = {}
      if count > 0 then items = redis.call('ZRANGE', bucket(b), 0, count - 1, 'WITHSCORES') end
      if #items > 0 then
        local pairs_in, ids = {}, {}
        for i = 1, #items, 2 do
          pairs_in[#pairs_in + 1] = items[i + 1]; pairs_in[#pairs_in + 1] = items[i]
          ids[#ids + 1] = items[i]
        end
        redis.call('ZADD', LINE, unpack(pairs_in))
        redis.call('ZREM', bucket(b), unpack(ids))
        count = count - #ids
      end
      if redis.call('EXISTS', bucket(b)) == 1 then pending = true end
    end
  end
  if not pending then r.rel = '0' end
  return count
end

local function convict_step(r, count)
  local lo = r.cvk == '-inf' and '-inf' or '(' .. r.cvk
  local items = redis.call('ZRANGEBYSCORE', LINE, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, count)
  for i = 1, #items, 2 do
    local vid, key = items[i], items[i + 1]
    local raw = redis.call('HGET', SPOTS, vid)
    local score = raw and tonumber(raw:match(SCORE_PATTERN))
    if not score then
      redis.call('ZREM', LINE, vid) -- an orphaned order entry
    elseif score >= r.hold then
      redis.call('ZREM', LINE, vid)
      place(r, vid, score, key)
    end
    r.cvk = key
  end
  if #items < 2 * count then r.cvk = '' end
end

local function regroup_step(r, count)
  if r.rel ~= '1' and r.cvk == '' then return end -- the common case: nothing to move
  if r.rel == '1' then count = release_step(r, count) end
  if r.cvk ~= '' and count > 0 then convict_step(r, count) end
  redis.call('HSET', ROOM, 'rel', r.rel, 'cvk', r.cvk)
end

-- Admit in drain order from the head of the line. Every spot read leaves the line: admitted,
-- dropped (abandoned or revoked, at no cost to the budget), or filed as held (its score is at
-- or above holdScore, and no regrouping step has reached it yet).
local function drain(r, now)
  if r.st ~= 'open' or now < r.oa then return 0 end
  accrue(r, now)
  local budget = math.min(MAX_ADMIT, math.floor(r.bank / UNIT))
  if budget < 1 then return 0 end -- the common case: nothing earned yet, nothing to read
  free_expired(now)
  if r.cap > 0 then budget = math.min(budget, r.cap - redis.call('ZCARD', ACTIVE)) end
  if budget < 1 then return 0 end
  local check_revoked = redis.call('HLEN', RVK) > 0
  local done, scanned, dropped, batch = 0, 0, 0, new_batch()
  while done < budget and scanned < MAX_SCAN do
    local want = math.min(budget - done, MAX_SCAN - scanned)
    local items = redis.call('ZRANGE', LINE, 0, want - 1, 'WITHSCORES')
    if #items == 0 then break end
    local read = {}
    for i = 1, #items, 2 do
      local vid = items[i]
      read[#read + 1] = vid
      local s = get_spot(vid)
      if not s then
        -- an orphaned order entry: nothing to admit
      elseif s.sc >= r.hold then
        redis.call('ZADD', bucket(s.sc), items[i + 1], vid)
        redis.call('SADD', BKS, s.sc)
      elseif s.seen + r.aban * 1000 <= now or (check_revoked and is_revoked(vid, s.sj, now)) then
        redis.call('HDEL', SPOTS, vid)
        dropped = dropped + 1
      else
        deal(r, vid, s, now, batch)
        r.bank = r.bank - UNIT
        done = done + 1
      end
    end
    scanned = scanned + #read
    redis.call('ZREM', LINE, unpack(read))
  end
  book_dealt(r, now, batch)
  if dropped > 0 then redis.call('HINCRBY', ROOM, 'nswept', dropped) end
  return done
end

-- The sweep: abandoned waiting spots and admissions a minute past expiry are dropped anywhere in
-- the line, not only where the drain reaches. A pass starts at most once a minute per room and
-- walks the spots with HSCAN, a bounded step per call, so enter and poll carry it along without
-- any process of their own; being inside the room's script, it needs no lock between workers.
local SWEEP_EVERY, SWEEP_STEP = 60000, 100

-- State and last poll of a raw spot record, without building the whole record: most are alive.
local SWEEP_PATTERN = '^[^|]*|[^|]*|([^|]*)|([^|]*)|'

-- Expired revocations go a bounded chunk per pass, on their own cursor.
local function forget_revocations(now, count)
  if redis.call('EXISTS', RVK) == 0 then return end
  local res = redis.call('HSCAN', RVK, redis.call('HGET', ROOM, 'swr') or '0', 'COUNT', count)
  local items = res[2]
  for i = 1, #items, 2 do
    if tonumber(items[i + 1]) < now then redis.call('HDEL', RVK, items[i]) end
  end
  redis.call('HSET', ROOM, 'swr', res[1])
end

-- One step of the sweep (about `count` spots); returns spots dropped, pass finished.
local function sweep_step(r, now, count)
  local cursor = r.swc
  if cursor == '0' then
    if now - r.swt < SWEEP_EVERY then return 0, true end -- the common case: nothing to do
    r.swt = now
    forget_revocations(now, count)
  end
  local res = redis.call('HSCAN', SPOTS, cursor, 'COUNT', count)
  local items, dropped, silent_since = res[2], 0, now - r.aban * 1000
  for i = 2, #items, 2 do
    local st, seen = items[i]:match(SWEEP_PATTERN)
    -- a waiting spot unpolled for abandonAfterSec, or an admission a minute past its expiry
    if (st == 'w' and tonumber(seen) <= silent_since) or st == 'a' then
      local s = parse_spot(items[i])
      if st == 'w' or now > s.exp + 60000 then
        drop_spot(items[i - 1], s)
        dropped = dropped + 1
      end
    end
  end
  r.swc = res[1]
  redis.call('HSET', ROOM, 'swt', fmt(r.swt), 'swc', r.swc)
  if dropped > 0 then redis.call('HINCRBY', ROOM, 'nswept', dropped) end
  return dropped, r.swc == '0'
end

local function poll_after(pos)
  if pos <= 10 then return 1000 elseif pos <= 100 then return 2500
  elseif pos <= 1000 then return 5000 end
  return 15000
end

-- Per-ticket limit (90 polls a minute): the facade counts each ticket's polls in a fixed
-- one-minute window of the room's clock, and passes '<generation>:<ticket>:<minute>' when that
-- ticket has used up that minute ('' otherwise). Refused: the seconds until the next minute.
local function limited(r, s, now, spent)
  if spent == nil or spent == '' then return nil end
  local gen, ticket, minute = spent:match('^(%d+):(%d+):(%d+)$')
  local this_minute = math.floor(now / 60000)
  if tonumber(gen) ~= r.gen or tonumber(ticket) ~= s.t or tonumber(minute) ~= this_minute then
    return nil
  end
  return math.ceil(((this_minute + 1) * 60000 - now) / 1000)
end

local function admission_jti(r, s) return redis.sha1hex(r.rid .. ':' .. r.gen .. ':' .. s.t):sub(1, 16) end

-- A queue answer as a flat array:
-- status, ticket, position, eta seconds, opensAt, pollAfterMs, room status, generation,
-- iat, exp, admission jti, session jti, network tag, deal number, score, now (the room's clock,
-- ms: the facade counts the poll in that minute) (-1 / '' stand for null).
-- Session jti, network tag and score go into the queue token, so an outage knows them offline.
local function answer(r, vid, s, now)
  if s.st == 'a' then
    return {'admitted', s.t, -1, -1, fmt(r.oa), 0, r.st, r.gen, fmt(s.iat), fmt(s.exp),
      admission_jti(r, s), s.sj, s.qi, s.dn, s.sc, fmt(now)}
  end
  if s.sc >= r.hold then
    return {'held', s.t, -1, -1, fmt(r.oa), 15000, r.st, r.gen, 0, 0, '', s.sj, s.qi, 0, s.sc,
      fmt(now)}
  end
  local rank = redis.call('ZRANK', LINE, vid)
  if not rank then -- released by a holdScore raise, not yet moved: it moves now
    local key = redis.call('ZSCORE', bucket(s.sc), vid)
    if key then
      redis.call('ZREM', bucket(s.sc), vid)
      redis.call('ZADD', LINE, key, vid)
      rank = redis.call('ZRANK', LINE, vid)
    end
  end
  local pos = (rank or 0) + 1
  local eta = -1
  if r.st == 'open' then
    if r.cap > 0 and active_count(now) >= r.cap then
      local seen = admitted_last_minute(now)
      if seen > 0 then eta = math.ceil(pos * 60 / seen) end
    else
      eta = math.ceil((math.max(0, r.oa - now) + pos * UNIT / r.rate) / 1000)
    end
  end
  return {'waiting', s.t, pos, eta, fmt(r.oa), poll_after(pos), r.st, r.gen, 0, 0, '', s.sj, s.qi,
    0, s.sc, fmt(now)}
end

local function err(code, retry) return {'ERR', code, retry or 0} end
