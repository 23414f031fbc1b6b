-- Draw the places of an event's pre-queue among its entrants (see _events.lua), a batch a call,
-- once its startsAt has passed (`pqs` 'p'): first each entrant's draw number goes into PQZ
-- (SHA-1 of the opening's secret seed, the pre-queue's first ticket and the visitor id: nobody
-- outside can predict it), the entrants read from LINE in key order from the cursor `pqc`;
-- then (`pqs` 'q') the k-th of PQZ takes the k-th key of the pre-queue's ticket range, so they
-- stay behind everyone who was in line before it and ahead of everyone after. Until the last
-- batch the drain stops before the range (prequeue_stop in _room.lua). Steps made by several
-- processes at once each go on from the cursor they read: the work is never done twice.
-- When it is made while another event's pre-queue has opened (its preQueueOpensAt came before
-- this draw's tick), that one opens now, for the newcomers from here.
-- needs: _base, _blocks, _event_state
-- KEYS: room line blk pqz
-- ARGV: batch size.
-- Reply: {1 when the draw is made (or none was due), else 0}.
local batch = tonumber(ARGV[1]) or 5000
local v = redis.call('HMGET', ROOM, @{prequeueState, prequeueFirst, prequeueLast, prequeueCursor,
  seed})
if v[@prequeueState] ~= 'p' and v[@prequeueState] ~= 'q' then return {1} end
local first, last = tonumber(v[@prequeueFirst]) or 0, tonumber(v[@prequeueLast]) or 0
local lo, hi = POST_OPEN_KEY + first, POST_OPEN_KEY + last
if v[@prequeueState] == 'p' then -- number the entrants
  local cursor = v[@prequeueCursor]
  local from = (cursor and cursor ~= '') and ('(' .. cursor) or fmt(lo)
  local items = redis.call('ZRANGE', LINE, from, fmt(hi), 'BYSCORE', 'LIMIT', 0, batch,
    'WITHSCORES')
  local seed = (v[@seed] or '') .. ':' .. fmt(first) .. ':'
  for i = 1, #items, 2 do
    local vid = items[i]
    redis.call('ZADD', PQZ, tonumber(redis.sha1hex(seed .. vid):sub(1, 13), 16), vid)
  end
  if #items / 2 < batch then
    redis.call('HSET', ROOM, @prequeueState, 'q', @prequeueCursor, '0')
  else
    redis.call('HSET', ROOM, @prequeueCursor, items[#items])
  end
  return {0}
end
local at = tonumber(v[@prequeueCursor]) or 0 -- place them, in the order of their numbers
local members = redis.call('ZRANGE', PQZ, at, at + batch - 1)
for i, vid in ipairs(members) do
  local old = redis.call('ZSCORE', LINE, vid)
  if old then -- still waiting (not swept, not held meanwhile)
    local new = lo + at + i - 1
    redis.call('ZADD', LINE, fmt(new), vid)
    count_block(block_of(old), -1)
    count_block(block_of(new), 1)
  end
end
if #members < batch then
  redis.call('DEL', PQZ)
  redis.call('HDEL', ROOM, @prequeueState, @prequeueCursor, @prequeueUntil)
  local state = redis.call('HMGET', ROOM, @{eventState, ticketsTaken})
  local collecting = state[@eventState] and parse_event_state(state[@eventState]).prequeue
  if collecting then -- see open_prequeue in _events.lua
    redis.call('HSET', ROOM, @prequeueState, 'o', @prequeueFirst,
      fmt((tonumber(state[@ticketsTaken]) or 0) + 1), @prequeueLast, 0,
      @prequeueUntil, fmt(collecting), @prequeueCursor, '')
  end
  return {1}
end
redis.call('HSET', ROOM, @prequeueCursor, fmt(at + batch))
return {0}
