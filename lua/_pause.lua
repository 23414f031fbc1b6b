-- needs: _base
-- The end of a pause (a resume or a close) at `now` (room clock, ms): the opening's longest
-- pause (`lps`, ms) keeps the larger of itself and this one, which began at `pat`.
local function end_pause(now)
  local began = tonumber(redis.call('HGET', ROOM, @pausedAt)) or 0
  if began <= 0 then return end
  local longest = tonumber(redis.call('HGET', ROOM, @longestPause)) or 0
  if now - began > longest then redis.call('HSET', ROOM, @longestPause, fmt(now - began)) end
  redis.call('HSET', ROOM, @pausedAt, 0)
end
