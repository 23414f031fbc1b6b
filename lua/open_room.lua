-- Open (or resume) a room. ARGV: opensAt in epoch ms ('' for now), a fresh random seed.
-- Reply: {'OK', status now}.
-- Resuming a paused room keeps its counters, shuffle and opensAt; paused time earns nothing.
local r = load_room()
if not r then return err('RoomNotFound') end
local now = clock(r)
if r.st == 'paused' then
  redis.call('HSET', ROOM, 'st', 'open', 'last', fmt(now))
elseif r.st == 'idle' then
  local oa = tonumber(ARGV[1]) or now
  -- a past opensAt is taken as given: accrual starts there (capped like any other quiet time)
  redis.call('HSET', ROOM, 'st', 'open', 'oa', fmt(oa), 'last', fmt(math.min(oa, now)),
    'bank', 0, 'seed', ARGV[2])
end
return {'OK', redis.call('HGET', ROOM, 'st')}
