-- Delete a room and every key it owns (held buckets included).
-- needs: _bucket, _blocks
-- KEYS: room spots line active adm rvk bks waits blk drawn inv pqz fo used invs invo park mail mailq
-- ARGV: none. Reply: the number of keys deleted.
for _, score in ipairs(redis.call('SMEMBERS', BKS)) do redis.call('UNLINK', bucket(score)) end
return redis.call('UNLINK', ROOM, SPOTS, ACTIVE, ADM, BKS, RVK, LINE, WAITS, BLOCKS, DRAWN,
  INV, PQZ, FO, USED, INVS, INVO, PARK, MAIL, MAILQ)
