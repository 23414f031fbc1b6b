-- needs: _base
-- A waiting spot's place on the global line's time axis (queue/regions/pool_order.py), what a
-- room across regions orders, buckets and cuts at the lease's watermark by: a later arrival's
-- own arrival time (ms); a drawn pool spot's, its drawn key scaled into [100, 100 + 2^31) ms,
-- below every real arrival, in the order of the keys, which in a draw across regions are the
-- same function of the shared seed everywhere (room_draw.regional_key), so the regions' pools
-- merge by it; an invitee in a lane (keys below the draw's), 0: ahead of everyone, as in one
-- region. Pure.
local POOL_SPAN = $DRAWN_SPAN -- the draw's keys fill [-2^51, 0); invitees' are below
local POOL_ARRIVAL_BASE = $POOL_ARRIVAL_BASE
local POOL_ARRIVAL_SCALE = $POOL_ARRIVAL_SCALE
local function line_arrival(order_key, since)
  local key = tonumber(order_key)
  if key < -POOL_SPAN then return 0 end
  if key < 0 then return POOL_ARRIVAL_BASE + math.floor((key + POOL_SPAN) / POOL_ARRIVAL_SCALE) end
  return tonumber(since)
end
