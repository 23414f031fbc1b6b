-- A region's summary of a room's line for the coordinator (queue/regions/global_line.py), read
-- in one script so that an admission is counted once, in `dealt` or in the waiting: the head of
-- the line exactly, as arrivals by time bucket, and beyond it a sample of (rank, arrival) for
-- positions. Reads only, but for a scheduled event's edge crossed here (at_events, as every script
-- judging the room in force does): the rate and capacity reported are the ones in force, an
-- event's while it runs, so the coordinator's budget follows the room's events. A spot's arrival is its place on the global line's time axis
-- (_line_arrival.lua): a drawn pool spot's comes from its drawn key, so the regions' pools are
-- bucketed on one scale and merge as their shared draw orders them.
-- needs: _base, _room, _events, _line_arrival
-- KEYS: room spots line active
-- ARGV: how many at the head to count exactly, the bucket's width (ms), the samples beyond it.
-- Reply: script_replies.REGION_SUMMARY, built by name: {now, admitted (the opening's dealt),
--   active, waiting, rate, capacity, buckets {start, count, ...}, tail {rank, arrival, ...}}
--   (times room clock ms); or {'ERR', 'RoomNotFound', 0}.
local head, width, samples = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
at_events(room, now)
local waiting = redis.call('ZCARD', LINE)
local active = redis.call('ZCOUNT', ACTIVE, '(' .. fmt(now), '+inf')
local function arrival(vid, order_key)
  local raw = redis.call('HGET', SPOTS, vid)
  if not raw then return nil end
  local @SPOT~(raw){state = state, since = since, ...}
  if state ~= 'w' or not tonumber(since) then return nil end
  return line_arrival(order_key, since)
end
local counts, starts = {}, {}
local items = redis.call('ZRANGE', LINE, 0, head - 1, 'WITHSCORES')
local vids, order_keys = {}, {}
for i = 1, #items / 2 do vids[i] = items[2 * i - 1]; order_keys[i] = items[2 * i] end
if #vids > 0 then
  local raws = redis.call('HMGET', SPOTS, unpack(vids))
  for i = 1, #vids do
    local raw = raws[i]
    if raw then
      local @SPOT~(raw){state = state, since = since, ...}
      local t = tonumber(since) and line_arrival(order_keys[i], since)
      if state == 'w' and t then
        local start = t - t % width
        if not counts[start] then counts[start] = 0; starts[#starts + 1] = start end
        counts[start] = counts[start] + 1
      end
    end
  end
end
table.sort(starts)
local buckets = {}
for _, start in ipairs(starts) do
  buckets[#buckets + 1] = fmt(start); buckets[#buckets + 1] = counts[start]
end
local tail = {}
if waiting > head and samples > 0 then
  local step = math.max(1, math.ceil((waiting - head) / samples))
  for rank = head + step, waiting, step do
    local at = redis.call('ZRANGE', LINE, rank - 1, rank - 1, 'WITHSCORES')
    local t = at[1] and arrival(at[1], at[2])
    if t then tail[#tail + 1] = rank; tail[#tail + 1] = fmt(t) end
  end
end
return @REGION_SUMMARY{now = fmt(now), admitted = fmt(room.dealt), active = active,
  waiting = waiting, rate = fmt(room.rate), capacity = fmt(room.capacity), buckets = buckets,
  tail = tail}
