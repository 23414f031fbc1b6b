-- Book a waiting spot's last-seen ahead (see seen_booking in _expiry.lua) after a far poll found
-- it due: the far poll's only write, done here on the primary instead of a whole poll.lua. The
-- record is rewritten around its `seen` field (the fourth, in every record format) without being
-- parsed whole.
-- needs: _base, _clock, _due, _expiry
-- KEYS: room spots
-- ARGV: vid, ticket, generation, pollAfterMs (of the far poll's answer; '' counts as 0).
-- Reply: 1 when booked; 0 when nothing was (the spot changed meanwhile, or it was booked).
local vid, ticket, generation, interval = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local room = redis.call('HMGET', ROOM, 'gen', 'aban', 'fix', 'clk')
if tonumber(room[1]) ~= generation then return 0 end
local raw = redis.call('HGET', SPOTS, vid)
if not raw then return 0 end
local head, spot_ticket, seen, tail = raw:match('^(([^|]*)|[^|]*|w|)([^|]*)(|.*)$')
if spot_ticket ~= ticket then return 0 end -- gone, another ticket, or admitted meanwhile
local now = room_clock(tonumber(room[3]) or 0, tonumber(room[4]) or 0)
local abandon_after = tonumber(room[2]) or 0
local lead = seen_lead(interval, abandon_after)
if not seen_due(tonumber(seen), now, lead) then return 0 end
redis.call('HSET', SPOTS, vid, head .. fmt(seen_booking(abandon_after, now, lead)) .. tail)
return 1
