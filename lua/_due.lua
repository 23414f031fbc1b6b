-- needs: _base
-- What makes a poll write: its spot's last-seen booking is short of its lead (see seen_booking in
-- _expiry.lua), a sweep pass is due or under way, a holdScore change is still regrouping;
-- _sweep.lua and _regroup.lua do the work.
local SWEEP_EVERY = 60000
local function seen_due(seen, now, lead) return seen < now + (lead or 0) end
local function sweep_due(sweep_cursor, sweep_started, now)
  return sweep_cursor ~= '0' or now - sweep_started >= SWEEP_EVERY
end
local function regroup_due(releasing, convict_key) return releasing == '1' or convict_key ~= '' end
