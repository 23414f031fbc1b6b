-- needs: _base
-- Per-ticket limit (90 polls a minute): the facade counts each ticket's polls in a fixed
-- one-minute window of the room's clock and passes `spent` = '<generation>:<ticket>:<minute>'
-- when that ticket has used up that minute ('' otherwise). Refused: seconds to the next minute.
local function limited(generation, ticket, now, spent)
  if spent == nil or spent == '' then return nil end
  local spent_generation, spent_ticket, spent_minute = spent:match('^(%d+):(%d+):(%d+)$')
  local minute = math.floor(now / 60000)
  if tonumber(spent_generation) ~= generation or tonumber(spent_ticket) ~= ticket
      or tonumber(spent_minute) ~= minute then
    return nil
  end
  return math.ceil(((minute + 1) * 60000 - now) / 1000)
end

-- The poll cadence within a budget (docs/queue.md, invariant 11; queue/line/poll_cadence.py is the same
-- rule in Python, for the far poll answered from a snapshot, and a test holds the two together).
-- `pace`: admissions a second (the room's rate, or the pace observed at capacity); `delay`: ms
-- until opensAt; `line`: eligible waiting spots; `budget`: the room's pollBudgetPerSecond.
-- The front (max(100, 10 s of admissions)) polls every second (its first half) or two. Behind it a spot polls about
-- SPREAD times over its expected wait, from 2 s up to CADENCE_CAP; those polls add up to at most
--   5 P ln(min(N, 1500 P) / F) + max(0, N - 1500 P) / 300   polls a second
-- (P pace, F front, N line: the first term while intervals grow with the wait, the second for
-- the spots at the cap), and when that exceeds the budget every interval behind the front is
-- stretched by the excess, so the room's polls stay within budget + front whatever N.
-- poll_cadence.py's constants (CADENCE_CAP is its CADENCE_CAP_MS), written in by the
-- assembler (queue/connection/lua_scripts.py).
local FRONT_MIN, FRONT_MS, SPREAD, CADENCE_CAP = $FRONT_MIN, $FRONT_MS, $SPREAD, $CADENCE_CAP
local HELD_POLL_MS = $HELD_POLL_MS

local function front_size(pace) return math.max(FRONT_MIN, math.ceil(pace * FRONT_MS / 1000)) end

local function cadence_stretch(line, pace, front, budget)
  if line <= front then return 1 end
  local capped_from = math.max(front, pace * SPREAD * CADENCE_CAP / 1000)
  local planned = SPREAD * pace * math.log(math.min(line, capped_from) / front)
    + math.max(0, line - capped_from) * 1000 / CADENCE_CAP
  return math.max(1, planned / budget)
end

local function poll_after(position, pace, delay, line, budget)
  local front = front_size(pace)
  local before_opening = math.min(delay / SPREAD, CADENCE_CAP) -- nobody is let in before opensAt
  if position <= front then
    local front_poll = position * 2 <= front and 1000 or 2000 -- whole seconds for Retry-After
    return math.floor(math.max(front_poll, before_opening))
  end
  local wait = delay + position * 1000 / pace
  local interval = math.min(math.max(2000, wait / SPREAD), CADENCE_CAP)
  return math.floor(interval * cadence_stretch(line, pace, front, budget))
end


-- The ETA of a position while admissions run at the room's rate (opensAt still ahead counts).
local function eta_at_rate(opens_at, rate, position, now)
  return math.ceil((math.max(0, opens_at - now) + position * UNIT / rate) / 1000)
end
