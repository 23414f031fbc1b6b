-- Release the layout upgrade's lock (store/layout_version.py), only if it is still ours: one
-- that expired and was taken by another instance is left to it.
-- Not a room operation (lua_scripts.STANDALONE): its one key is passed as is.
-- KEYS[1]: the lock (KeySpace.layout_lock).
-- ARGV: the token the lock was taken with.
-- Reply: 1 when released, 0 when the lock was not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
