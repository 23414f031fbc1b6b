-- The order keys of a draw for the given entrant ids, in the ids' order: lua/_draw.lua as the
-- shuffle will run it, for the tests that hold it to anteroom.sdk.draw.order_key and for
-- bench/draw.py. A pure function: it touches no key.
-- needs: _draw
-- KEYS:
-- ARGV: seed (64 lowercase hex), beacon value (lowercase hex, '' for none), entrant ids...
-- Reply: one order key (40 lowercase hex) per entrant id.
local keying = draw_keying(ARGV[1], ARGV[2])
local keys = {}
for i = 3, #ARGV do
  keys[i - 2] = draw_order_key(keying, ARGV[i])
end
return keys
