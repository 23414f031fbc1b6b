-- Open (or resume) a room. Resuming a paused room keeps its counters, shuffle and opensAt;
-- paused time earns nothing.
-- needs: _base, _room
-- KEYS: room
-- ARGV: opensAt (epoch ms, '' for now), a fresh random seed (the pre-open lottery's).
-- Reply: {'OK', status now} or {'ERR', 'RoomNotFound', 0}.
local opens_at, seed = tonumber(ARGV[1]), ARGV[2]
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
if room.status == 'paused' then
  redis.call('HSET', ROOM, 'st', 'open', 'last', fmt(now))
elseif room.status == 'idle' then
  opens_at = opens_at or now
  -- a past opensAt is taken as given: accrual starts there (capped like any other quiet time)
  redis.call('HSET', ROOM, 'st', 'open', 'oa', fmt(opens_at), 'last',
    fmt(math.min(opens_at, now)), 'bank', 0, 'seed', seed)
end
return {'OK', redis.call('HGET', ROOM, 'st')}
