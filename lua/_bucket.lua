-- needs: _base
-- Held spots of one score wait in `b:<score>` (scores listed in BKS). Those keys are derived
-- from the room key's base "<prefix>r:{<id>}:" rather than declared one by one, so they share
-- its hash tag and slot.
local BASE = string.sub(ROOM, 1, -5) -- ROOM is "<base>room"
local function bucket(score) return BASE .. 'b:' .. score end
