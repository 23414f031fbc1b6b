-- A draw's order key, the same pure function as anteroom.sdk.draw.order_key (its docstring says
-- why HMAC-SHA-1: redis.sha1hex is the one hash Redis Lua has natively):
-- HMAC-SHA-1(key = the seed's 32 bytes, message = beacon .. ':' .. entrant id), lowercase hex.
-- Seed and beacon are lowercase hex; the beacon is '' when the room names none.

-- Each lowercase hex pair's byte: gsub with a table runs no Lua function per pair.
local DRAW_BYTE = {}
for b = 0, 255 do DRAW_BYTE[string.format('%02x', b)] = string.char(b) end

-- What every key of a draw shares, once per draw: HMAC's inner pad with the beacon and ':'
-- after it, and the outer pad. The key is zero-padded to SHA-1's 64-byte block (a 32-byte seed
-- never needs hashing down first).
local function draw_keying(seed, beacon)
  local key = seed:gsub('..', DRAW_BYTE)
  local inner, outer = {}, {}
  for i = 1, 64 do
    local b = key:byte(i) or 0
    inner[i] = string.char(bit.bxor(b, 0x36))
    outer[i] = string.char(bit.bxor(b, 0x5c))
  end
  return {table.concat(inner) .. beacon .. ':', table.concat(outer)}
end

local function draw_order_key(keying, entrant)
  local inner = redis.sha1hex(keying[1] .. entrant)
  return redis.sha1hex(keying[2] .. inner:gsub('..', DRAW_BYTE))
end
