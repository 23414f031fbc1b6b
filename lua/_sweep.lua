-- needs: _base, _room, _spot, _purge, _due, _expiry, _record, _waits, _use
-- The sweep: abandoned waiting spots and admissions past their grace minute are dropped anywhere
-- in the line, not only where the drain reaches. A pass starts at most once a minute per room
-- and walks SPOTS with HSCAN, a bounded step per call, so the room's ticker, enter and poll
-- carry it along; being inside the room's script, it needs no lock between workers.
local SWEEP_STEP = 100


-- One step of the sweep (about `count` spots); returns spots dropped, pass finished.
local function sweep_step(room, now, count)
  local cursor = room.sweep_cursor
  if not sweep_due(cursor, room.sweep_started, now) then return 0, true end -- the common case
  if cursor == '0' then -- a new pass
    room.sweep_started = now
    purge_revocations(@sweepPurgeCursor, now, count)
  end
  local page = redis.call('HSCAN', SPOTS, cursor, 'COUNT', count)
  local items, dropped = page[2], 0
  for i = 2, #items, 2 do
    -- state and `seen` without building the whole record: most are alive
    local @SPOT~(items[i]){state = state, seen = seen, ...}
    if (state == 'w' and abandoned(tonumber(seen), room.abandon_after, now)) or state == 'a' then
      local spot = parse_spot(items[i])
      if state == 'w' or admission_gone(spot.expires, now) then
        if state == 'w' then book_abandoned(spot, now) else book_ran_out(items[i - 1], spot) end
        drop_spot(items[i - 1], spot)
        dropped = dropped + 1
      end
    end
  end
  room.sweep_cursor = page[1]
  redis.call('HSET', ROOM, @sweepStartedAt, fmt(room.sweep_started), @sweepCursor,
    room.sweep_cursor)
  if dropped > 0 then redis.call('HINCRBY', ROOM, @abandoned, dropped) end
  return dropped, room.sweep_cursor == '0'
end
