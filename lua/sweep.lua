-- Bounded sweep of abandoned waiting spots and long-expired admissions anywhere in the line.
-- A pass starts at most once a minute per room; each call scans about ARGV[1] records.
-- Returns {dropped, pass finished (1/0)}.
local count = tonumber(ARGV[1]) or 500
local r = load_room()
if not r then return {0, 1} end
local now = clock(r)
local state = redis.call('HMGET', ROOM, 'swt', 'swc')
local started, cursor = tonumber(state[1]) or 0, state[2] or '0'
if cursor == '0' then
  if now - started < 60000 then return {0, 1} end
  redis.call('HSET', ROOM, 'swt', fmt(now))
  local rv = redis.call('HGETALL', RVK)
  for i = 1, #rv, 2 do
    if tonumber(rv[i + 1]) < now then redis.call('HDEL', RVK, rv[i]) end
  end
end
local res = redis.call('HSCAN', SPOTS, cursor, 'COUNT', count)
local dropped = 0
local items = res[2]
for i = 1, #items, 2 do
  local vid = items[i]
  local s = get_spot(vid)
  if s and ((s.st == 'w' and s.seen + r.aban * 1000 <= now)
      or (s.st == 'a' and now > s.exp + 60000)) then
    drop_spot(vid, s)
    dropped = dropped + 1
  end
end
redis.call('HSET', ROOM, 'swc', res[1])
return {dropped, res[1] == '0' and 1 or 0}
