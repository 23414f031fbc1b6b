-- Book a waiting spot's last-seen ahead (see mark_seen in _spot.lua) after a far poll found it
-- due: the far poll's only write, done here on the primary instead of a whole poll.lua.
-- needs: _spot, _clock
-- KEYS: room spots
-- ARGV: vid, ticket, generation (of the far poll's answer).
-- Reply: 1 when booked; 0 when nothing was (the spot changed meanwhile, or it was booked).
local vid, ticket, generation = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local room = redis.call('HMGET', ROOM, 'gen', 'aban', 'fix', 'clk')
if tonumber(room[1]) ~= generation then return 0 end
local spot = get_spot(vid)
if not spot or spot.ticket ~= ticket or spot.state ~= 'w' then return 0 end
local now = room_clock(tonumber(room[3]) or 0, tonumber(room[4]) or 0)
if not mark_seen(tonumber(room[2]) or 0, spot, now) then return 0 end
put_spot(vid, spot)
return 1
