-- needs: _base
-- The line's shape: live spots of LINE counted per block of order keys (hash BLOCKS, field =
-- block_of(order key) -> count), kept current by every script that adds to
-- or takes from LINE. A process reads it in one HGETALL (queue/line/room_snapshot.py) and tells a far
-- spot its place from the blocks ahead of its own, without asking Redis per poll. Pool blocks
-- ('p') sort before ticket blocks ('t'); within each, by number. Rooms count from their creation
-- or their last close (the room's field `blkz`): older lines are not counted.
local BLOCKS = BLK -- every script carrying this piece declares `blk` in its KEYS line
-- line_blocks.py's and room_draw.py's constants, written in by the assembler (lua_scripts.py)
local POST_OPEN_KEY = $POST_OPEN_KEY -- 2^52
local DRAWN_SPAN = $DRAWN_SPAN -- 2^51: the draw's keys fill [-2^51, 0); invitees' are below
local TICKET_BLOCK = $TICKET_BLOCK -- tickets per block after opening
local POOL_BLOCK = $POOL_BLOCK -- 2^40: 2^16 lottery numbers (of 2^28) per pool block
local function block_of(order_key)
  local key = tonumber(order_key)
  if key >= POST_OPEN_KEY then return 't' .. math.floor((key - POST_OPEN_KEY) / TICKET_BLOCK) end
  return 'p' .. math.floor(key / POOL_BLOCK)
end

-- An emptied pool block keeps its field at 0 (readers skip it): a drain through a small,
-- sparse pool touches a block per spot, and one write each is what it can afford; there are at
-- most 4,096. An emptied ticket block is removed (one HDEL per 1,000 tickets drained), so the
-- snapshot reads the live line's blocks, not every block the room ever had; a close clears all.
local function count_block(block, by)
  if redis.call('HINCRBY', BLOCKS, block, by) == 0 and block:byte(1) == 116 then -- 't'
    redis.call('HDEL', BLOCKS, block)
  end
end

-- Order keys (a list) leaving (-1) or joining (+1) the line, booked a block at a time.
local function count_keys(keys, by)
  local changes = {}
  for i = 1, #keys do
    local block = block_of(keys[i])
    changes[block] = (changes[block] or 0) + by
  end
  for block, change in pairs(changes) do count_block(block, change) end
end
