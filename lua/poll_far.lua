-- The poll of a spot far from the head: a small script of its own (no shared prelude) for the
-- common case. It writes nothing, so it may run as EVALSHA_RO on a replica. It answers exactly
-- what poll.lua would answer, and only when poll.lua would write nothing: the spot is waiting,
-- eligible, more than NEAR_HEAD from the head and not revoked; its last-seen booking has not
-- passed; no sweep pass or regrouping is due; the drain is owed nothing. Otherwise it replies
-- {'MORE'} and the engine runs poll.lua on the primary, so the drain still runs as soon as
-- anything is owed, whoever polls.
-- KEYS[1]: the room's key base "<prefix>r:{<id>}:" (room, spots, line, rvk, active below it).
-- ARGV: vid, ticket, generation, session jti ('' in older tickets; poll.lua uses it), spent
--   ('<generation>:<ticket>:<minute>' when the facade counted 90 polls of this ticket in that
--   minute of the room's clock, else '').
-- Reply: poll.lua's waiting answer {'waiting', ticket, position, eta s, opensAt ms, pollAfterMs,
--   room status, generation, 0, 0, '', session jti, network tag, 0, score, now ms}, or
--   {'ERR', 'RateLimited', retry s}, or {'MORE'}.
local base = KEYS[1]
local vid, ticket, generation, spent = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5]
local NEAR_HEAD, UNIT, SWEEP_EVERY = 100, 60000, 60000
local MORE = {'MORE'}

local room = redis.call('HMGET', base .. 'room', 'gen', 'st', 'clk', 'fix', 'oa', 'rate', 'cap',
  'hold', 'aban', 'swt', 'swc', 'rel', 'cvk', 'bank', 'last')
if tonumber(room[1]) ~= generation then return MORE end
local sweep_cursor, released, convict_key = room[11] or '0', room[12] or '0', room[13] or ''
if sweep_cursor ~= '0' or released == '1' or convict_key ~= '' then return MORE end

local status, offset, pinned = room[2], tonumber(room[3]) or 0, tonumber(room[4]) or 0
local now
if pinned > 0 then
  now = pinned + offset
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + offset
end
if now - (tonumber(room[10]) or 0) >= SWEEP_EVERY then return MORE end -- a sweep pass is due

local opens_at, rate, capacity = tonumber(room[5]) or 0, tonumber(room[6]) or 0, tonumber(room[7]) or 0
local draining = status == 'open' and now >= opens_at
local live = -1 -- live admissions, read once if capacity bounds the room
if capacity > 0 and status == 'open' then
  live = redis.call('ZCOUNT', base .. 'active', '(' .. string.format('%.0f', now), '+inf')
end
if draining and not (capacity > 0 and live >= capacity) then
  -- the drain's own test (see accrue): is one admission earned?
  local bank, last = tonumber(room[14]) or 0, tonumber(room[15]) or 0
  local from = math.max(last, opens_at)
  if now > from then bank = math.min(math.max(UNIT, rate * 1000), bank + (now - from) * rate) end
  if bank >= UNIT then return MORE end
end

local raw = redis.call('HGET', base .. 'spots', vid)
if not raw then return MORE end
local spot_ticket, score, state, seen, session_jti, network_tag =
  raw:match('^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|')
score = tonumber(score)
if tonumber(spot_ticket) ~= ticket or state ~= 'w' or score >= tonumber(room[8]) then return MORE end

local revocations = base .. 'rvk'
if redis.call('HLEN', revocations) > 0 then
  local untils = redis.call('HMGET', revocations, 'j:' .. session_jti, 'v:' .. vid)
  for i = 1, 2 do
    if (session_jti ~= '' or i == 2) and untils[i] and tonumber(untils[i]) > now then
      return MORE
    end
  end
end

-- Last-seen is booked min(abandonAfterSec / 2, 150 s) ahead; once that has passed, this poll
-- must book it again (mark_seen in _room.lua), which poll.lua does.
if tonumber(seen) < now then return MORE end

-- The per-ticket limit, counted by the facade (see `limited` in _room.lua).
if spent and spent ~= '' then
  local spent_gen, spent_ticket, spent_minute = spent:match('^(%d+):(%d+):(%d+)$')
  local minute = math.floor(now / 60000)
  if tonumber(spent_gen) == generation and tonumber(spent_ticket) == ticket
      and tonumber(spent_minute) == minute then
    return {'ERR', 'RateLimited', math.ceil(((minute + 1) * 60000 - now) / 1000)}
  end
end

local rank = redis.call('ZRANK', base .. 'line', vid)
if not rank or rank + 1 <= NEAR_HEAD then return MORE end
local position = rank + 1

local eta = -1
if status == 'open' then
  if capacity > 0 and live >= capacity then return MORE end -- an ETA from observed admissions
  eta = math.ceil((math.max(0, opens_at - now) + position * UNIT / rate) / 1000)
end
local poll_after = 15000
if position <= 1000 then poll_after = 5000 end

return {'waiting', ticket, position, eta, room[5] or '0', poll_after, status, generation, 0, 0, '',
  session_jti, network_tag, 0, score, string.format('%.0f', now)}
