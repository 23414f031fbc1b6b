-- needs: _base
-- The admission bank: earned for open time since `accrued_at` (and not before opensAt) at the
-- room's rate. It never holds more than one second's worth (and at least one admission), which
-- is what keeps resumes and quiet spells burst-free. Returns the bank and its new accrued_at.
local function bank_cap(rate) return math.max(UNIT, rate * 1000) end
local function earned(bank, accrued_at, opens_at, rate, now)
  local from = math.max(accrued_at, opens_at)
  if now <= from then return bank, accrued_at end
  -- a bank above the cap (what a scheduled event's faster rate earned before its end, crossed
  -- on time: _events.lua) is kept to be dealt, not cut down by the slower rate's cap
  return math.min(math.max(bank_cap(rate), bank), bank + (now - from) * rate), now
end
