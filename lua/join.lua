-- Join: an arrival's second call in one round trip on one server. It counts the identify
-- limit and the network's identifies, spends the proof once (as spend_challenge.lua), chooses
-- the session the count earns, then enters as enter.lua does, with that session. On a Redis
-- Cluster these keys live on other shards than the room's: the caller makes the calls apart.
-- wraps: enter (its body runs as `enter_op()`, after this prelude has set its vid, jti, score)
-- KEYS: room spots line active adm rvk bks waits blk inv used
--   then the enter limit's counters (as enter.lua), then the identify limit's m counters, the
--   network's and the environment's identify counters of this minute, the challenge's marker.
-- ARGV: m, per identify counter its limit and window; the busy-network threshold; the proof's
--   fingerprint and the marker's life (ms); the calm session (claims JSON), its score, 1 if it
--   is refused ('bot'); the busy session's three the same; then enter.lua's ARGV: the vid and
--   session jti both sessions share (kept unless a retry finds another's), its score this
--   prelude fills in.
-- Reply: {'IdentifyLimited', s until the window resets}, {'Spent'} (another proof spent it),
--   {'Denied', which, claims} (a convicted session: spent, never entered), or
--   {'Entered', which, claims, enter's reply}; which: 'calm', 'busy' or 'earned' (a retry of
--   the same proof: claims are the session the first attempt earned, '' otherwise).
local m = tonumber(ARGV[1])
local at = 2 + 2 * m
local busy_above, mark, life = tonumber(ARGV[at]), ARGV[at + 1], ARGV[at + 2]
local sessions = {
  calm = {ARGV[at + 3], ARGV[at + 4], ARGV[at + 5] == '1'},
  busy = {ARGV[at + 6], ARGV[at + 7], ARGV[at + 8] == '1'},
}
local own = at + 8 -- join's own arguments; enter's follow
local n = tonumber(ARGV[own + 6]) or 0
local first = 11 + n -- the keys before the identify counters
local over = -1
for i = 1, m do
  local key, limit, window = KEYS[first + i], tonumber(ARGV[2 * i]), ARGV[1 + 2 * i]
  local count = redis.call('INCRBY', key, 1)
  if count == 1 then redis.call('EXPIRE', key, window) end
  if count > limit then over = math.max(over, redis.call('TTL', key), 1) end
end
if over > 0 then return {'IdentifyLimited', over} end
local network, environment, marker = KEYS[first + m + 1], KEYS[first + m + 2], KEYS[first + m + 3]
-- Per-minute counters: their life set as they are made (read for this minute and the next).
local seen = redis.call('INCR', network)
if seen == 1 then redis.call('EXPIRE', network, 120) end
if redis.call('INCR', environment) == 1 then redis.call('EXPIRE', environment, 120) end
local which, claims, vid, jti, score, denied
local held = redis.call('GET', marker)
if held then
  local bar = string.find(held, '|', 1, true)
  if not bar or string.sub(held, 1, bar - 1) ~= mark or bar == #held then return {'Spent'} end
  claims = string.sub(held, bar + 1)
  local earned = cjson.decode(claims)
  which, vid, jti, score, denied = 'earned', earned.vid, earned.jti, earned.score, false
  for _, s in ipairs(earned.sig or {}) do
    if s == 'bot' then denied = true end
  end
else
  which = seen > busy_above and 'busy' or 'calm'
  local chosen = sessions[which]
  redis.call('SET', marker, mark .. '|' .. chosen[1], 'PX', life)
  -- both sessions are of the vid and jti given in enter's ARGV: no claims to decode
  claims, vid, jti, score, denied = '', ARGV[own + 1], ARGV[own + 2], chosen[2], chosen[3]
end
if denied then return {'Denied', which, claims} end
-- enter's ARGV moved to the front in one pass (a table.remove from the front per argument
-- shifted every later one each time)
local total = #ARGV
for i = 1, total - own do ARGV[i] = ARGV[i + own] end
for i = total - own + 1, total do ARGV[i] = nil end
ARGV[1], ARGV[2], ARGV[3] = vid, jti, tostring(score)
return {'Entered', which, claims, enter_op()}
