-- Change configuration fields. ARGV: field, value, ...
-- A rate change first books the time elapsed at the old rate, so it never causes a burst.
local r = load_room()
if not r then return err('RoomNotFound') end
local now = clock(r)
for i = 1, #ARGV, 2 do
  if ARGV[i] == 'rate' then
    accrue(r, now)
    r.rate = tonumber(ARGV[i + 1])
    r.bank = math.min(r.bank, math.max(UNIT, r.rate * 1000))
  end
end
redis.call('HSET', ROOM, unpack(ARGV))
save_room(r)
return {'OK'}
