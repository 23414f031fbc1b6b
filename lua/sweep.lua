-- One explicit step of the sweep (enter and poll run the same steps as they go; this is for
-- operator tooling and tests). ARGV: about how many spots to scan.
-- Returns {dropped, pass finished (1/0)}.
local r = load_room()
if not r then return {0, 1} end
local dropped, finished = sweep_step(r, clock(r), tonumber(ARGV[1]) or 500)
return {dropped, finished and 1 or 0}
