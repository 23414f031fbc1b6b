-- needs: _base, _room, _spot, _blocks, _bucket, _due
-- Regrouping after a holdScore change, a bounded step at a time, every spot at its original
-- order key. `releasing` ('rel') = '1' while held buckets under holdScore may still hold spots
-- (a raise); `convict_key` ('cvk') is the order key a conviction pass (a lowering) has reached
-- in the line, '' if none. Until a step has reached a spot, the drain still treats it by its
-- score (never admitting a held spot) and a released spot is moved when it polls; positions of
-- others count spots not yet moved, so a change to a line longer than one step is exact only
-- once regrouped.
local REGROUP_STEP, REGROUP_CARRIED = 1000, 200

-- Released spots are counted (`nrel`) and, being admitted behind later arrivals by the
-- operator's choice (a raised holdScore), lower the mark out-of-order admissions are measured
-- against (`lak`, see book_order in _admissions.lua) to the lowest released later arrival's key.
local function book_released(order_keys)
  redis.call('HINCRBY', ROOM, @releasedCount, #order_keys)
  local lowest = nil
  for _, key in ipairs(order_keys) do
    local k = tonumber(key)
    if k >= POST_OPEN_KEY and (lowest == nil or k < lowest) then lowest = k end
  end
  local last = tonumber(redis.call('HGET', ROOM, @lastLaterKey))
  if lowest and last and lowest < last then redis.call('HSET', ROOM, @lastLaterKey, fmt(lowest)) end
end

local function release_step(room, count)
  local pending = false
  for _, score in ipairs(redis.call('SMEMBERS', BKS)) do
    if tonumber(score) < room.hold_score then
      local held = bucket(score)
      local items = {}
      if count > 0 then items = redis.call('ZRANGE', held, 0, count - 1, 'WITHSCORES') end
      if #items > 0 then
        local keyed, vids, order_keys = {}, {}, {}
        for i = 1, #items, 2 do
          keyed[#keyed + 1] = items[i + 1]; keyed[#keyed + 1] = items[i]
          vids[#vids + 1] = items[i]
          order_keys[#order_keys + 1] = items[i + 1]
        end
        redis.call('ZADD', LINE, unpack(keyed))
        count_keys(order_keys, 1)
        redis.call('ZREM', held, unpack(vids))
        count = count - #vids
        book_released(order_keys)
      end
      if redis.call('EXISTS', held) == 1 then pending = true end
    end
  end
  if not pending then room.releasing = '0' end
  return count
end

local function convict_step(room, count)
  local from = room.convict_key == '-inf' and '-inf' or '(' .. room.convict_key
  local items = redis.call('ZRANGEBYSCORE', LINE, from, '+inf', 'WITHSCORES', 'LIMIT', 0, count)
  for i = 1, #items, 2 do
    local vid, order_key = items[i], items[i + 1]
    local raw = redis.call('HGET', SPOTS, vid)
    local score
    if raw then @SPOT~(raw){score = score, ...}; score = tonumber(score) end
    if not score then
      redis.call('ZREM', LINE, vid) -- an orphaned order entry
      count_block(block_of(order_key), -1)
    elseif score >= room.hold_score then
      redis.call('ZREM', LINE, vid)
      count_block(block_of(order_key), -1)
      place(room.hold_score, vid, score, order_key)
    end
    room.convict_key = order_key
  end
  if #items < 2 * count then room.convict_key = '' end
end

local function regroup_step(room, count)
  if not regroup_due(room.releasing, room.convict_key) then return end -- the common case
  if room.releasing == '1' then count = release_step(room, count) end
  if room.convict_key ~= '' and count > 0 then convict_step(room, count) end
  redis.call('HSET', ROOM, @releasing, room.releasing, @convictFrom, room.convict_key)
end
