-- Delete a room and every key it owns.
for _, b in ipairs(redis.call('SMEMBERS', BKS)) do redis.call('UNLINK', bucket(b)) end
return redis.call('UNLINK', ROOM, SPOTS, ACTIVE, ADM, BKS, RVK, LINE, WAITS)
