-- One explicit step of the sweep (the ticker, enter and poll run the same steps as they go;
-- this is for operator tooling and tests).
-- needs: _room, _sweep
-- KEYS: room spots line active rvk bks blk waits used
-- ARGV: about how many spots to scan.
-- Reply: {dropped, pass finished (1/0)}.
local room = load_room()
if not room then return {0, 1} end
local dropped, finished = sweep_step(room, clock(room), tonumber(ARGV[1]) or 500)
return {dropped, finished and 1 or 0}
