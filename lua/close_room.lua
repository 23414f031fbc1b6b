-- Close a room: every live spot expires, counters reset (not the life counters nent, nfull,
-- nleft, nswept nor the wait histogram), back to idle. A new generation
-- makes every queue token of the old one answer TicketGone.
local r = load_room()
if not r then return err('RoomNotFound') end
for _, b in ipairs(redis.call('SMEMBERS', BKS)) do redis.call('UNLINK', bucket(b)) end
redis.call('UNLINK', SPOTS, ACTIVE, ADM, BKS, LINE)
redis.call('HSET', ROOM, 'st', 'idle', 'gen', r.gen + 1, 'tk', 0, 'dealt', 0, 'bank', 0,
  'last', 0, 'oa', 0, 'peak', 0, 'seed', '', 'swc', '0', 'rel', '0', 'cvk', '')
return {'OK'}
