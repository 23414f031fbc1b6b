-- needs: _base, _room, _spot, _blocks, _waits
-- Admissions dealt per second in a 60-slot ring (ADM), for admittedLastMinute and capacity ETAs.
local function count_admissions(now, count)
  local second = math.floor(now / 1000)
  local slot = tostring(second % 60)
  local current = redis.call('HGET', ADM, slot)
  local before = 0
  if current then
    local slot_second, slot_count = current:match('^(%d+):(%d+)$')
    if tonumber(slot_second) == second then before = tonumber(slot_count) end
  end
  redis.call('HSET', ADM, slot, second .. ':' .. (before + count))
end

local function admitted_last_minute(now)
  local second = math.floor(now / 1000)
  local total = 0
  for _, value in ipairs(redis.call('HVALS', ADM)) do
    local slot_second, slot_count = value:match('^(%d+):(%d+)$')
    if tonumber(slot_second) > second - 60 then total = total + tonumber(slot_count) end
  end
  return total
end

-- Active slots (ACTIVE: vid -> expires) lapse by themselves: a bounded clean-up keeps the set
-- honest without trusting browsers.
local MAX_ADMIT = $MAX_ADMIT
local function free_expired(now)
  local gone = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', fmt(now), 'LIMIT', 0, MAX_ADMIT)
  if #gone > 0 then redis.call('ZREM', ACTIVE, unpack(gone)) end
end

local function active_count(now) return redis.call('ZCOUNT', ACTIVE, '(' .. fmt(now), '+inf') end

-- Admissions are dealt in a batch: the batch's spot records, active slots, admission count,
-- waits and peak are then booked with one command each.
local function new_batch() return {records = {}, slots = {}, waits = {}, order = {}} end

-- One admission into the batch: its admitted record, its slot until `expires` (ms, formatted),
-- its wait from `entered` (ms; 0 or nil in records older than the histogram: not counted),
-- its order key (a number) for the opening's fairness counts.
local function book_deal(batch, vid, record, expires, entered, now, order_key)
  batch.order[#batch.order + 1] = order_key
  if entered and entered > 0 then
    local wait = wait_bucket(now - entered)
    batch.waits[wait] = (batch.waits[wait] or 0) + 1
  end
  local records, slots = batch.records, batch.slots
  records[#records + 1] = vid
  records[#records + 1] = record
  slots[#slots + 1] = expires
  slots[#slots + 1] = vid
end

local function deal(room, vid, spot, now, batch, order_key)
  local entered = spot.since
  room.dealt = room.dealt + 1
  spot.state, spot.since, spot.expires = 'a', now, now + room.admission_ttl * 1000
  spot.deal_number = room.dealt
  book_deal(batch, vid, spot_record(spot), fmt(spot.expires), entered, now, order_key)
end

-- The opening's fairness counts (docs/draw.md), booked once per batch:
-- admissions from the pre-queue (order key below POST_OPEN_KEY: drawn or lottery keys) and
-- of later arrivals, and `nooo`, later arrivals admitted out of arrival order: one whose order
-- key is below the highest later arrival's admitted so far (`lak`). The drain admits from the
-- head of the line and a later arrival's key is POST_OPEN_KEY + its ticket, so this stays 0
-- unless some script files a spot behind its arrival: counted rather than assumed.
local function book_order(order_keys)
  local last = tonumber(redis.call('HGET', ROOM, @lastLaterKey)) or -1
  local before, pre, later, out = last, 0, 0, 0
  for _, key in ipairs(order_keys) do
    if key < -DRAWN_SPAN then -- an invitee's lane key: neither pre-queue nor in arrival order
    elseif key < POST_OPEN_KEY then
      pre = pre + 1
    else
      later = later + 1
      if key < last then out = out + 1 else last = key end
    end
  end
  if pre > 0 then redis.call('HINCRBY', ROOM, @admittedFromPreQueue, pre) end
  if later > 0 then redis.call('HINCRBY', ROOM, @admittedLater, later) end
  if last ~= before then redis.call('HSET', ROOM, @lastLaterKey, fmt(last)) end
  if out > 0 then redis.call('HINCRBY', ROOM, @outOfOrder, out) end
end

local function book_dealt(room, now, batch)
  if #batch.slots == 0 then return end
  redis.call('HSET', SPOTS, unpack(batch.records))
  redis.call('ZADD', ACTIVE, unpack(batch.slots))
  count_admissions(now, #batch.slots / 2)
  for wait, count in pairs(batch.waits) do redis.call('HINCRBY', WAITS, wait, count) end
  book_order(batch.order)
  if room.capacity > 0 then
    local active = redis.call('ZCARD', ACTIVE)
    if active > room.peak then room.peak = active end
  end
end

-- (enter's straight-in admission: a later arrival, at the order key its ticket would have had,
-- or an invited one's lane key)
local function admit(room, vid, spot, now, order_key)
  local batch = new_batch()
  deal(room, vid, spot, now, batch, order_key or POST_OPEN_KEY + spot.ticket)
  book_dealt(room, now, batch)
end
