-- Change configuration fields. A rate change first books the time elapsed at the old rate, so
-- it never causes a burst. A holdScore change regroups the line: a first bounded step now (a
-- whole line of up to REGROUP_STEP spots), the rest carried along by the ticker, enter and poll.
-- needs: _base, _room, _events, _regroup, _bank
-- KEYS: room spots line bks active blk
-- ARGV: field, value, ... (validated by Python).
-- Reply: {'OK'} or {'ERR', 'RoomNotFound', 0}.
local room = load_room()
if not room then return err('RoomNotFound') end
local now = clock(room)
at_events(room, now)
local old_hold_score = room.hold_score
for i = 1, #ARGV, 2 do
  if ARGV[i] == 'rate' then
    accrue(room, now)
    if not (room.overrides and room.overrides.rate) then -- else the event's rate stays in force
      room.rate = tonumber(ARGV[i + 1])
      room.bank = math.min(room.bank, bank_cap(room.rate))
    end
  elseif ARGV[i] == 'hold' then
    room.hold_score = tonumber(ARGV[i + 1])
  end
end
redis.call('HSET', ROOM, unpack(ARGV))
-- a room created before rooms were made hash tables (create_room.lua) becomes one now
if redis.call('HEXISTS', ROOM, @hashTable) == 0 then
  redis.call('HSET', ROOM, @hashTable, string.rep('-', 65))
end
save_room(room)
if room.hold_score > old_hold_score then room.releasing = '1' end
if room.hold_score < old_hold_score then room.convict_key = '-inf' end -- a pass from the head
regroup_step(room, REGROUP_STEP)
return {'OK'}
