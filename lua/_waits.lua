-- needs: _base
-- The wait histogram (WAITS): admissions by their wait from entry, field = the bucket's upper
-- bound in seconds (the operator console reads it; key_layout.WAIT_BUCKETS, whose bounds the
-- assembler writes in here, queue/connection/lua_scripts.py).
local WAIT_BOUNDS = $WAIT_BOUNDS
local function wait_bucket(wait_ms)
  for _, bound in ipairs(WAIT_BOUNDS) do
    if wait_ms <= bound * 1000 then return tostring(bound) end
  end
  return 'inf'
end

-- A spot that leaves the line before its turn (its visitor left, or went quiet and was dropped
-- by the drain or the sweep), counted by how long it had waited since `since` (ms; its entry):
-- field 'a' .. the bucket (key_layout.ABANDON_FIELDS). Records without it are not counted.
local function book_left_waiting(since, now)
  if not since or since <= 0 then return end
  redis.call('HINCRBY', WAITS, 'a' .. wait_bucket(now - since), 1)
end

-- The same for a parsed spot: only a waiting one left before its turn.
local function book_abandoned(spot, now)
  if spot.state == 'w' then book_left_waiting(spot.since, now) end
end
