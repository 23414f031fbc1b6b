-- Change configuration fields. ARGV: field, value, ...
-- Reply: {'OK'} or {'ERR', 'RoomNotFound', 0}.
-- A rate change first books the time elapsed at the old rate, so it never causes a burst.
-- A holdScore change regroups the line: a first bounded step now (a whole line of up to
-- REGROUP_STEP spots), the rest carried along by enter and poll.
local r = load_room()
if not r then return err('RoomNotFound') end
local now = clock(r)
local old_hold = r.hold
for i = 1, #ARGV, 2 do
  if ARGV[i] == 'rate' then
    accrue(r, now)
    r.rate = tonumber(ARGV[i + 1])
    r.bank = math.min(r.bank, math.max(UNIT, r.rate * 1000))
  elseif ARGV[i] == 'hold' then
    r.hold = tonumber(ARGV[i + 1])
  end
end
redis.call('HSET', ROOM, unpack(ARGV))
save_room(r)
if r.hold > old_hold then r.rel = '1' end
if r.hold < old_hold then r.cvk = '-inf' end -- a new pass from the head of the line
regroup_step(r, REGROUP_STEP)
return {'OK'}
