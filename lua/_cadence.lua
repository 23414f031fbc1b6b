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

local function poll_after(position)
  if position <= 10 then return 1000 elseif position <= 100 then return 2500
  elseif position <= 1000 then return 5000 end
  return 15000
end


-- The ETA of a position while admissions run at the room's rate (opensAt still ahead counts).
local function eta_at_rate(opens_at, rate, position, now)
  return math.ceil((math.max(0, opens_at - now) + position * UNIT / rate) / 1000)
end
