-- Sample a room's numbers for its series (queue/series/room_series.py), unless another instance has
-- already written this 10 s slot: one call writes the sample and claims the slot in one step.
-- A sample is one sorted-set member, scored by its slot (room clock ms):
--   slot:status:waiting:held:active:rate:capacity:<counters...>:<wait buckets...>:net
--   :<abandon buckets...>:<later counters...>
-- (status 0 idle, 1 open, 2 paused; counters and buckets cumulative, in ARGV's order; net, the
-- safety net's state: 0 none, 1 calm, 2 queueing, absent from samples older than it; the
-- abandon buckets, spots that left before their turn by their wait, and the counters added
-- after them, absent from older samples, so older readers, which stop at net, read newer
-- samples unchanged). It goes
-- into s10 (trimmed to FINE_KEEP) and, when it is the minute's first, into s60 (COARSE_KEEP);
-- each is given a TTL, so a deleted room's series vanish by themselves.
-- Not a room operation (lua_scripts.STANDALONE): it builds its keys from the room's base.
-- The rate and capacity sampled are those in force (a running event's, _in_force.lua), as the
-- drain deals them, not the room's own.
-- needs: _base, _event_state, _in_force
-- KEYS[1]: the room's key base (KeySpace.room_base; the scripts add room, line, active, bks,
--   b:<score>, waits, s10, s60).
-- ARGV: fine step, coarse step, fine keep, coarse keep (ms), then the counter fields of the
--   room hash, then '|', then the wait buckets (fields of the waits hash), then '|', then the
--   abandon buckets (fields of the waits hash too), then '|', then the later counters (of the
--   room hash, sampled after the abandon buckets).
-- Reply: {1, ms until the next slot} after writing, {0, ms} when the slot was taken, {-1} if
--   the room is gone.
local BASE = KEYS[1]
local ROOM = BASE .. 'room'
local FINE, COARSE = tonumber(ARGV[1]), tonumber(ARGV[2])
local FINE_KEEP, COARSE_KEEP = tonumber(ARGV[3]), tonumber(ARGV[4])
local counters, buckets, abandons, i = {}, {}, {}, 5
while ARGV[i] ~= '|' do counters[#counters + 1] = ARGV[i]; i = i + 1 end
i = i + 1
while ARGV[i] and ARGV[i] ~= '|' do buckets[#buckets + 1] = ARGV[i]; i = i + 1 end
i = i + 1
while ARGV[i] and ARGV[i] ~= '|' do abandons[#abandons + 1] = ARGV[i]; i = i + 1 end
local later = {}
for j = i + 1, #ARGV do later[#later + 1] = ARGV[j] end
local head = redis.call('HMGET', ROOM, @{status, clockOffset, pinnedClock, ratePerMinute, capacity,
  safetyNet, safetyNetState, mode, eventState})
if not head[@status] then return {-1} end
local clk, fix = tonumber(head[@clockOffset]) or 0, tonumber(head[@pinnedClock]) or 0
local now
if fix > 0 then now = fix + clk else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + clk
end
local slot = now - now % FINE
local next_in = slot + FINE - now
local S10, S60 = BASE .. 's10', BASE .. 's60'
local last = redis.call('ZRANGE', S10, -1, -1, 'WITHSCORES')
if last[2] and tonumber(last[2]) >= slot then return {0, next_in} end
local held = 0
for _, b in ipairs(redis.call('SMEMBERS', BASE .. 'bks')) do
  held = held + redis.call('ZCARD', BASE .. 'b:' .. b)
end
local room = {safety_net = head[@safetyNet] or '', net_state = head[@safetyNetState] or ''}
lay_over(room, {mode = head[@mode] or 'fifo', rate = tonumber(head[@ratePerMinute]) or 0,
  capacity = tonumber(head[@capacity]) or 0, admission_ttl = 0},
  head[@eventState] and parse_event_state(head[@eventState]))
local codes = {idle = 0, open = 1, paused = 2}
local row = {fmt(slot), codes[head[@status]] or 0, redis.call('ZCARD', BASE .. 'line'), held,
  redis.call('ZCOUNT', BASE .. 'active', '(' .. fmt(now), '+inf'), fmt(room.rate),
  fmt(room.capacity)}
-- One read of each hash: the room's counters then the later ones, the wait buckets then the
-- abandon buckets (each list in its ARGV order; the later parts go after net, below).
local fields = {unpack(counters)}
for _, f in ipairs(later) do fields[#fields + 1] = f end
local values = redis.call('HMGET', ROOM, unpack(fields))
local bucket_fields = {unpack(buckets)}
for _, f in ipairs(abandons) do bucket_fields[#bucket_fields + 1] = f end
local waits = redis.call('HMGET', BASE .. 'waits', unpack(bucket_fields))
for k = 1, #counters do row[#row + 1] = values[k] or 0 end
for k = 1, #buckets do row[#row + 1] = waits[k] or 0 end
local net = 0
if (head[@safetyNet] or '') ~= '' then net = head[@safetyNetState] == 'q' and 2 or 1 end
row[#row + 1] = net
for k = #buckets + 1, #bucket_fields do row[#row + 1] = waits[k] or 0 end
for k = #counters + 1, #fields do row[#row + 1] = values[k] or 0 end
local member = table.concat(row, ':')
redis.call('ZADD', S10, slot, member)
redis.call('ZREMRANGEBYSCORE', S10, '-inf', '(' .. fmt(slot - FINE_KEEP))
redis.call('PEXPIRE', S10, FINE_KEEP + COARSE)
local prev = redis.call('ZRANGE', S60, -1, -1, 'WITHSCORES')
local minute = slot - slot % COARSE
if not prev[2] or tonumber(prev[2]) < minute then
  redis.call('ZADD', S60, slot, member)
  redis.call('ZREMRANGEBYSCORE', S60, '-inf', '(' .. fmt(slot - COARSE_KEEP))
  redis.call('PEXPIRE', S60, COARSE_KEEP + COARSE)
end
return {1, next_in}
