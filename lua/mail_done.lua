-- How a claimed turn e-mail went (claim_mail.lua): 'sent' deletes its address (its turn is kept
-- until the return window ends, when claim_mail.lua deletes it), 'retry' makes it due again
-- after `delay` ms, 'failed' gives up (address and turn deleted). Counted in the room hash.
-- needs: _base, _room
-- KEYS: room mail mailq
-- ARGV: vid, outcome, delay (ms), return window (s), what failed ('' when sent).
-- Reply: 1 when the e-mail was still being sent, else 0 (its link used or its spot gone).
local vid, outcome = ARGV[1], ARGV[2]
local room = load_room()
if not room then return 0 end
local now = clock(room)
if outcome == 'sent' then
  redis.call('HINCRBY', ROOM, @notifySent, 1)
else
  redis.call('HINCRBY', ROOM, @notifyFailed, 1)
  redis.call('HSET', ROOM, @notifyLastError, fmt(now) .. ' ' .. ARGV[5])
end
local turn = redis.call('HGET', MAIL, 't:' .. vid)
if not turn or redis.call('HEXISTS', MAIL, 'a:' .. vid) == 0 then return 0 end
if outcome == 'sent' then
  redis.call('HDEL', MAIL, 'a:' .. vid, 'n:' .. vid, 'l:' .. vid)
  redis.call('ZADD', MAILQ, fmt(tonumber(turn) + tonumber(ARGV[4]) * 1000), vid)
elseif outcome == 'retry' then
  redis.call('ZADD', MAILQ, fmt(now + tonumber(ARGV[3])), vid)
else
  redis.call('HINCRBY', ROOM, @notifyGivenUp, 1)
  redis.call('HDEL', MAIL, 'a:' .. vid, 't:' .. vid, 'n:' .. vid, 'l:' .. vid)
  redis.call('ZREM', MAILQ, vid)
end
return 1
