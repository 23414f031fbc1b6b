-- needs: _revocations
-- A bounded purge of lapsed entries, resumed at the cursor kept in the room's field
-- `cursor_field`: old revocations never pile up, whatever their number.
local function purge_revocations(cursor_field, now, count)
  if redis.call('EXISTS', RVK) == 0 then return end
  local page = redis.call('HSCAN', RVK, redis.call('HGET', ROOM, cursor_field) or '0',
    'COUNT', count)
  local items = page[2]
  for i = 1, #items, 2 do
    if lapsed(items[i + 1], now) then redis.call('HDEL', RVK, items[i]) end
  end
  redis.call('HSET', ROOM, cursor_field, page[1])
end
