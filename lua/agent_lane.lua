-- The signed agents' lane of a room (visit/agents.py, a room's agents setting "lane"): its own
-- admission budget, a token bucket at the lane's rate on the room's clock, apart from the
-- room's bank, so agents admitted through it never take the visitors' rate (nor count in it).
-- Not a room operation (lua_scripts.STANDALONE): its keys are passed as they are.
-- needs: _base
-- KEYS[1]: the room hash (KeySpace.room); KEYS[2]: the lane's bucket (KeySpace.agent_lane), a
--   hash {t = tokens, at = room clock ms}, given an hour's TTL at each use (a deleted room's
--   goes by itself).
-- ARGV: the lane's rate per minute, its burst (tokens at most).
-- Reply: {1, now} when an admission is taken, {0, ms until the next} when the lane is spent,
--   {-1, 0} for a room that does not exist, {-2, 0} for one that is not open.
local ROOM, LANE = KEYS[1], KEYS[2]
local head = redis.call('HMGET', ROOM, @{status, clockOffset, pinnedClock})
if not head[@status] then return {-1, 0} end
if head[@status] ~= 'open' then return {-2, 0} end
local clk, fix = tonumber(head[@clockOffset]) or 0, tonumber(head[@pinnedClock]) or 0
local now
if fix > 0 then now = fix + clk else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + clk
end
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local kept = redis.call('HMGET', LANE, 't', 'at')
local tokens, at = tonumber(kept[1]) or burst, tonumber(kept[2]) or now
-- a clock moved back (tests pin it) refills nothing until it passes `at` again
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 60000)
  at = now
end
local taken = 0
if tokens >= 1 then tokens = tokens - 1; taken = 1 end
redis.call('HSET', LANE, 't', string.format('%.6f', tokens), 'at', string.format('%d', at))
redis.call('PEXPIRE', LANE, 3600000)
if taken == 1 then return {1, now} end
return {0, math.ceil((1 - tokens) * 60000 / rate)}
