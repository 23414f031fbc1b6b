-- Shared by every room script. Units: times in epoch milliseconds of the room's clock (Redis
-- TIME plus the room's offset); the admission bank in "rate-milliseconds": one admission is
-- UNIT = 60000 units and one ms at a rate of R a minute earns R units, so it stays in integers.
-- Every key a script touches is declared in its KEYS header line.
-- (Each helper below is created again on every call of a script that includes it: pieces stay
-- small so that a script carries only the helpers it calls.)
local UNIT = 60000

local function fmt(n) return string.format('%.0f', n) end
local function err(code, retry) return {'ERR', code, retry or 0} end
