-- A draw's order key, the same pure function as anteroom.sdk.draw.order_key (its docstring says
-- why HMAC-SHA-1: redis.sha1hex is the one hash Redis Lua has natively):
-- HMAC-SHA-1(key = the seed's 32 bytes, message = beacon .. ':' .. entrant id), lowercase hex.
-- Seed and beacon are lowercase hex; the beacon is '' when the room names none.

local function draw_bytes(hex)
  return (hex:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
end

-- HMAC's inner and outer key pads, once per draw: the key is zero-padded to SHA-1's 64-byte
-- block (a 32-byte seed never needs hashing down first).
local function draw_pads(seed)
  local key = draw_bytes(seed)
  local inner, outer = {}, {}
  for i = 1, 64 do
    local b = key:byte(i) or 0
    inner[i] = string.char(bit.bxor(b, 0x36))
    outer[i] = string.char(bit.bxor(b, 0x5c))
  end
  return table.concat(inner), table.concat(outer)
end

local function draw_order_key(pads, beacon, entrant)
  local inner = redis.sha1hex(pads[1] .. beacon .. ':' .. entrant)
  return redis.sha1hex(pads[2] .. draw_bytes(inner))
end
